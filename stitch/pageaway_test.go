package stitch

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRememberedSpansKept: the places pages keep away from, kept between calls, are what a fresh
// computation gives, through random iterations of large and small requests, marked (the memos
// change at each mark) and unmarked (the contexts change at each large request), with a view
// budget small enough that views are released on the way.
func TestRememberedSpansKept(t *testing.T) {
	const mib = 1 << 20
	for _, marked := range []bool{false, true} {
		e, err := New(&nullDriver{}, WithCapacity(64*mib), WithStitchBudget(2, 0))
		require.NoError(t, err)
		rng := rand.New(rand.NewPCG(1, 9))
		type held struct {
			ptr  uintptr
			size uint64
		}
		var live []held
		released, compared := 0, 0
		for iter := range 60 {
			if marked {
				e.MarkIteration()
			}
			for range 40 {
				if len(live) > 0 && rng.IntN(100) < 45 {
					i := rng.IntN(len(live))
					require.NoError(t, e.Free(live[i].ptr, live[i].size))
					live = slices.Delete(live, i, i+1)
				} else {
					size := uint64(1+rng.IntN(9))*mib + uint64(rng.IntN(4))*mib/4
					if rng.IntN(3) == 0 {
						size = uint64(1+rng.IntN(64)) * 4096
					}
					views := len(e.views)
					if ptr, err := e.Alloc(size, 0); err == nil {
						live = append(live, held{ptr, size})
					}
					if len(e.views) < views {
						released++
					}
				}
				kept := slices.Clone(e.rememberedSpans())
				e.forgetAway()
				require.Equal(t, e.rememberedSpans(), kept, "marked=%v, iteration %d", marked, iter)
				compared++
			}
		}
		require.NoError(t, e.Check())
		require.Positive(t, released, "marked=%v: no view was released", marked)
		require.NoError(t, e.Close())
	}
}

// TestPageAtRecarvedPlaceLeavesPointerIndex: a page taken where a cached primitive block begins
// (the small pool's page at a memo's place, a home) is that block re-cut (recarve), which keeps its
// pointer-index entry; addPage takes the page out of the index (a page is never handed out: a free
// of its address must not find it, and Close must not flush it as a cached block).
func TestPageAtRecarvedPlaceLeavesPointerIndex(t *testing.T) {
	const mib = 1 << 20
	e, err := New(&bookDriver{}, WithCapacity(16*mib))
	require.NoError(t, err)
	keep, err := e.Alloc(2*mib, 0)
	require.NoError(t, err)
	b, err := e.Alloc(6*mib, 0)
	require.NoError(t, err)
	require.NoError(t, e.Free(b, 6*mib)) // cached, a primitive block
	cached := e.blocks.At(uint64(b))
	require.NotNil(t, cached)
	require.Equal(t, primitive, cached.kind)

	pb := e.takeHome(home{off: cached.pos}, e.pageSize)
	require.Equal(t, b, pb.ptr, "the page is the cached block re-cut")
	e.addPage(pb)
	assert.Nil(t, e.blocks.At(uint64(pb.ptr)), "a page is not in the pointer index")
	require.NoError(t, e.Check())
	require.ErrorIs(t, e.Free(b, 6*mib), ErrUnknownPointer)
	require.NoError(t, e.Free(keep, 2*mib))
	require.NoError(t, e.Close())
}

// TestPageAwayGrowth: unmarked, once large requests' places are remembered by context, a new page
// goes outside them; with no free bytes there, pageGrowth pages are grown at once and every one
// joins the small pool (spare pages left loose would be taken by large requests, and the next page
// would grow again).
func TestPageAwayGrowth(t *testing.T) {
	const mib = 1 << 20
	e, err := New(&bookDriver{}, WithCapacity(256*mib))
	require.NoError(t, err)
	var a, b uintptr
	for range 3 {
		a, err = e.Alloc(8*mib, 0)
		require.NoError(t, err)
		b, err = e.Alloc(4*mib, 0)
		require.NoError(t, err)
		require.NoError(t, e.Free(a, 8*mib))
		require.NoError(t, e.Free(b, 4*mib))
	}
	taken := e.rememberedSpans()
	require.NotEmpty(t, taken, "the contexts' places are remembered")
	s, err := e.Alloc(4096, 0)
	require.NoError(t, err)
	assert.Equal(t, pageGrowth, e.Stats().SmallPages, "the growth's pages all joined the small pool")
	for _, p := range e.pages {
		require.Equal(t, primitive, p.blk.kind)
		start, end := p.blk.pos, p.blk.pos+p.blk.size
		for _, sp := range taken {
			assert.False(t, start < sp.end && sp.start < end, "page %#x-%#x in a remembered place %#x-%#x", start, end, sp.start, sp.end)
		}
	}
	require.NoError(t, e.Free(s, 4096))
	require.NoError(t, e.Check())
	require.NoError(t, e.Close())
}
