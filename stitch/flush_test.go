package stitch

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFlushUntilHighestFirst checks flushUntil's order in the large pool: cached blocks leave
// highest address first, whatever the order of their frees, and only until a free range of the
// size asked for forms, so that the lowest blocks, which free lists hand out first, stay cached.
func TestFlushUntilHighestFirst(t *testing.T) {
	const block = 2 << 20
	for seed := range uint64(8) {
		e, err := New(&bookDriver{}, WithCapacity(64<<20))
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
		require.True(t, ptrs[15]-ptrs[13] == uintptr(2*block), "the three highest blocks are adjacent")

		assert.True(t, e.flushUntil(&e.largeAge, 3*block), "seed %d: three adjacent blocks make the range", seed)
		var cached []uintptr
		for b := e.largeAge.oldest; b != nil; b = b.newer {
			cached = append(cached, b.ptr)
		}
		slices.Sort(cached)
		assert.Equal(t, ptrs[:13], cached, "seed %d: the three highest blocks went, no other", seed)
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

// TestSmallMissFlushesThePool: a small request that no free range of a page holds flushes every
// cached small block, not only until one range holds it, and is then carved by best fit from the
// coalesced pool, with no new page and no driver call. Flushing highest first until the request
// fits would keep the two low blocks cached here.
func TestSmallMissFlushesThePool(t *testing.T) {
	const kib = 1 << 10
	e, err := New(&bookDriver{}, WithCapacity(64<<20))
	require.NoError(t, err)
	require.Equal(t, uint64(2<<20), e.pageSize)
	ptrs := make([]uintptr, 16) // 16 x 128 KiB fill one page
	for i := range ptrs {
		ptrs[i], err = e.Alloc(128*kib, 0)
		require.NoError(t, err)
	}
	require.Equal(t, 1, e.Stats().SmallPages)
	slices.Sort(ptrs)
	for _, i := range []int{2, 8, 14, 15} {
		require.NoError(t, e.Free(ptrs[i], 128*kib))
	}
	require.Equal(t, 4, e.Stats().CachedBlocks)
	calls := e.Stats().DriverCalls

	p, err := e.Alloc(200*kib, 0)
	require.NoError(t, err)
	assert.Equal(t, ptrs[14], p, "the only free range that holds it: blocks 14 and 15 coalesced")
	assert.Zero(t, e.Stats().CachedBlocks, "every cached small block flushed")
	assert.Equal(t, 1, e.Stats().SmallPages, "no page added")
	assert.Equal(t, calls, e.Stats().DriverCalls, "no driver call")
	require.NoError(t, e.Check())
	require.NoError(t, e.Close())
}
