package stitch

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// arenaRuns lists the idle runs of at least r bytes that findIdle sees through the room index, and
// those a walk over every block finds in the maxRoomScan smallest room spans of at least r bytes
// (all of them, when there are no more rooms than that).
func arenaRuns(e *Engine, r uint64) (indexed, walked []span) {
	collect := func(out *[]span) *runTracker {
		return &runTracker{r: r, found: func(start, end uint64, _ []idleSeg) {
			*out = append(*out, span{start: start, end: end})
		}}
	}
	e.idleRuns(collect(&indexed), noBound)
	var all []span
	e.idleRunsIn(collect(&all), roomAll)
	var rooms []span
	e.room.byAddr.walk(func(s span) bool {
		if s.size() >= r {
			rooms = append(rooms, s)
		}
		return true
	})
	slices.SortFunc(rooms, func(a, b span) int { return cmp.Or(cmp.Compare(a.size(), b.size()), cmp.Compare(a.start, b.start)) })
	rooms = rooms[:min(len(rooms), maxRoomScan)]
	for _, run := range all {
		if slices.ContainsFunc(rooms, func(s span) bool { return s.start <= run.start && run.end <= s.end }) {
			walked = append(walked, run)
		}
	}
	slices.SortFunc(indexed, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	return indexed, walked
}

// walkedIdle is the best idle window of r bytes in the arena over every idle run, found by a walk
// over every block: what findIdle's search of the arena gives when it looks at every room.
func walkedIdle(e *Engine, r uint64) (best idleWindow, found bool) {
	e.idleRunsIn(&runTracker{r: r, found: func(start, end uint64, segs []idleSeg) {
		for _, pos := range [2]uint64{start, end - r} {
			w := idleWindow{off: pos, cost: windowCost(segs, pos, pos+r), run: end - start, addr: pos}
			if !found || w.better(best) {
				best, found = w, true
			}
		}
	}}, roomAll)
	return best, found
}

// checkArenaIdle checks findIdle's search of the arena (arenaIdle), which passes over the rooms
// whose bounds show no better window: with no more rooms of at least r bytes than it looks at, it
// finds the window a walk over every block finds; with more, a window at least as good as the best
// of the maxRoomScan smallest rooms and no better than the walk's.
func checkArenaIdle(t *testing.T, e *Engine, r uint64, at string) {
	got, ok := e.arenaIdle(r, true)
	scanned, scannedOK := e.arenaIdle(r, false)
	walked, walkedOK := walkedIdle(e, r)
	rooms := 0
	e.room.bySize.walk(func(s span) bool {
		if s.size() >= r {
			rooms++
		}
		return true
	})
	if rooms <= maxRoomScan {
		require.Equal(t, walkedOK, ok, "%s: a window of %d bytes", at, r)
		require.Equal(t, walked, got, "%s: the window of %d bytes", at, r)
		return
	}
	require.Equal(t, scannedOK || walkedOK, ok, "%s: a window of %d bytes", at, r)
	require.False(t, scanned.better(got), "%s: %+v, but the smallest rooms hold %+v", at, got, scanned)
	require.False(t, got.better(walked), "%s: %+v is better than the best window %+v", at, got, walked)
}

// walkedPlan is the stitch plan over every idle run of the arena, found by a walk over every block:
// what idlePlan must give.
func walkedPlan(e *Engine, r uint64) ([]span, uint64) {
	var runs []span
	e.idleRunsIn(&runTracker{r: 1, found: func(start, end uint64, _ []idleSeg) {
		runs = append(runs, span{start: start, end: end})
	}}, roomAll)
	return e.planFrom(r, func(fn func(span)) {
		for _, s := range runs {
			fn(s)
		}
	})
}

// TestRoomIndex checks, through random allocations and frees of large blocks (primitive and
// stitched), that the room index stays what Check expects, that the idle runs findIdle finds
// through it are exactly those a walk over every block finds in the rooms it looks at, and that
// idlePlan, which stops once the largest rooms make a plan, makes the plan a walk over every idle
// run makes, and that findIdle's search of the arena, which passes over rooms by their bounds,
// finds the window a walk finds (checkArenaIdle). The arena starts with many equal holes, more
// than maxRoomScan.
func TestRoomIndex(t *testing.T) {
	const mib = 1 << 20
	e, err := New(&nullDriver{}, WithCapacity(2048*mib), WithWarmupGrowth(1400*mib))
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(7, 11))
	type held struct {
		ptr  uintptr
		size uint64
	}
	var live []held
	for range 700 {
		ptr, err := e.Alloc(2*mib, 0)
		require.NoError(t, err)
		live = append(live, held{ptr, 2 * mib})
	}
	for i := len(live) - 1; i >= 0; i -= 2 {
		require.NoError(t, e.Free(live[i].ptr, live[i].size))
		live = slices.Delete(live, i, i+1)
	}
	found, bounded, plans := 0, 0, 0
	for step := range 3000 {
		if step%10 == 0 {
			require.NoError(t, e.Check(), "step %d", step)
			for _, r := range []uint64{2 * mib, 5 * mib, 16 * mib, 64 * mib} {
				var rooms int
				e.roomAtLeast(r, noBound, func(span) { rooms++ })
				indexed, walked := arenaRuns(e, r)
				require.Equal(t, walked, indexed, "step %d, runs of %d bytes", step, r)
				found += len(walked)
				if e.room.bySize.ceilNode(span{end: r}) != nil && rooms == maxRoomScan {
					bounded++
				}
			}
			for _, r := range []uint64{mib + 512, 2 * mib, 3 * mib, 5 * mib} {
				checkArenaIdle(t, e, r, fmt.Sprintf("step %d", step))
			}
			for _, r := range []uint64{3 * mib, 9 * mib, 40 * mib, 200 * mib} {
				want, wantReach := walkedPlan(e, r)
				got, reach := e.idlePlan(r)
				require.Equal(t, want, got, "step %d, plan of %d bytes", step, r)
				if want != nil {
					require.Equal(t, wantReach, reach, "step %d, plan of %d bytes", step, r)
					plans++
				}
			}
		}
		if len(live) > 0 && rng.IntN(100) < 45 {
			i := rng.IntN(len(live))
			require.NoError(t, e.Free(live[i].ptr, live[i].size))
			live = slices.Delete(live, i, i+1)
		} else {
			size := uint64(1+rng.IntN(12)) * mib
			if ptr, err := e.Alloc(size, 0); err == nil {
				live = append(live, held{ptr, size})
			}
		}
	}
	require.Positive(t, found, "no idle run was ever there to find")
	require.Positive(t, bounded, "no search ever had more rooms than it looks at")
	require.Positive(t, plans, "no idle plan was ever made")
	require.Positive(t, e.Stats().Outcomes.Stitch, "no stitched block was made")
}

// TestRoomBoundOfNewBlock: a block made over a cached stitched block's piece in one room, and
// cached again before the room index next syncs, is smaller than the block the room's bound
// counted; the sync lowers the bound to it (roomCached), and findIdle's search of the arena then
// still finds the window a walk finds.
func TestRoomBoundOfNewBlock(t *testing.T) {
	const mib = 1 << 20
	e, err := New(&nullDriver{}, WithCapacity(14*mib), WithWarmupGrowth(14*mib))
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	// live 2 | p1 4 | live 2 | p2 4 | live 2: the arena full.
	var ptrs []uintptr
	for _, size := range []uint64{2 * mib, 4 * mib, 2 * mib, 4 * mib, 2 * mib} {
		p, err := e.Alloc(size, 0)
		require.NoError(t, err)
		ptrs = append(ptrs, p)
	}
	require.NoError(t, e.Free(ptrs[1], 4*mib))
	require.NoError(t, e.Free(ptrs[3], 4*mib))
	// At capacity, 8 MiB is a view over the two cached holes; cached, it owns one piece in each.
	before := e.Stats().Outcomes.Stitch
	x, err := e.Alloc(8*mib, 0)
	require.NoError(t, err)
	require.Equal(t, before+1, e.Stats().Outcomes.Stitch, "8 MiB was not stitched over the holes")
	e.syncRoom() // the index takes the live block's pieces out
	require.NoError(t, e.Free(x, 8*mib))
	e.syncRoom() // and gives them back: the rooms of the two pieces count the 8 MiB block
	// 4 MiB goes where p1 or p2 was, a new block over the whole piece there; cached again at once.
	w, err := e.Alloc(4*mib, 0)
	require.NoError(t, err)
	require.Contains(t, []uintptr{ptrs[1], ptrs[3]}, w, "4 MiB did not go back where a hole was")
	require.NoError(t, e.Free(w, 4*mib))
	require.NoError(t, e.Check())
	e.syncRoom()
	require.NoError(t, e.Check())
	checkArenaIdle(t, e, 3*mib, "after the sync")
}

// TestRoomBoundTies: a room whose bound equals the cost of the best window found so far may still
// hold a better window (as cheap, in a run as tight, at a lower address): findIdle looks into it.
func TestRoomBoundTies(t *testing.T) {
	const mib = 1 << 20
	e, err := New(&nullDriver{}, WithCapacity(16*mib), WithWarmupGrowth(16*mib), WithHandleSize(2*mib))
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	// live | c1 | gap | live | c2 | live ..., every block 2 MiB: the arena full.
	var ptrs []uintptr
	for range 8 {
		p, err := e.Alloc(2*mib, 0)
		require.NoError(t, err)
		ptrs = append(ptrs, p)
	}
	require.NoError(t, e.Free(ptrs[2], 2*mib))
	require.NoError(t, e.EmptyCache()) // its chunk is released: a room of 4 MiB once c1 is cached
	require.NoError(t, e.Free(ptrs[1], 2*mib))
	require.NoError(t, e.Free(ptrs[4], 2*mib))
	e.syncRoom()
	// Both windows of 1 MiB flush a 2 MiB block in a run of 2 MiB; c1's room is the larger, so it is
	// looked at last, and its window lies lower.
	got, ok := e.arenaIdle(mib, true)
	require.True(t, ok)
	require.Equal(t, uint64(ptrs[1]-e.arenaBase), got.addr, "the lower of two windows as good")
	checkArenaIdle(t, e, mib, "two rooms")
}

// TestRoomBoundZeroNoteGoesWithChange: a room noted as bounded by 0 (its loose bytes since taken)
// that merges with its neighbours on a vacate is a new room with a bound worked out afresh, above
// 0; new loose bytes there must lower it again, so the note must not survive the merge.
func TestRoomBoundZeroNoteGoesWithChange(t *testing.T) {
	const mib = 1 << 20
	e, err := New(&nullDriver{}, WithCapacity(256*mib))
	require.NoError(t, err)
	ptr, err := e.Alloc(64*mib, 0)
	require.NoError(t, err)
	require.NoError(t, e.Free(ptr, 64*mib))
	e.flush(e.blocks.At(uint64(ptr))) // its bytes loose, their handles kept
	e.syncRoom()
	bounds := func() error {
		var c checker
		e.checkRoomBounds(&c)
		return errors.Join(c.errs...)
	}
	// A live block's bytes at [16, 32) MiB out of the room index, and no loose bytes from 32 on.
	require.True(t, e.loose.take(16*mib, 64*mib))
	require.True(t, e.room.take(16*mib, 32*mib))
	require.True(t, e.loose.take(0, 16*mib))
	// Loose bytes come and go in the room below: it is noted as bounded by 0.
	e.loose.insert(span{start: 0, end: mib})
	require.True(t, e.loose.take(0, mib))
	// The block's bytes come back to the room index: one room, with no loose bytes and no blocks.
	e.room.insert(span{start: 16 * mib, end: 32 * mib})
	require.NoError(t, bounds())
	// New loose bytes in it lower its bound to 0.
	e.loose.insert(span{start: 40 * mib, end: 41 * mib})
	require.NoError(t, bounds())
}
