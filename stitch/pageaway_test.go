package stitch

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRememberedSpansKept: the places pages keep away from, kept between calls, are what a fresh
// computation gives, through random iterations of large and small requests, marked (the memos
// change at each mark) and unmarked (the contexts change at each large request), with a view
// budget small enough that views are released on the way.
func TestRememberedSpansKept(t *testing.T) {
	const mib = 1 << 20
	for _, marked := range []bool{false, true} {
		e, err := New(&nullDriver{}, WithCapacity(64*mib), WithStitchBudget(2, 0))
		require.NoError(t, err)
		rng := rand.New(rand.NewPCG(1, 9))
		type held struct {
			ptr  uintptr
			size uint64
		}
		var live []held
		released, compared := 0, 0
		for iter := range 60 {
			if marked {
				e.MarkIteration()
			}
			for range 40 {
				if len(live) > 0 && rng.IntN(100) < 45 {
					i := rng.IntN(len(live))
					require.NoError(t, e.Free(live[i].ptr, live[i].size))
					live = slices.Delete(live, i, i+1)
				} else {
					size := uint64(1+rng.IntN(9))*mib + uint64(rng.IntN(4))*mib/4
					if rng.IntN(3) == 0 {
						size = uint64(1+rng.IntN(64)) * 4096
					}
					views := len(e.views)
					if ptr, err := e.Alloc(size, 0); err == nil {
						live = append(live, held{ptr, size})
					}
					if len(e.views) < views {
						released++
					}
				}
				kept := slices.Clone(e.rememberedSpans())
				e.forgetAway()
				require.Equal(t, e.rememberedSpans(), kept, "marked=%v, iteration %d", marked, iter)
				compared++
			}
		}
		require.NoError(t, e.Check())
		require.Positive(t, released, "marked=%v: no view was released", marked)
		require.NoError(t, e.Close())
	}
}
