package stitch

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// walkedStitchPlan is the stitch plan over every loose range, found by a walk over them: what
// stitchPlan must give.
func walkedStitchPlan(e *Engine, r uint64) ([]span, uint64) {
	return e.planFrom(r, func(fn func(span)) {
		e.loose.byAddr.walk(func(s span) bool { fn(s); return true })
	})
}

// TestStitchIndex checks, through random allocations and frees of sizes that leave heads, tails
// and whole handles in the loose ranges (8 MiB handles over 2 MiB chunks, and one-chunk ones), and
// releases that leave holes, that the stitch index stays what Check expects, that it tells what a
// plan over every loose range reaches, and that stitchPlan, which walks the loose ranges only until
// they reach the request, makes the plan a walk over all of them makes; and that EmptyCache, which
// looks for handles to release only in the loose ranges that hold whole ones, leaves none.
func TestStitchIndex(t *testing.T) {
	t.Run("8MiB-handles", func(t *testing.T) { testStitchIndex(t, WithHandleSize(8<<20)) })
	t.Run("2MiB-handles", func(t *testing.T) { testStitchIndex(t, WithHandleSize(2<<20)) })
}

func testStitchIndex(t *testing.T, handles Option) {
	const mib = 1 << 20
	e, err := New(&nullDriver{}, WithCapacity(768*mib), handles)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(3, 5))
	type held struct {
		ptr  uintptr
		size uint64
	}
	var live []held
	plans, failed, released := 0, 0, 0
	for step := range 4000 {
		switch n := rng.IntN(100); {
		case n < 2:
			before := e.Stats().DriverCalls
			require.NoError(t, e.EmptyCache())
			if e.Stats().DriverCalls.Of(CallRelease) > before.Of(CallRelease) {
				released++
			}
			for _, pa := range e.allocs { // EmptyCache looked only where the index said
				require.False(t, e.releasable(pa), "step %d: a handle at chunk %d left to release", step, pa.first)
			}
		case n < 47 && len(live) > 0:
			i := rng.IntN(len(live))
			require.NoError(t, e.Free(live[i].ptr, live[i].size))
			live = slices.Delete(live, i, i+1)
		default:
			size := uint64(1+rng.IntN(24)) * mib / 2
			if ptr, err := e.Alloc(size, 0); err == nil {
				live = append(live, held{ptr, size})
			}
		}
		if step%10 != 0 {
			continue
		}
		require.NoError(t, e.Check(), "step %d", step)
		_, all := walkedStitchPlan(e, math.MaxUint64)
		require.Equal(t, all, e.stitchReach(), "step %d: reach of every loose range", step)
		for _, r := range []uint64{3 * mib, 10 * mib, 33 * mib, 120 * mib} {
			want, wantReach := walkedStitchPlan(e, r)
			got, reach := e.stitchPlan(r)
			require.Equal(t, want, got, "step %d, plan of %d bytes", step, r)
			require.Equal(t, wantReach, reach, "step %d, plan of %d bytes", step, r)
			if want != nil {
				plans++
			} else {
				failed++
			}
		}
	}
	require.Positive(t, plans, "no stitch plan was ever made")
	require.Positive(t, failed, "no stitch plan ever fell short")
	require.Positive(t, released, "no handle was ever released")
}

// TestStitchPlanOneLargestCandidate: past one candidate the stitch index sums what a plan of
// several reaches (their middles, one head and another's tail), but the largest candidate alone,
// a plan of one piece, may reach further: a range across a handle boundary that uses its own head
// and tail. stitchPlan finds that plan as a walk over every loose range does, rather than taking
// the index's sum as the most any plan reaches.
func TestStitchPlanOneLargestCandidate(t *testing.T) {
	const mib = 1 << 20
	e, err := New(&nullDriver{}, WithCapacity(64*mib), WithHandleSize(2*mib), WithSmallThreshold(64<<10))
	require.NoError(t, err)
	sizes := []uint64{mib / 2, 3 * mib, mib / 2, 7 * mib / 2, mib / 2} // fills 8 MiB of 2 MiB handles
	ptrs := make([]uintptr, len(sizes))
	for i, s := range sizes {
		ptrs[i], err = e.Alloc(s, 0)
		require.NoError(t, err)
	}
	require.NoError(t, e.Free(ptrs[1], sizes[1])) // 3 MiB across a handle boundary: head and tail 1.5 MiB
	require.NoError(t, e.Free(ptrs[4], sizes[4])) // half a chunk before the arena's end: a head
	require.NoError(t, e.EmptyCache())
	require.NoError(t, e.Check())
	require.Less(t, e.stitchReach(), uint64(3*mib), "two candidates: a head and another's tail")
	want, wantReach := walkedStitchPlan(e, 3*mib)
	require.NotNil(t, want, "the 3 MiB range alone")
	got, reach := e.stitchPlan(3 * mib)
	require.Equal(t, want, got)
	require.Equal(t, wantReach, reach)
}
