package stitch

import (
	"cmp"
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
	e.idleRuns(collect(&indexed))
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
// run makes. The arena starts with many equal holes, more than maxRoomScan.
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
				e.roomAtLeast(r, func(span) { rooms++ })
				indexed, walked := arenaRuns(e, r)
				require.Equal(t, walked, indexed, "step %d, runs of %d bytes", step, r)
				found += len(walked)
				if e.room.bySize.ceilNode(span{end: r}) != nil && rooms == maxRoomScan {
					bounded++
				}
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
