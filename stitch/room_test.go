package stitch

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// arenaRuns lists the idle runs of at least r bytes that the arena holds, as findIdle sees them
// (through the room index) and as a walk over every block gives them.
func arenaRuns(e *Engine, r uint64) (indexed, walked []span) {
	collect := func(out *[]span) *runTracker {
		return &runTracker{r: r, found: func(start, end uint64, _ []idleSeg) {
			*out = append(*out, span{start: start, end: end})
		}}
	}
	e.idleRuns(collect(&indexed))
	e.idleRunsIn(collect(&walked), roomAll)
	slices.SortFunc(indexed, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	return indexed, walked
}

// TestRoomIndex checks, through random allocations and frees of large blocks (primitive and
// stitched), that the room index stays what Check expects and that the idle runs found through
// it are exactly those a walk over every block finds.
func TestRoomIndex(t *testing.T) {
	const mib = 1 << 20
	e, err := New(&nullDriver{}, WithCapacity(512*mib))
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(7, 11))
	type held struct {
		ptr  uintptr
		size uint64
	}
	var live []held
	found := 0
	for step := range 3000 {
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
		if step%10 == 0 {
			require.NoError(t, e.Check(), "step %d", step)
			for _, r := range []uint64{2 * mib, 5 * mib, 16 * mib, 64 * mib} {
				indexed, walked := arenaRuns(e, r)
				require.Equal(t, walked, indexed, "step %d, runs of %d bytes", step, r)
				found += len(walked)
			}
		}
	}
	require.Positive(t, found, "no idle run was ever there to find")
	require.Positive(t, e.Stats().Outcomes.Stitch, "no stitched block was made")
}
