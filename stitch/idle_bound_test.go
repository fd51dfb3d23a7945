package stitch

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIdleReachBound checks, through random allocations and frees of large blocks over 8 MiB handles
// (so that runs end inside handles and heads and tails count), on one stream and on three whose
// events complete at random, that idleReachBound is never below what a plan over every idle run
// reaches (a walk over every block), and that idlePlan, which stops at the bound, makes the plan
// that walk makes for requests on both sides of the bound.
func TestIdleReachBound(t *testing.T) {
	for _, streams := range []int{1, 3} {
		t.Run(fmt.Sprintf("streams=%d", streams), func(t *testing.T) { testIdleReachBound(t, streams) })
	}
}

func testIdleReachBound(t *testing.T, streams int) {
	const mib = 1 << 20
	d := &gatedDriver{done: map[Event]bool{}}
	e, err := New(d, WithCapacity(160*mib), WithWarmupGrowth(64*mib), WithHandleSize(8*mib))
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(uint64(streams), 13))
	type held struct {
		ptr    uintptr
		size   uint64
		stream Stream
	}
	var live []held
	bounded, stopped, plans := 0, 0, 0
	for step := range 4000 {
		switch n := rng.IntN(100); {
		case n < 8:
			for ev := range d.events + 1 {
				if rng.IntN(2) == 0 {
					d.done[Event(ev)] = true
				}
			}
		case n < 50 && len(live) > 0:
			i := rng.IntN(len(live))
			require.NoError(t, e.Free(live[i].ptr, live[i].size))
			live = slices.Delete(live, i, i+1)
		default:
			size := uint64(1+rng.IntN(12))*mib - uint64(rng.IntN(4))*(mib/2)
			stream := Stream(rng.IntN(streams))
			if ptr, err := e.Alloc(size, stream); err == nil {
				live = append(live, held{ptr, size, stream})
			}
		}
		if step%4 != 0 || e.largeAge.n == 0 {
			continue
		}
		at := fmt.Sprintf("step %d", step)
		e.idlePlan(mib) // polls the streams as a slow path would, so that the walks below see the same blocks idle
		bound, ok := e.idleReachBound()
		if !ok {
			continue
		}
		bounded++
		_, all := walkedPlan(e, math.MaxUint64)
		require.GreaterOrEqual(t, bound, all, "%s: the bound is below what the idle runs reach", at)
		for _, r := range []uint64{all, all + 1, bound, bound + 1, bound + mib, 3 * mib, 20 * mib} {
			if r == 0 {
				continue
			}
			want, wantReach := walkedPlan(e, r)
			got, reach := e.idlePlan(r)
			require.Equal(t, want, got, "%s: plan of %d bytes", at, r)
			if want != nil {
				require.Equal(t, wantReach, reach, "%s: plan of %d bytes", at, r)
				plans++
			} else {
				require.GreaterOrEqual(t, reach, all, "%s: plan of %d bytes reaches less than the runs", at, r)
				if bound < r {
					stopped++
				}
			}
		}
		if step%40 == 0 {
			require.NoError(t, e.Check(), at)
		}
	}
	require.Positive(t, bounded, "the bound was never worked out")
	require.Positive(t, stopped, "the bound never stopped a search")
	require.Positive(t, plans, "no idle plan was ever made")
}
