package cuda_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/stitch"
)

// The stitching engine on real device memory: every outcome moves real bytes to the right place.

func newEngine(t *testing.T, opts ...stitch.Option) (*stitch.Engine, testDevice) {
	t.Helper()
	d := newTestDevice(t)
	e, err := stitch.New(d, opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, e.Check())
		assert.NoError(t, e.Close())
	})
	return e, d
}

func outcomes(e *stitch.Engine) stitch.OutcomeCounts { return e.Stats().Outcomes }

// alloc allocates and checks the outcome it was served by.
func alloc(t *testing.T, e *stitch.Engine, size uint64, want stitch.Outcome) uintptr {
	t.Helper()
	before := outcomes(e)
	p, err := e.Alloc(size, 0)
	require.NoError(t, err)
	after := outcomes(e)
	assert.Equal(t, before.Of(want)+1, after.Of(want), "alloc %d served by %v", size, want)
	require.NoError(t, e.Check())
	return p
}

func free(t *testing.T, e *stitch.Engine, p uintptr, size uint64) {
	t.Helper()
	require.NoError(t, e.Free(p, size))
	require.NoError(t, e.Check())
}

// Two freed blocks separated by a live one are stitched into one contiguous block: bytes written
// through the stitched block read back through the blocks' own (arena) ranges, and the reverse.
func TestGPUEngineOutcomes(t *testing.T) {
	// Exact growth: each of the first requests makes its own memory (no bytes ahead of the job's
	// setup), so that each is served by the outcome named.
	e, d := newEngine(t, stitch.WithExactGrowth())
	g := e.Granularity()
	n := 4 * g

	a := alloc(t, e, n, stitch.OutcomeNewChunks)
	b := alloc(t, e, n, stitch.OutcomeNewChunks)
	c := alloc(t, e, n, stitch.OutcomeNewChunks)
	_ = alloc(t, e, n, stitch.OutcomeNewChunks)

	// Exact: a freed block comes back for the same size, at the same address, with its bytes.
	data := pattern(10, int(n))
	require.NoError(t, d.CopyToDevice(b, data))
	free(t, e, b, n)
	b2 := alloc(t, e, n, stitch.OutcomeExact)
	assert.Equal(t, b, b2)
	sameBytes(t, data, readBack(t, d, b2, int(n)), "exact reuse")

	// Split: a smaller request carves a freed block.
	free(t, e, b2, n)
	half := alloc(t, e, n/2, stitch.OutcomeSplit)
	assert.True(t, half >= b && half < b+uintptr(n), "carved from the freed block")
	free(t, e, half, n/2)
	b3 := alloc(t, e, n, stitch.OutcomeSplit) // the loose block, whole again
	assert.Equal(t, b, b3)

	// Stitch: a and c are free but not adjacent (b3 lies between).
	pa, pc := pattern(11, int(n)), pattern(12, int(n))
	require.NoError(t, d.CopyToDevice(a, pa))
	require.NoError(t, d.CopyToDevice(c, pc))
	free(t, e, a, n)
	free(t, e, c, n)
	calls := e.Stats().DriverCalls
	s := alloc(t, e, 2*n, stitch.OutcomeStitch)
	after := e.Stats().DriverCalls
	assert.Equal(t, calls.Create, after.Create, "stitching creates no memory")
	assert.Equal(t, calls.SetAccess+1, after.SetAccess, "one access call per stitch")

	got := readBack(t, d, s, int(2*n))
	first, second := a, c
	switch {
	case string(got[:n]) == string(pa) && string(got[n:]) == string(pc):
	case string(got[:n]) == string(pc) && string(got[n:]) == string(pa):
		first, second = c, a
	default:
		t.Fatal("the stitched block does not show the two freed blocks' bytes")
	}
	back := pattern(13, int(2*n))
	require.NoError(t, d.CopyToDevice(s, back))
	sameBytes(t, back[:n], readBack(t, d, first, int(n)), "first piece through its arena range")
	sameBytes(t, back[n:], readBack(t, d, second, int(n)), "second piece through its arena range")

	free(t, e, s, 2*n)
	s2 := alloc(t, e, 2*n, stitch.OutcomeExact)
	assert.Equal(t, s, s2, "the stitched block is cached whole")
	free(t, e, s2, 2*n)
}

// Requests below the small threshold share pages; each keeps its own bytes.
func TestGPUEngineSmallBlocks(t *testing.T) {
	e, d := newEngine(t)
	sizes := []uint64{512, 1000, 4096, 100_000, 700_000}
	ptrs := make([]uintptr, len(sizes))
	for i, sz := range sizes {
		p, err := e.Alloc(sz, 0)
		require.NoError(t, err)
		ptrs[i] = p
		require.NoError(t, d.CopyToDevice(p, pattern(uint64(20+i), int(sz))))
	}
	require.NoError(t, e.Check())
	for i, sz := range sizes {
		sameBytes(t, pattern(uint64(20+i), int(sz)), readBack(t, d, ptrs[i], int(sz)), "small block")
		require.NoError(t, e.Free(ptrs[i], sz))
	}
}

// With a capacity below the card's, the engine runs out where the capacity says, with an error
// that says why, and stays consistent; the card's own limit gives the driver's out-of-memory.
func TestGPUEngineOutOfMemory(t *testing.T) {
	t.Run("capacity", func(t *testing.T) {
		const g uint64 = 2 << 20
		e, _ := newEngine(t, stitch.WithCapacity(8*g))
		p1 := alloc(t, e, 4*g, stitch.OutcomeNewChunks)
		p2 := alloc(t, e, 4*g, stitch.OutcomeNewChunks)
		_, err := e.Alloc(2*g, 0)
		require.ErrorIs(t, err, stitch.ErrOutOfMemory)
		var oom *stitch.OutOfMemoryError
		require.True(t, errors.As(err, &oom))
		assert.Equal(t, 2*g, oom.Requested)
		assert.Equal(t, 8*g, oom.Capacity)
		require.NoError(t, e.Check())
		free(t, e, p1, 4*g)
		p3 := alloc(t, e, 2*g, stitch.OutcomeSplit)
		free(t, e, p3, 2*g)
		free(t, e, p2, 4*g)
	})
	t.Run("device", func(t *testing.T) {
		// Another engine on the same device holds some memory, so the device has less free than
		// this engine's capacity (its total): asking for nearly all of it reaches the driver's own
		// out-of-memory.
		e, d := newEngine(t)
		g := e.Granularity()
		other, err := stitch.New(d)
		require.NoError(t, err)
		defer func() { assert.NoError(t, other.Close()) }()
		held, err := other.Alloc(16*g, 0)
		require.NoError(t, err)
		defer func() { assert.NoError(t, other.Free(held, 16*g)) }()

		_, total, err := d.MemInfo()
		require.NoError(t, err)
		_, err = e.Alloc(total-8*g, 0)
		require.ErrorIs(t, err, stitch.ErrOutOfMemory)
		var oom *stitch.OutOfMemoryError
		require.True(t, errors.As(err, &oom))
		assert.Error(t, oom.Err, "the driver's refusal is kept: %v", err)
		require.NoError(t, e.Check())
		p := alloc(t, e, g, stitch.OutcomeNewChunks) // still works after the refusal
		free(t, e, p, g)
	})
}

func TestGPUEngineBadFrees(t *testing.T) {
	e, _ := newEngine(t)
	g := e.Granularity()
	p := alloc(t, e, g, stitch.OutcomeNewChunks)
	tests := []struct {
		name string
		ptr  uintptr
		size uint64
		want error
	}{
		{"unknown pointer", p + 4096, g, stitch.ErrUnknownPointer},
		{"wrong size", p, 2 * g, stitch.ErrSizeMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.ErrorIs(t, e.Free(tt.ptr, tt.size), tt.want)
			assert.NoError(t, e.Check())
		})
	}
	_, err := e.Alloc(0, 0)
	assert.ErrorIs(t, err, stitch.ErrInvalidSize)
	free(t, e, p, g)
	assert.ErrorIs(t, e.Free(p, g), stitch.ErrDoubleFree)
	assert.NoError(t, e.Check())
}

// EmptyCache gives physical memory back to the device.
func TestGPUEngineEmptyCache(t *testing.T) {
	e, d := newEngine(t)
	g := e.Granularity()
	before, _, err := d.MemInfo()
	require.NoError(t, err)
	ptrs := []uintptr{alloc(t, e, 64*g, stitch.OutcomeNewChunks), alloc(t, e, 64*g, stitch.OutcomeNewChunks)}
	during, _, err := d.MemInfo()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, before-during, 128*g, "device memory taken")
	for _, p := range ptrs {
		free(t, e, p, 64*g)
	}
	require.NoError(t, e.EmptyCache())
	require.NoError(t, e.Check())
	assert.Zero(t, e.Stats().ReservedBytes)
	after, _, err := d.MemInfo()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, after+8*g, before, "device memory given back")
}

// A random workload under a tight capacity (so stitching is forced) with every live block holding
// its own byte value: any two live blocks sharing a physical byte would show up as a wrong value.
func TestGPUEngineRandomDataIntegrity(t *testing.T) {
	const g uint64 = 2 << 20 // both drivers' granularity in these tests
	e, d := newEngine(t, stitch.WithCapacity(96*g))
	require.Equal(t, uint64(g), e.Granularity())
	seed := uint64(rand.Int64())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	type live struct {
		ptr  uintptr
		size uint64
		fill byte
	}
	var blocks []live
	steps := 600
	if testing.Short() {
		steps = 150
	}
	verify := func(b live) {
		got := readBack(t, d, b.ptr, int(b.size))
		if bytes.Count(got, []byte{b.fill}) == len(got) { // bytes.Count: fast, also under -race
			return
		}
		for i, v := range got {
			if v != b.fill {
				t.Fatalf("seed %d: block %#x (%d bytes) byte %d is %#x, want %#x", seed, b.ptr, b.size, i, v, b.fill)
			}
		}
	}
	for step := range steps {
		if len(blocks) > 0 && (r.IntN(2) == 0 || len(blocks) > 40) {
			i := r.IntN(len(blocks))
			verify(blocks[i])
			require.NoError(t, e.Free(blocks[i].ptr, blocks[i].size))
			blocks = append(blocks[:i], blocks[i+1:]...)
			continue
		}
		size := uint64(r.IntN(int(12*g))) + 1
		p, err := e.Alloc(size, 0)
		if errors.Is(err, stitch.ErrOutOfMemory) {
			continue
		}
		require.NoError(t, err, "seed %d step %d", seed, step)
		b := live{p, size, byte(step%251 + 1)}
		require.NoError(t, d.MemsetAsync(p, b.fill, size, 0))
		blocks = append(blocks, b)
		if step%50 == 0 {
			require.NoError(t, e.Check(), "seed %d step %d", seed, step)
		}
	}
	require.NoError(t, d.Synchronize())
	for _, b := range blocks {
		verify(b)
		require.NoError(t, e.Free(b.ptr, b.size))
	}
	st := e.Stats()
	t.Logf("outcomes %v, driver calls %v", st.Outcomes, st.DriverCalls)
	assert.NotZero(t, st.Outcomes.Stitch, "the workload exercised stitching")
}
