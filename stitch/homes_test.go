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
		if h := hs[i].at; !hs[i].dead && (h.v == nil || !h.v.gone) {
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
				if h.dead || h.at.v != nil && h.at.v.gone || !h.passOver(h.witness.size) {
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
		e.rememberHome(&block{kind: primitive, pos: off, size: size})
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
		l := e.homes[size]
		var got []home
		for i, x := range l.entries {
			if x.dead {
				continue
			}
			require.GreaterOrEqual(t, i, l.first, "step %d: a live entry before first", step)
			require.Equal(t, i, l.index[x.at], "step %d: index of %v", step, x.at)
			got = append(got, x.at)
		}
		require.Equal(t, want, got, "step %d", step)
		require.Len(t, l.index, len(want))
		require.Equal(t, len(want), l.live)
		require.LessOrEqual(t, len(l.entries), 2*l.live+17, "step %d: dead entries pile up", step)
	}
}
