package host

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/stitch"
)

const g = testGranularity

// mapped reserves a range of size bytes and maps region h into it whole, with access set.
func mapped(t *testing.T, d *Driver, h stitch.PhysHandle, size uint64) uintptr {
	t.Helper()
	addr, err := d.Reserve(size)
	require.NoError(t, err)
	require.NoError(t, d.Map(addr, size, h, 0))
	require.NoError(t, d.SetAccess(addr, size))
	return addr
}

// TestStitchedRangeSharesBytes builds what the engine builds: two primitive blocks, each a region
// mapped in its own range, and a stitched range mapping both regions back to back. Bytes written
// through either view must be read back through the other.
func TestStitchedRangeSharesBytes(t *testing.T) {
	for _, strict := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "strict"}[strict], func(t *testing.T) {
			var opts []Option
			if strict {
				opts = append(opts, WithStrictAccess())
			}
			d := newTestDriver(t, opts...)
			sizes := []uint64{2 * g, 3 * g}
			var handles []stitch.PhysHandle
			var prims []uintptr
			for _, s := range sizes {
				h, err := d.Create(s)
				require.NoError(t, err)
				handles = append(handles, h)
				prims = append(prims, mapped(t, d, h, s))
			}
			stitched, err := d.Reserve(sizes[0] + sizes[1])
			require.NoError(t, err)
			require.NoError(t, d.Map(stitched, sizes[0], handles[0], 0))
			require.NoError(t, d.Map(stitched+uintptr(sizes[0]), sizes[1], handles[1], 0))
			require.NoError(t, d.SetAccess(stitched, sizes[0]+sizes[1]))

			// stitched -> primitives
			fill(bytesAt(stitched, sizes[0]+sizes[1]), 3)
			whole := pattern(sizes[0]+sizes[1], 3)
			assert.Equal(t, whole[:sizes[0]], bytesAt(prims[0], sizes[0]))
			assert.Equal(t, whole[sizes[0]:], bytesAt(prims[1], sizes[1]))

			// primitives -> stitched
			fill(bytesAt(prims[0], sizes[0]), 101)
			fill(bytesAt(prims[1], sizes[1]), 57)
			got := bytesAt(stitched, sizes[0]+sizes[1])
			assert.Equal(t, pattern(sizes[0], 101), got[:sizes[0]])
			assert.Equal(t, pattern(sizes[1], 57), got[sizes[0]:])
		})
	}
}

// TestMapWithOffsets maps the granules of one region into another range in reverse order.
func TestMapWithOffsets(t *testing.T) {
	d := newTestDriver(t)
	const n = 4
	h, err := d.Create(n * g)
	require.NoError(t, err)
	straight := mapped(t, d, h, n*g)
	reversed, err := d.Reserve(n * g)
	require.NoError(t, err)
	for i := range uint64(n) {
		require.NoError(t, d.Map(reversed+uintptr(i*g), g, h, (n-1-i)*g))
	}
	require.NoError(t, d.SetAccess(reversed, n*g))
	for i := range uint64(n) {
		fill(bytesAt(straight+uintptr(i*g), g), byte(i+1))
	}
	for i := range uint64(n) {
		assert.Equal(t, pattern(g, byte(n-i)), bytesAt(reversed+uintptr(i*g), g), "granule %d", i)
	}
}

// TestUnmapKeepsReservation: after Unmap the addresses fault again but stay reserved, so the same
// range can be mapped to other memory.
func TestUnmapKeepsReservation(t *testing.T) {
	d := newTestDriver(t)
	a, err := d.Create(g)
	require.NoError(t, err)
	b, err := d.Create(g)
	require.NoError(t, err)
	addr, err := d.Reserve(g)
	require.NoError(t, err)
	assert.True(t, faults(addr, false), "a bare reservation must fault")

	require.NoError(t, d.Map(addr, g, a, 0))
	require.NoError(t, d.SetAccess(addr, g))
	fill(bytesAt(addr, g), 1)
	require.NoError(t, d.Unmap(addr, g))
	assert.True(t, faults(addr, true), "an unmapped range must fault")

	require.NoError(t, d.Map(addr, g, b, 0))
	require.NoError(t, d.SetAccess(addr, g))
	assert.Equal(t, make([]byte, g), bytesAt(addr, g), "fresh memory reads as zeros")
	require.NoError(t, d.Unmap(addr, g))
	require.NoError(t, d.Map(addr, g, a, 0))
	assert.Equal(t, pattern(g, 1), bytesAt(addr, g), "region a kept its bytes while unmapped")
}

func TestStrictAccessFaultsUntilSetAccess(t *testing.T) {
	d := newTestDriver(t, WithStrictAccess())
	h, err := d.Create(g)
	require.NoError(t, err)
	addr, err := d.Reserve(g)
	require.NoError(t, err)
	require.NoError(t, d.Map(addr, g, h, 0))
	assert.True(t, faults(addr, true))
	require.NoError(t, d.SetAccess(addr, g))
	assert.False(t, faults(addr, true))
}

func TestReservationsAreAligned(t *testing.T) {
	d, err := New(WithGranularity(2 << 20))
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	for range 4 {
		addr, err := d.Reserve(2 << 20)
		require.NoError(t, err)
		assert.Zero(t, addr%(2<<20), "%#x", addr)
	}
}

// TestReleaseReturnsMemory checks with fstat that released regions stop holding memory: a region
// in the middle of the file is punched out, one at its end shrinks the file.
func TestReleaseReturnsMemory(t *testing.T) {
	d := newTestDriver(t)
	var hs []stitch.PhysHandle
	for range 3 {
		h, err := d.Create(2 * g)
		require.NoError(t, err)
		addr := mapped(t, d, h, 2*g)
		fill(bytesAt(addr, 2*g), 9) // touch every page so the kernel backs it
		require.NoError(t, d.Unmap(addr, 2*g))
		require.NoError(t, d.Free(addr, 2*g))
		hs = append(hs, h)
	}
	size, allocated := fileUsage(t, d)
	require.Equal(t, uint64(6*g), size)
	require.GreaterOrEqual(t, allocated, uint64(6*g))

	require.NoError(t, d.Release(hs[1]))
	size, after := fileUsage(t, d)
	assert.Equal(t, uint64(6*g), size, "a hole in the middle keeps the file size")
	assert.Equal(t, allocated-2*g, after, "the punched region no longer holds memory")

	require.NoError(t, d.Release(hs[2]))
	size, after = fileUsage(t, d)
	assert.Equal(t, uint64(2*g), size, "releasing the tail shrinks the file past the hole too")
	assert.Equal(t, allocated-4*g, after)

	require.NoError(t, d.Release(hs[0]))
	size, after = fileUsage(t, d)
	assert.Zero(t, size)
	assert.Zero(t, after)
}

// TestCreateReusesHoles: a released region is handed out again (best fit) before the file grows.
func TestCreateReusesHoles(t *testing.T) {
	d := newTestDriver(t)
	create := func(size uint64) stitch.PhysHandle {
		h, err := d.Create(size)
		require.NoError(t, err)
		return h
	}
	var (
		_     = create(g)
		big   = create(4 * g)
		_     = create(g)
		small = create(2 * g)
		tail  = create(g)
		_     = create(g)
	)
	require.NoError(t, d.Release(big))
	require.NoError(t, d.Release(small))
	require.NoError(t, d.Release(tail)) // merges with small: a hole of 3g at offset 6g
	require.Equal(t, []span{{g, 4 * g}, {6 * g, 3 * g}}, d.file.holes)

	h := create(3 * g)
	assert.Equal(t, uint64(6*g), d.regions[h].offset, "best fit picks the 3g hole")
	h = create(g)
	assert.Equal(t, uint64(g), d.regions[h].offset)
	size, _ := fileUsage(t, d)
	assert.Equal(t, uint64(10*g), size, "the file did not grow")
	assert.Equal(t, uint64(7*g), d.file.inUse)
	assert.Equal(t, []span{{2 * g, 3 * g}}, d.file.holes)
}

func TestCapacity(t *testing.T) {
	d := newTestDriver(t, WithCapacity(4*g+123))
	free, total, err := d.MemInfo()
	require.NoError(t, err)
	assert.Equal(t, uint64(4*g), total, "capacity rounds down to the granularity")
	assert.Equal(t, uint64(4*g), free)

	h, err := d.Create(3 * g)
	require.NoError(t, err)
	_, err = d.Create(2 * g)
	require.ErrorIs(t, err, stitch.ErrOutOfMemory)
	assert.Contains(t, err.Error(), "in use")
	free, _, err = d.MemInfo()
	require.NoError(t, err)
	assert.Equal(t, uint64(g), free)

	require.NoError(t, d.Release(h))
	_, err = d.Create(4 * g)
	assert.NoError(t, err)
}

func TestDefaultCapacityIsWhatTheMachineHolds(t *testing.T) {
	d, err := New()
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	b, err := machineBacking()
	require.NoError(t, err)
	_, total, err := d.MemInfo()
	require.NoError(t, err)
	assert.Equal(t, b.total-b.total%DefaultGranularity, total)
	assert.Equal(t, uint64(DefaultGranularity), d.Granularity())
}

func TestEvents(t *testing.T) {
	d := newTestDriver(t)
	e1, err := d.RecordEvent(0)
	require.NoError(t, err)
	e2, err := d.RecordEvent(7)
	require.NoError(t, err)
	assert.NotEqual(t, e1, e2)
	done, err := d.EventDone(e1)
	require.NoError(t, err)
	assert.True(t, done, "host work is synchronous")
	require.NoError(t, d.DestroyEvent(e1))
	_, err = d.EventDone(e1)
	assert.ErrorIs(t, err, ErrUnknownEvent)
	assert.ErrorIs(t, d.DestroyEvent(e1), ErrUnknownEvent)
	assert.NoError(t, d.Synchronize())
}

// TestCloseReleasesEverything: Close unmaps every range, even mapped ones, and frees the memfd.
func TestCloseReleasesEverything(t *testing.T) {
	d := newTestDriver(t)
	h, err := d.Create(2 * g)
	require.NoError(t, err)
	fill(bytesAt(mapped(t, d, h, 2*g), 2*g), 1)
	name := memfdName(t, d)
	require.Equal(t, 1, mappingsOf(t, name))

	require.NoError(t, d.Close())
	assert.Zero(t, mappingsOf(t, name), "no mapping of the memfd survives Close")
	assert.ErrorIs(t, d.Close(), ErrClosed)
}

func TestNewRejectsBadOptions(t *testing.T) {
	for name, opts := range map[string][]Option{
		"zero granularity":         {WithGranularity(0)},
		"granularity not pow2":     {WithGranularity(3 * 64 << 10)},
		"granularity below a page": {WithGranularity(512)},
		"capacity below a granule": {WithGranularity(g), WithCapacity(g - 1)},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(opts...)
			assert.ErrorIs(t, err, ErrBadOption)
		})
	}
}

// TestBadCalls: every misuse returns its sentinel error and changes nothing (the valid calls made
// afterwards still succeed).
func TestBadCalls(t *testing.T) {
	d := newTestDriver(t)
	h, err := d.Create(2 * g)
	require.NoError(t, err)
	released, err := d.Create(g)
	require.NoError(t, err)
	require.NoError(t, d.Release(released))
	r, err := d.Reserve(4 * g)
	require.NoError(t, err)
	require.NoError(t, d.Map(r+g, g, h, g)) // range: [hole][h+g][hole][hole]

	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"create zero", func() error { _, err := d.Create(0); return err }, ErrInvalidSize},
		{"create unaligned", func() error { _, err := d.Create(g + 1); return err }, ErrInvalidSize},
		{"reserve zero", func() error { _, err := d.Reserve(0); return err }, ErrInvalidSize},
		{"reserve unaligned", func() error { _, err := d.Reserve(g / 2); return err }, ErrInvalidSize},
		{"release unknown", func() error { return d.Release(999) }, ErrUnknownHandle},
		{"release released", func() error { return d.Release(released) }, ErrUnknownHandle},
		{"release mapped", func() error { return d.Release(h) }, ErrStillMapped},
		{"map misaligned address", func() error { return d.Map(r+1, g, h, 0) }, ErrMisaligned},
		{"map misaligned offset", func() error { return d.Map(r, g, h, 1) }, ErrMisaligned},
		{"map unaligned size", func() error { return d.Map(r, g+1, h, 0) }, ErrInvalidSize},
		{"map outside ranges", func() error { return d.Map(r+8*g, g, h, 0) }, ErrUnknownRange},
		{"map below ranges", func() error { return d.Map(g, g, h, 0) }, ErrUnknownRange},
		{"map past range end", func() error { return d.Map(r+3*g, 2*g, h, 0) }, ErrOutOfBounds},
		{"map past region end", func() error { return d.Map(r+2*g, g, h, 2*g) }, ErrOutOfBounds},
		{"map unknown handle", func() error { return d.Map(r, g, 999, 0) }, ErrUnknownHandle},
		{"map released handle", func() error { return d.Map(r, g, released, 0) }, ErrUnknownHandle},
		{"map over a mapping", func() error { return d.Map(r+g, g, h, 0) }, ErrOverlap},
		{"map across a mapping", func() error { return d.Map(r, 2*g, h, 0) }, ErrOverlap},
		{"unmap nothing", func() error { return d.Unmap(r, g) }, ErrNotMapped},
		{"unmap half a mapping", func() error { return d.Unmap(r, g) }, ErrNotMapped},
		{"unmap outside", func() error { return d.Unmap(r+8*g, g) }, ErrUnknownRange},
		{"set access on a hole", func() error { return d.SetAccess(r, 2*g) }, ErrNotMapped},
		{"free mapped range", func() error { return d.Free(r, 4*g) }, ErrStillMapped},
		{"free wrong size", func() error { return d.Free(r, 2*g) }, ErrUnknownRange},
		{"free interior address", func() error { return d.Free(r+g, g) }, ErrUnknownRange},
		{"event unknown", func() error { _, err := d.EventDone(42); return err }, ErrUnknownEvent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.ErrorIs(t, tt.call(), tt.want)
		})
	}

	// Nothing changed: the mapping is intact and the normal sequence works.
	fill(bytesAt(r+g, g), 5)
	require.NoError(t, d.SetAccess(r+g, g))
	require.NoError(t, d.Unmap(r+g, g))
	require.NoError(t, d.Free(r, 4*g))
	require.NoError(t, d.Release(h))
}

// TestUnmapMustCoverWholeMappings: one Unmap may remove several mappings, but never part of one.
func TestUnmapMustCoverWholeMappings(t *testing.T) {
	d := newTestDriver(t)
	h, err := d.Create(4 * g)
	require.NoError(t, err)
	r, err := d.Reserve(4 * g)
	require.NoError(t, err)
	require.NoError(t, d.Map(r, 2*g, h, 0))
	require.NoError(t, d.Map(r+2*g, 2*g, h, 2*g))
	assert.ErrorIs(t, d.Unmap(r+g, 2*g), ErrNotMapped)
	assert.ErrorIs(t, d.Unmap(r, 3*g), ErrNotMapped)
	require.NoError(t, d.Unmap(r, 4*g))
	assert.Zero(t, d.regions[h].mappings)
	require.NoError(t, d.Release(h))
	require.NoError(t, d.Free(r, 4*g))
}

func TestCallsAfterClose(t *testing.T) {
	d := newTestDriver(t)
	h, err := d.Create(g)
	require.NoError(t, err)
	r, err := d.Reserve(g)
	require.NoError(t, err)
	require.NoError(t, d.Close())
	calls := map[string]func() error{
		"create":        func() error { _, err := d.Create(g); return err },
		"release":       func() error { return d.Release(h) },
		"reserve":       func() error { _, err := d.Reserve(g); return err },
		"free":          func() error { return d.Free(r, g) },
		"map":           func() error { return d.Map(r, g, h, 0) },
		"unmap":         func() error { return d.Unmap(r, g) },
		"set_access":    func() error { return d.SetAccess(r, g) },
		"record_event":  func() error { _, err := d.RecordEvent(0); return err },
		"event_done":    func() error { _, err := d.EventDone(1); return err },
		"destroy_event": func() error { return d.DestroyEvent(1) },
		"synchronize":   func() error { return d.Synchronize() },
		"mem_info":      func() error { _, _, err := d.MemInfo(); return err },
		"close":         func() error { return d.Close() },
	}
	for name, call := range calls {
		err := call()
		assert.True(t, errors.Is(err, ErrClosed), "%s: %v", name, err)
	}
}
