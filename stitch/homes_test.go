package stitch

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// findHomeByWalk is findHome with every home walked: what passing over homes by their witnesses
// must not change.
func (e *Engine) findHomeByWalk(r uint64) (home, bool) {
	var best home
	bestCost := ^uint64(0)
	found := false
	var hs []homeEntry
	if l := e.homes[r]; l != nil {
		hs = l.entries
	}
	for i := len(hs) - 1; i >= 0 && bestCost > 0; i-- {
		if h := hs[i].at; h.v == nil || !h.v.gone {
			if cost, ok, _ := e.homeCost(h, r, bestCost); ok && cost < bestCost {
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
			if l := e.homes[r]; l != nil {
				hs = l.entries
			}
			for _, h := range hs {
				if h.at.v != nil && h.at.v.gone || !h.passOver(h.witness.size) {
					continue
				}
				skipped++
				cost, ok, _ := e.homeCost(h.at, r, ^uint64(0))
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
