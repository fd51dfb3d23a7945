package stitch

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLazySizeIndexAnswersAsEager drives a lazily and an eagerly kept free set through the same
// random inserts and takes, asks both for best fits and the largest span between changes now and
// then, and requires the same answers, the same watcher calls, and the lazy index dropped at some
// point (else the test proves nothing).
func TestLazySizeIndexAnswersAsEager(t *testing.T) {
	lazy, eager := newLazyFreeSet(), newFreeSet()
	var lazyCalls, eagerCalls []span
	lazy.bySize.watch = func(s span, added bool) {
		lazyCalls = append(lazyCalls, span{start: s.start, end: s.end, owner: boolBit(added)})
	}
	eager.bySize.watch = func(s span, added bool) {
		eagerCalls = append(eagerCalls, span{start: s.start, end: s.end, owner: boolBit(added)})
	}
	rng := rand.New(rand.NewPCG(3, 9))
	const slots = 512
	free := make([]bool, slots)
	dropped := false
	for step := range 20000 {
		i := rng.IntN(slots)
		n := 1 + rng.IntN(8)
		if i+n > slots {
			n = slots - i
		}
		s := span{start: uint64(i) * 512, end: uint64(i+n) * 512}
		all, none := true, true
		for k := i; k < i+n; k++ {
			all = all && free[k]
			none = none && !free[k]
		}
		switch {
		case none:
			require.Equal(t, eager.insert(s), lazy.insert(s), "step %d", step)
		case all:
			require.Equal(t, eager.take(s.start, s.end), lazy.take(s.start, s.end), "step %d", step)
		default:
			continue
		}
		for k := i; k < i+n; k++ {
			free[k] = none
		}
		dropped = dropped || lazy.sizeStale
		if rng.IntN(40) == 0 {
			r := uint64(1+rng.IntN(16)) * 512
			wantFit, wantOK := eager.bestFit(r)
			gotFit, gotOK := lazy.bestFit(r)
			require.Equal(t, wantOK, gotOK, "step %d", step)
			require.Equal(t, wantFit, gotFit, "step %d", step)
			wantMax, _ := eager.largest()
			gotMax, _ := lazy.largest()
			require.Equal(t, wantMax, gotMax, "step %d", step)
		}
	}
	require.True(t, dropped, "the lazy size index was never dropped")
	require.Equal(t, eagerCalls, lazyCalls)
	require.Equal(t, eager.bytes, lazy.bytes)
	var c checker
	e := &Engine{}
	e.checkFreeSet(&c, "lazy", lazy)
	require.Empty(t, c.errs)
}

func boolBit(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
