package stitch

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFlushUntilHighestFirst checks flushUntil's order: cached blocks leave highest address first,
// whatever the order of their frees, and only until a free range of the size asked for forms, so
// that the lowest blocks, which free lists hand out first, stay cached.
func TestFlushUntilHighestFirst(t *testing.T) {
	const mib, block = 1 << 20, 256 << 10 // small blocks; two pages hold sixteen, no gap between
	for seed := range uint64(8) {
		e, err := New(&bookDriver{}, WithCapacity(64*mib))
		require.NoError(t, err)
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
		require.True(t, ptrs[15]-ptrs[13] == 2*block, "the three highest blocks are adjacent in one page")

		assert.True(t, e.flushUntil(&e.smallAge, 3*block), "seed %d: three adjacent blocks make the range", seed)
		var cached []uintptr
		for b := e.smallAge.oldest; b != nil; b = b.newer {
			cached = append(cached, b.ptr)
		}
		slices.Sort(cached)
		assert.Equal(t, ptrs[:13], cached, "seed %d: the three highest blocks went, no other", seed)
		assert.NoError(t, e.Check())

		assert.False(t, e.flushUntil(&e.smallAge, 4*mib), "seed %d: no free range of a small page reaches 4 MiB", seed)
		assert.Zero(t, e.smallAge.n, "seed %d: every cached block flushed trying", seed)
		assert.NoError(t, e.Check())
		require.NoError(t, e.Close())
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
