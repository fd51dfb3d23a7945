package stitch

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// findHomeByWalk is findHome with every home walked: what passing over homes by their witnesses
// must not change.
func (e *Engine) findHomeByWalk(r uint64) (home, bool) {
	var best home
	bestCost := ^uint64(0)
	found := false
	var hs []homeEntry
	if l := e.homes.At(r); l != nil {
		hs = l.entries
	}
	for i := len(hs) - 1; i >= 0 && bestCost > 0; i-- {
		if h := hs[i].at; !hs[i].dead && (h.v == nil || !h.v.gone) {
			if cost, ok, _ := e.homeCost(h, r, bestCost, nil); ok && cost < bestCost {
				best, bestCost, found = h, cost, true
			}
		}
	}
	return best, found
}

// TestFindHomeByWitnesses: through random large allocations and frees (homes re-taken, blocks
// flushed and their structs recycled into blocks elsewhere, views released by a small budget),
// findHome chooses what a walk of every home chooses, a home passed over for a live witness is not
// free, and one passed over for a cached witness costs at least the witness's bytes.
func TestFindHomeByWitnesses(t *testing.T) {
	const mib = 1 << 20
	e, err := New(&nullDriver{}, WithCapacity(96*mib), WithStitchBudget(3, 0))
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	rng := rand.New(rand.NewPCG(3, 5))
	sizes := []uint64{2 * mib, 3 * mib, 5*mib + mib/2, 8 * mib, 13 * mib}
	type held struct {
		ptr  uintptr
		size uint64
	}
	var live []held
	compared, skipped := 0, 0
	for step := range 4000 {
		if len(live) > 0 && rng.IntN(100) < 48 {
			i := rng.IntN(len(live))
			require.NoError(t, e.Free(live[i].ptr, live[i].size))
			live = slices.Delete(live, i, i+1)
		} else {
			size := sizes[rng.IntN(len(sizes))]
			if ptr, err := e.Alloc(size, 0); err == nil {
				live = append(live, held{ptr, size})
			}
		}
		if step%7 != 0 {
			continue
		}
		for _, r := range sizes {
			var hs []homeEntry
			if l := e.homes.At(r); l != nil {
				hs = l.entries
			}
			for _, h := range hs {
				if h.dead || h.at.v != nil && h.at.v.gone || !h.passOver(h.witness.size) {
					continue
				}
				skipped++
				cost, ok, _ := e.homeCost(h.at, r, ^uint64(0), nil)
				if h.witness.live {
					require.False(t, ok, "step %d: a home of %d bytes passed over for a live witness is free", step, r)
				} else if ok {
					require.GreaterOrEqual(t, cost, h.witness.size, "step %d: a home of %d bytes costs less than its witness", step, r)
				}
			}
			want, wantOK := e.findHomeByWalk(r)
			got, gotOK := e.findHome(r)
			require.Equal(t, wantOK, gotOK, "step %d, %d bytes", step, r)
			require.Equal(t, want, got, "step %d, %d bytes", step, r)
			compared++
		}
	}
	require.NoError(t, e.Check())
	require.Positive(t, skipped, "no home was ever passed over")
	require.Positive(t, e.viewsReleased, "no view was released")
	require.Greater(t, compared, 1000)
}

// TestHomeListOrder: the live homes of a size are, in order, what a list that moves a home used
// again to its end and drops its first past maxHomes holds, and the index finds each of them.
func TestHomeListOrder(t *testing.T) {
	e, err := New(&nullDriver{}, WithCapacity(1<<30))
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	const size = 1 << 20
	rng := rand.New(rand.NewPCG(2, 4))
	var want []home
	for step := range 20000 {
		off := uint64(rng.IntN(3*maxHomes/2)) << 20
		if step%5 == 0 {
			off = uint64(rng.IntN(16)) << 20 // a few homes used again and again
		}
		e.rememberHome(&block{kind: primitive, pos: off, first: off, size: size})
		h := home{off: off}
		if i := slices.Index(want, h); i >= 0 {
			want = slices.Delete(want, i, i+1)
		} else if len(want) == maxHomes {
			want = want[1:]
		}
		want = append(want, h)
		if step%97 != 0 {
			continue
		}
		l := e.homes.At(size)
		var got []home
		for i, x := range l.entries {
			if x.dead {
				continue
			}
			require.GreaterOrEqual(t, i, l.first, "step %d: a live entry before first", step)
			j, ok := l.find(x.at)
			require.True(t, ok, "step %d: %v not indexed", step, x.at)
			require.Equal(t, i, j, "step %d: index of %v", step, x.at)
			got = append(got, x.at)
		}
		require.Equal(t, want, got, "step %d", step)
		require.Equal(t, len(want), l.indexed())
		require.Equal(t, len(want), l.live)
		require.LessOrEqual(t, len(l.entries), 2*l.live+17, "step %d: dead entries pile up", step)
	}
}

// TestTakeHomeRecarvesCachedBlock: a home of the arena that begins where a cached primitive block
// begins is that block re-cut (recarve), under the same pointer and struct, with a new serial:
// narrower, its rest given back to the loose set; wider, over the cached block after it too; and
// either way Check is clean with the block live and after it is freed.
func TestTakeHomeRecarvesCachedBlock(t *testing.T) {
	const mib = 1 << 20
	e, err := New(&nullDriver{}, WithCapacity(256*mib))
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	// take and cached are told the subtest's t, so that a failure ends the subtest, not its parent.
	take := func(t *testing.T, h home, r uint64) *block { return liveTaken(t, e, e.takeHome(h, r), r) }
	cached := func(t *testing.T, size uint64) *block {
		p, err := e.Alloc(size, 0)
		require.NoError(t, err)
		b := e.blocks.At(uint64(p))
		require.NoError(t, e.Free(p, size))
		return b
	}

	t.Run("narrower", func(t *testing.T) {
		a := cached(t, 24*mib)
		require.Equal(t, primitive, a.kind)
		pos, ptr, serial := a.pos, a.ptr, a.serial
		b := take(t, home{off: pos}, 10*mib)
		assert.Same(t, a, b, "the cached block's struct is re-cut")
		assert.Equal(t, ptr, b.ptr)
		assert.Greater(t, b.serial, serial, "a re-cut block is another block to the homes")
		assert.Equal(t, uint64(10*mib), b.size)
		assert.Same(t, b, e.owners.ownerAt(pos).b)
		assert.Nil(t, e.owners.ownerAt(pos+10*mib), "the rest is no block's")
		_, loose := e.loose.containing(pos+10*mib, pos+24*mib)
		assert.True(t, loose, "the rest is loose")
		require.NoError(t, e.Free(b.ptr, 10*mib))
		require.NoError(t, e.Check())
		require.NoError(t, e.EmptyCache())
	})

	t.Run("inside", func(t *testing.T) {
		// A home that begins inside the cached block: the block is re-cut there, under the home's
		// pointer, and its node of the owner index is keyed by the home's first byte.
		a := cached(t, 24*mib)
		pos, oldPtr := a.pos, a.ptr
		b := take(t, home{off: pos + 4*mib}, 10*mib)
		assert.Same(t, a, b, "the cached block's struct is re-cut")
		assert.Equal(t, pos+4*mib, b.pos)
		assert.Equal(t, e.addressOf(home{off: pos + 4*mib}), b.ptr)
		assert.Nil(t, e.blocks.At(uint64(oldPtr)), "the old pointer names no block")
		assert.Same(t, b, e.owners.ownerAt(pos+4*mib).b)
		assert.Nil(t, e.owners.ownerAt(pos), "the bytes before the home are no block's")
		_, loose := e.loose.containing(pos, pos+4*mib)
		assert.True(t, loose, "the bytes before the home are loose")
		_, loose = e.loose.containing(pos+14*mib, pos+24*mib)
		assert.True(t, loose, "the bytes after it are loose")
		require.ErrorIs(t, e.Free(oldPtr, 24*mib), ErrUnknownPointer, "the re-cut block's old pointer is no block's")
		// A block carved in the bytes before the home takes the key the re-cut block left.
		c := take(t, home{off: pos}, 4*mib)
		assert.Same(t, c, e.owners.ownerAt(pos).b)
		assert.Same(t, b, e.owners.ownerAt(pos+4*mib).b)
		require.NoError(t, e.Free(c.ptr, 4*mib))
		require.NoError(t, e.Free(b.ptr, 10*mib))
		require.NoError(t, e.Check())
		require.NoError(t, e.EmptyCache())
	})

	t.Run("loose", func(t *testing.T) {
		a := cached(t, 24*mib)
		pos := a.pos
		e.flushUntil(&e.largeAge, math.MaxUint64)
		_, loose := e.loose.containing(pos, pos+24*mib)
		require.True(t, loose, "the flushed block's bytes are loose")
		b := take(t, home{off: pos + 2*mib}, 10*mib)
		assert.Equal(t, pos+2*mib, b.pos, "carved where the home is")
		assert.Same(t, b, e.owners.ownerAt(pos+2*mib).b)
		assert.Nil(t, e.owners.ownerAt(pos+12*mib), "nothing else is carved")
		require.NoError(t, e.Free(b.ptr, 10*mib))
		require.NoError(t, e.Check())
		require.NoError(t, e.EmptyCache())
	})

	t.Run("wider", func(t *testing.T) {
		a1, a2 := adjacentBlocks(t, e, 8*mib)
		p1, p2 := a1.ptr, a2.ptr
		require.NoError(t, e.Free(p1, 8*mib))
		require.NoError(t, e.Free(p2, 8*mib))
		pos := a1.pos
		b := take(t, home{off: pos}, 12*mib)
		assert.Same(t, a1, b, "the first cached block's struct is re-cut")
		assert.Nil(t, e.blocks.At(uint64(p2)), "the block after it is flushed")
		assert.Same(t, b, e.owners.ownerAt(pos+10*mib).b, "the re-cut block owns the bytes of the one after it")
		_, loose := e.loose.containing(pos+12*mib, pos+16*mib)
		assert.True(t, loose, "the rest of the flushed block is loose")
		require.NoError(t, e.Free(b.ptr, 12*mib))
		require.NoError(t, e.Check())
	})
}

// TestPlaceUnderHandsTakeTheBlocks: the memo's place, when free, comes with the cached blocks
// lying there (placeUnder), each once, and a take told them (takeHomeOver) makes what a take that
// looks for them makes; a live block there makes the place not free.
func TestPlaceUnderHandsTakeTheBlocks(t *testing.T) {
	const mib = 1 << 20
	e, err := New(&nullDriver{}, WithCapacity(256*mib))
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	a1, a2 := adjacentBlocks(t, e, 8*mib)
	p1, p2 := a1.ptr, a2.ptr
	h := home{off: a1.pos}

	_, free := e.placeUnder(h, 12*mib)
	assert.False(t, free, "live blocks there")
	require.NoError(t, e.Free(p1, 8*mib))
	_, free = e.placeUnder(h, 12*mib)
	assert.False(t, free, "a live block in the place's last bytes")
	require.NoError(t, e.Free(p2, 8*mib))

	under, free := e.placeUnder(h, 12*mib)
	require.True(t, free)
	assert.Equal(t, []*block{a1, a2}, under, "each cached block at the place, once, in address order")
	b := liveTaken(t, e, e.takeHomeOver(h, 12*mib, under, true), 12*mib)
	assert.Nil(t, e.blocks.At(uint64(p2)), "the second block flushed")
	_, loose := e.loose.containing(a1.pos+12*mib, a1.pos+16*mib)
	assert.True(t, loose, "the rest of it loose")
	require.NoError(t, e.Free(b.ptr, 12*mib))

	e.flushUntil(&e.largeAge, math.MaxUint64)
	under, free = e.placeUnder(h, 12*mib)
	require.True(t, free)
	assert.Empty(t, under, "loose bytes only")
	liveTaken(t, e, e.takeHomeOver(h, 12*mib, under, true), 12*mib)
}

// liveTaken is what allocSlow does with the block b a take of r bytes made: b is registered and
// live, and Check is clean.
func liveTaken(t *testing.T, e *Engine, b *block, r uint64) *block {
	t.Helper()
	require.NotNil(t, b)
	b.stream = 0
	if !b.indexed {
		e.blocks.Put(uint64(b.ptr), b)
		b.indexed = true
	}
	e.markLive(b, r)
	require.NoError(t, e.Check())
	return b
}

// adjacentBlocks allocates two live blocks of size bytes that lie one after the other in the
// arena, and returns them in address order.
func adjacentBlocks(t *testing.T, e *Engine, size uint64) (*block, *block) {
	t.Helper()
	p1, err := e.Alloc(size, 0)
	require.NoError(t, err)
	p2, err := e.Alloc(size, 0)
	require.NoError(t, err)
	a1, a2 := e.blocks.At(uint64(p1)), e.blocks.At(uint64(p2))
	if a2.pos < a1.pos {
		a1, a2 = a2, a1
	}
	require.Equal(t, a1.pos+size, a2.pos, "two adjacent blocks")
	return a1, a2
}

// TestPlaceUnderListsStitchedBlockOnce: a cached stitched block whose two pieces both lie in a
// home of the arena is listed once among the blocks there, and the home's take flushes it once.
func TestPlaceUnderListsStitchedBlockOnce(t *testing.T) {
	const mib = 1 << 20
	e, err := New(&nullDriver{}, WithCapacity(24*mib))
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	var ps [3]uintptr
	for i := range ps {
		ps[i], err = e.Alloc(8*mib, 0)
		require.NoError(t, err)
	}
	pos := e.blocks.At(uint64(ps[0])).pos
	for i, p := range ps {
		require.Equal(t, pos+uint64(i)*8*mib, e.blocks.At(uint64(p)).pos, "three adjacent blocks")
	}
	require.NoError(t, e.Free(ps[0], 8*mib))
	require.NoError(t, e.Free(ps[2], 8*mib))
	e.flushUntil(&e.largeAge, math.MaxUint64)
	sp, err := e.Alloc(16*mib, 0)
	require.NoError(t, err)
	s := e.blocks.At(uint64(sp))
	require.Equal(t, stitched, s.kind, "the two loose ranges stitched")
	require.NoError(t, e.Free(sp, 16*mib))
	y := e.blocks.At(uint64(ps[1]))
	require.NoError(t, e.Free(ps[1], 8*mib))

	h := home{off: pos}
	under, free := e.placeUnder(h, 24*mib)
	require.True(t, free)
	assert.ElementsMatch(t, []*block{s, y}, under, "each cached block once")
	b := e.takeHomeOver(h, 24*mib, under, true)
	require.NotNil(t, b)
	liveTaken(t, e, b, 24*mib)
	require.NoError(t, e.Free(b.ptr, 24*mib))
	require.NoError(t, e.Check())
}

// TestHomesOnlyUnmarked: through random large allocations and frees, with iterations marked and
// without, a home of the request's size is proposed exactly when the stream is unmarked: marked,
// the memos place what repeats and a request they do not place goes to the best-fitting loose
// range (proposeHome's comment has the measurements). The marked run begins unmarked, so that
// homes kept then are there to be found once marks begin.
func TestHomesOnlyUnmarked(t *testing.T) {
	proposedOnlyUnmarked(t, nil, 3000, 600, homeSizes,
		func(e *Engine, r uint64) bool { _, ok := e.findHome(r); return ok },
		func(e *Engine, r uint64) bool { _, ok := e.proposeHome(r); return ok })
}

// TestNoLargeHomesKeptMarked: with iterations marked from the first request, no home of a large
// block is kept (rememberLargeHome): no request could take one.
func TestNoLargeHomesKeptMarked(t *testing.T) {
	e, err := New(&nullDriver{}, WithCapacity(96<<20))
	require.NoError(t, err)
	randomLargeRequests(t, e, 2000, homeSizes, func(step int) bool { return step%40 == 0 }, func(step int, r uint64) {
		_, found := e.findHome(r)
		require.False(t, found, "step %d: a home kept for %d bytes", step, r)
	})
	require.NoError(t, e.Check())
	require.NoError(t, e.Close())
}

// homeSizes draws a large request of one of five sizes.
func homeSizes(rng *rand.Rand) uint64 {
	sizes := []uint64{2 << 20, 3 << 20, 11 << 19, 8 << 20, 13 << 20}
	return sizes[rng.IntN(len(sizes))]
}

// proposedOnlyUnmarked runs steps random large allocations (sizes from size) and frees, marked
// every 40 steps from step markFrom on or never, on an engine made with opts (96 MiB of capacity
// by default), and checks before each allocation that propose proposes exactly when found finds a
// place and the stream is unmarked, and that found found one at some step (in the marked run, at
// a step after the first mark).
func proposedOnlyUnmarked(t *testing.T, opts []Option, steps, markFrom int, size func(*rand.Rand) uint64, found, propose func(*Engine, uint64) bool) {
	for _, marked := range []bool{false, true} {
		e, err := New(&nullDriver{}, append([]Option{WithCapacity(96 << 20)}, opts...)...)
		require.NoError(t, err)
		founds := 0
		mark := func(step int) bool { return marked && step >= markFrom && (step-markFrom)%40 == 0 }
		randomLargeRequests(t, e, steps, size, mark, func(step int, r uint64) {
			f := found(e, r)
			require.Equal(t, f && !e.marked(), propose(e, r), "step %d (marked %v): a place for %d bytes", step, e.marked(), r)
			if f && e.marked() == marked {
				founds++
			}
		})
		require.Positive(t, founds, "marked %v: no place was ever found", marked)
		require.NoError(t, e.Check())
		require.NoError(t, e.Close())
	}
}

// randomLargeRequests runs steps random large allocations (sizes from size) and frees on e, from
// a fixed seed: a step frees a live block with probability 0.48, else allocates after calling
// before with the request's size; a step for which mark reports true begins with MarkIteration.
func randomLargeRequests(t *testing.T, e *Engine, steps int, size func(*rand.Rand) uint64, mark func(step int) bool, before func(step int, r uint64)) {
	rng := rand.New(rand.NewPCG(7, 11))
	type held struct {
		ptr  uintptr
		size uint64
	}
	var live []held
	for step := range steps {
		if mark(step) {
			e.MarkIteration()
		}
		if len(live) > 0 && rng.IntN(100) < 48 {
			i := rng.IntN(len(live))
			require.NoError(t, e.Free(live[i].ptr, live[i].size))
			live = slices.Delete(live, i, i+1)
			continue
		}
		r := size(rng)
		before(step, r)
		if ptr, err := e.Alloc(r, 0); err == nil {
			live = append(live, held{ptr, r})
		}
	}
}
