package reliability

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/host"
	"github.com/gmlake/gmlake/memory"
	"github.com/gmlake/gmlake/stitch"
)

// TestBadInputEveryBlockKind extends the engine's own bad-input test (interior pointer, double free,
// wrong size on one primitive block) to every kind of block and every moment of its life: for a
// small block, a primitive block and a stitched block, each misuse of the core issue is refused with
// its typed error, is counted, changes nothing (driver calls, reserved bytes, live bytes) and leaves
// Check clean; the block can then be freed properly.
func TestBadInputEveryBlockKind(t *testing.T) {
	h, err := NewHarness(Config{Capacity: 64 * simG})
	require.NoError(t, err)
	// Another engine on the same driver: its addresses are real and distinct from this engine's.
	other, err := stitch.New(h.Tracker, stitch.WithCapacity(8*simG))
	require.NoError(t, err)
	foreignPtr, err := other.Alloc(simG, 0)
	require.NoError(t, err)
	foreign := Block{Ptr: foreignPtr, Size: simG}

	kinds := []struct {
		name string
		size uint64
	}{{"small", 3000}, {"primitive", simG + 4096}, {"stitched", 8 * simG}}
	for i, k := range kinds[:2] {
		require.NoError(t, h.Apply(Op{Kind: OpAlloc, ID: int64(i), Size: k.size}))
	}
	// Eight one-chunk holes between live blocks, then an eight-chunk request: stitched.
	for i := range int64(16) {
		require.NoError(t, h.Apply(Op{Kind: OpAlloc, ID: 100 + i, Size: simG}))
	}
	for i := int64(0); i < 16; i += 2 {
		require.NoError(t, h.Apply(Op{Kind: OpFree, ID: 100 + i}))
	}
	require.NoError(t, h.Apply(Op{Kind: OpAlloc, ID: 2, Size: kinds[2].size}))
	require.Equal(t, 1, h.Engine.Stats().StitchedBlocks, "the eight-chunk block is stitched")

	e := h.Engine
	blocks := make([]Block, len(kinds))
	for i, k := range kinds {
		b, _ := h.Live(int64(i))
		blocks[i] = b
		misuses := []struct {
			name string
			call func() error
			want error
		}{
			{"wrong size", func() error { return e.Free(b.Ptr, b.Size+1) }, stitch.ErrSizeMismatch},
			{"smaller size", func() error { return e.Free(b.Ptr, b.Size-1) }, stitch.ErrSizeMismatch},
			{"size zero", func() error { return e.Free(b.Ptr, 0) }, stitch.ErrSizeMismatch},
			{"interior pointer", func() error { return e.Free(b.Ptr+512, b.Size-512) }, stitch.ErrUnknownPointer},
			{"unaligned pointer", func() error { return e.Free(b.Ptr+1, b.Size) }, stitch.ErrUnknownPointer},
			{"one past the end", func() error { return e.Free(b.Ptr+uintptr(b.Size), b.Size) }, stitch.ErrUnknownPointer},
			{"nil pointer", func() error { return e.Free(0, b.Size) }, stitch.ErrUnknownPointer},
			{"another engine's block", func() error { return e.Free(foreign.Ptr, foreign.Size) }, stitch.ErrUnknownPointer},
		}
		t.Run(k.name, func(t *testing.T) {
			for _, m := range misuses {
				refused(t, h, m.name, m.call, m.want)
			}
			require.NoError(t, h.Apply(Op{Kind: OpFree, ID: int64(i)}), "the block survived every misuse")
			refused(t, h, "double free while cached", func() error { return e.Free(b.Ptr, b.Size) }, stitch.ErrDoubleFree)
			refused(t, h, "double free with a wrong size", func() error { return e.Free(b.Ptr, b.Size+1) }, stitch.ErrDoubleFree)
		})
	}
	require.NoError(t, h.Apply(Op{Kind: OpEmptyCache}))
	require.Zero(t, h.Engine.Stats().CachedBlocks, "EmptyCache flushed every cached block")
	for i, k := range kinds {
		b := blocks[i]
		refused(t, h, k.name+": double free after EmptyCache", func() error { return e.Free(b.Ptr, b.Size) }, stitch.ErrUnknownPointer)
	}
	require.NoError(t, other.Free(foreign.Ptr, foreign.Size), "the other engine's block was untouched")
	require.NoError(t, other.Close())
	require.NoError(t, h.Close())
	assert.NoError(t, h.Leaks())
}

// refused runs a misuse: it must fail with want, count as a rejected free, and change nothing.
func refused(t *testing.T, h *Harness, name string, call func() error, want error) {
	t.Helper()
	before, liveBefore := h.Engine.Stats(), h.Driver.Live()
	err := call()
	assert.ErrorIs(t, err, want, name)
	after := h.Engine.Stats()
	assert.Equal(t, before.RejectedFrees+1, after.RejectedFrees, "%s: counted", name)
	assert.Equal(t, before.DriverCalls, after.DriverCalls, "%s: no driver call", name)
	assert.Equal(t, before.LiveBytes, after.LiveBytes, "%s: live bytes", name)
	assert.Equal(t, before.ReservedBytes, after.ReservedBytes, "%s: reserved bytes", name)
	assert.Equal(t, liveBefore, h.Driver.Live(), "%s: driver objects", name)
	tally.ops.Add(1) // not Verify: a second engine shares the driver, so the accounting differs
	if !assert.NoError(t, h.Engine.Check(), "after %s", name) {
		tally.violations.Add(1)
	}
}

// TestBadInputMemoryGaps covers the misuses of memory.Allocator that its own tests leave out: a
// negative size to Free, a block of another allocator, the largest int64, Put of nil. Each is
// refused with its typed error and the allocator stays consistent.
func TestBadInputMemoryGaps(t *testing.T) {
	const g = 64 << 10
	newAllocator := func() *memory.Allocator {
		d, err := host.New(host.WithGranularity(g), host.WithCapacity(32*g))
		require.NoError(t, err)
		a, err := memory.NewAllocator(d)
		require.NoError(t, err)
		return a
	}
	a, b := newAllocator(), newAllocator()
	mine, err := a.Get(3 * g)
	require.NoError(t, err)
	theirs, err := b.Get(3 * g)
	require.NoError(t, err)

	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"free with a negative size", func() error { return a.Free(mine, -3*g) }, stitch.ErrInvalidSize},
		{"free of another allocator's block", func() error { return a.Free(theirs, 3*g) }, stitch.ErrUnknownPointer},
		{"get the largest int64", func() error { _, err := a.Get(math.MaxInt64); return err }, stitch.ErrTooLarge},
		{"get the smallest int64", func() error { _, err := a.Get(math.MinInt64); return err }, stitch.ErrInvalidSize},
		{"put of nil", func() error { a.Put(nil, 8); return a.LastPutError() }, stitch.ErrUnknownPointer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			assert.ErrorIs(t, err, tt.want)
			assert.False(t, errors.Is(err, stitch.ErrClosed))
			assert.NoError(t, a.Check())
		})
	}
	assert.Equal(t, uint64(3*g), a.Stats().LiveBytes, "nothing was freed")
	require.NoError(t, a.Free(mine, 3*g))
	require.NoError(t, b.Free(theirs, 3*g))
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())
}
