package stitch

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFlushUntilHighestFirst checks flushUntil's order, in the small pool (its heap kept between
// flushes) and in the large one: cached blocks leave highest address first, whatever the order of
// their frees, and only until a free range of the size asked for forms, so that the lowest blocks,
// which free lists hand out first, stay cached.
func TestFlushUntilHighestFirst(t *testing.T) {
	const mib = 1 << 20
	for _, block := range []uint64{256 << 10, 2 * mib} { // small: two pages hold sixteen, no gap between
		for seed := range uint64(8) {
			e, err := New(&bookDriver{}, WithCapacity(64*mib))
			require.NoError(t, err)
			age := &e.largeAge
			if block < e.cfg.smallThreshold {
				age = &e.smallAge
			}
			ptrs := make([]uintptr, 16)
			for i := range ptrs {
				ptrs[i], err = e.Alloc(block, 0)
				require.NoError(t, err)
			}
			rand.New(rand.NewPCG(seed, 1)).Shuffle(len(ptrs), func(i, j int) { ptrs[i], ptrs[j] = ptrs[j], ptrs[i] })
			for _, p := range ptrs {
				require.NoError(t, e.Free(p, block))
			}
			slices.Sort(ptrs)
			require.True(t, ptrs[15]-ptrs[13] == uintptr(2*block), "the three highest blocks are adjacent")

			assert.True(t, e.flushUntil(age, 3*block), "seed %d: three adjacent blocks make the range", seed)
			var cached []uintptr
			for b := age.oldest; b != nil; b = b.newer {
				cached = append(cached, b.ptr)
			}
			slices.Sort(cached)
			assert.Equal(t, ptrs[:13], cached, "seed %d, %d bytes: the three highest blocks went, no other", seed, block)
			assert.NoError(t, e.Check())

			if age == &e.smallAge {
				assert.False(t, e.flushUntil(age, 4*mib), "seed %d: no free range of a small page reaches 4 MiB", seed)
				assert.Zero(t, age.n, "seed %d: every cached block flushed trying", seed)
				assert.NoError(t, e.Check())
			}
			require.NoError(t, e.Close())
		}
	}
}

// TestReservedIsStatsReserved checks that Reserved, the figure a replay samples after every
// request, is the ReservedBytes of Stats.
func TestReservedIsStatsReserved(t *testing.T) {
	e, err := New(&bookDriver{}, WithCapacity(64<<20))
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	assert.Zero(t, e.Reserved())
	_, err = e.Alloc(5<<20, 0)
	require.NoError(t, err)
	big, err := e.Alloc(20<<20, 0)
	require.NoError(t, err)
	assert.Positive(t, e.Reserved())
	assert.Equal(t, e.Stats().ReservedBytes, e.Reserved())
	require.NoError(t, e.Free(big, 20<<20))
	require.NoError(t, e.EmptyCache())
	assert.Less(t, e.Reserved(), e.Stats().PeakReservedBytes, "memory went back to the driver")
	assert.Equal(t, e.Stats().ReservedBytes, e.Reserved())
}

// TestFlushSmallHeapKept: the small pool's flush heap kept between flushes (stale entries and
// all) flushes the same blocks as one built afresh from the cached blocks at each flush: two
// engines given the same random small and large requests hand out the same addresses, one of them
// made to rebuild its heap before every request.
func TestFlushSmallHeapKept(t *testing.T) {
	const mib = 1 << 20
	kept, fresh := make([]*Engine, 1), make([]*Engine, 1)
	for _, es := range [][]*Engine{kept, fresh} {
		e, err := New(&bookDriver{}, WithCapacity(48*mib))
		require.NoError(t, err)
		es[0] = e
	}
	a, b := kept[0], fresh[0]
	rng := rand.New(rand.NewPCG(5, 8))
	type held struct {
		ptr  uintptr
		size uint64
	}
	var live []held
	reusedHeap := 0
	for step := range 30000 {
		b.smallHeapStale = true
		if !a.smallHeapStale && len(a.smallHeap) > 0 {
			reusedHeap++
		}
		if len(live) > 0 && rng.IntN(100) < 48 {
			i := rng.IntN(len(live))
			require.NoError(t, a.Free(live[i].ptr, live[i].size))
			require.NoError(t, b.Free(live[i].ptr, live[i].size))
			live = slices.Delete(live, i, i+1)
			continue
		}
		size := uint64(1+rng.IntN(200)) * 2048
		if rng.IntN(10) == 0 {
			size = uint64(1+rng.IntN(6)) * mib
		}
		pa, errA := a.Alloc(size, 0)
		pb, errB := b.Alloc(size, 0)
		require.Equal(t, errA == nil, errB == nil, "step %d", step)
		if errA != nil {
			continue
		}
		require.Equal(t, pb, pa, "step %d: %d bytes", step, size)
		live = append(live, held{pa, size})
	}
	require.NoError(t, a.Check())
	require.NoError(t, b.Check())
	require.Greater(t, reusedHeap, 1000, "the kept heap was hardly used")
	require.Positive(t, a.Stats().Outcomes.Split)
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())
}
