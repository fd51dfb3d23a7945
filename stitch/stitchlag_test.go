package stitch

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStitchIndexDroppedWhileUnread checks the lazy upkeep of the stitch index (stitchable.go):
// through random allocations and frees read only now and then, the index is dropped once the
// loose set has changed more often than it has ranges since the last read, holds nothing while
// dropped (Check, after every step), and a read rebuilds it to what a walk over the loose ranges
// gives, with the plans a walk makes.
func TestStitchIndexDroppedWhileUnread(t *testing.T) {
	const mib = 1 << 20
	e, err := New(&nullDriver{}, WithCapacity(768*mib), WithHandleSize(8*mib))
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	rng := rand.New(rand.NewPCG(7, 11))
	type held struct {
		ptr  uintptr
		size uint64
	}
	var live []held
	dropped, kept, dropsSeen := 0, 0, 0
	for step := range 3000 {
		wasStale := e.stitchable.stale
		if n := rng.IntN(100); n < 48 && len(live) > 0 {
			i := rng.IntN(len(live))
			require.NoError(t, e.Free(live[i].ptr, live[i].size))
			live = slices.Delete(live, i, i+1)
		} else {
			size := uint64(1+rng.IntN(24)) * mib / 2
			if ptr, err := e.Alloc(size, 0); err == nil {
				live = append(live, held{ptr, size})
			}
		}
		if !wasStale && e.stitchable.stale {
			dropsSeen++
		}
		require.NoError(t, e.Check(), "step %d", step)
		if step%50 != 0 {
			continue
		}
		if e.stitchable.stale {
			dropped++
		} else {
			kept++
		}
		_, all := walkedStitchPlan(e, math.MaxUint64)
		require.Equal(t, all, e.stitchReach(), "step %d: reach of every loose range", step)
		require.False(t, e.stitchable.stale, "step %d: a read leaves the index dropped", step)
		require.Zero(t, e.stitchable.lag, "step %d: a read does not restart the count", step)
		require.NoError(t, e.Check(), "step %d: the index rebuilt", step)
		for _, r := range []uint64{3 * mib, 10 * mib, 33 * mib, 120 * mib} {
			want, wantReach := walkedStitchPlan(e, r)
			got, reach := e.stitchPlan(r)
			require.Equal(t, want, got, "step %d, plan of %d bytes", step, r)
			require.Equal(t, wantReach, reach, "step %d, plan of %d bytes", step, r)
		}
	}
	require.Positive(t, dropped, "the index was never found dropped at a read")
	require.Positive(t, kept, "the index was never found kept at a read")
	require.Positive(t, dropsSeen, "no step dropped the index")
}
