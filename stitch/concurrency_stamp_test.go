package stitch_test

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/host"
	"github.com/gmlake/gmlake/reliability"
	"github.com/gmlake/gmlake/stitch"
)

// TestConcurrentBlocksKeepTheirBytes: goroutines share one engine over real host memory, each with
// many live blocks at once (small, split, stitched and new), every block stamped with its own id
// across all its bytes; each block is verified whole before it is freed and at the end. Two live
// blocks on the same bytes, wherever the engine put them, overwrite each other's stamps.
func TestConcurrentBlocksKeepTheirBytes(t *testing.T) {
	d, err := host.New(host.WithGranularity(64<<10), host.WithCapacity(256*MiB))
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	e, err := stitch.New(d, stitch.WithSmallThreshold(64<<10))
	require.NoError(t, err)
	var ids atomic.Uint64
	type live struct {
		p, size, id uint64
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 18))
			var mine []live
			drop := func(i int) bool {
				b := mine[i]
				ok := assert.True(t, reliability.Stamped(uintptr(b.p), roundUp(b.size), b.id), "worker %d: block %d lost its bytes", w, b.id)
				ok = assert.NoError(t, e.Free(uintptr(b.p), b.size)) && ok
				mine[i] = mine[len(mine)-1]
				mine = mine[:len(mine)-1]
				return ok
			}
			for range 400 {
				if len(mine) > 0 && (len(mine) >= 16 || rng.IntN(3) == 0) {
					if !drop(rng.IntN(len(mine))) {
						return
					}
					continue
				}
				size := stampSize(rng)
				p, err := e.Alloc(size, 0)
				if !assert.NoError(t, err) {
					return
				}
				b := live{p: uint64(p), size: size, id: ids.Add(1)}
				reliability.Stamp(p, roundUp(size), b.id)
				mine = append(mine, b)
			}
			for len(mine) > 0 {
				if !drop(len(mine) - 1) {
					return
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, e.Check())
	st := e.Stats()
	assert.Zero(t, st.LiveBytes)
	for _, o := range []stitch.Outcome{stitch.OutcomeExact, stitch.OutcomeSplit, stitch.OutcomeStitch, stitch.OutcomeNewChunks} {
		assert.Positive(t, st.Outcomes.Of(o), "the workload reaches %s", o)
	}
	require.NoError(t, e.Close())
}

// stampSize draws small, few-chunk and large requests, and whole chunks (exact reuse).
func stampSize(rng *rand.Rand) uint64 {
	switch rng.IntN(6) {
	case 0, 1:
		return 1 + rng.Uint64N(64<<10)
	case 2, 3:
		return 64<<10 + rng.Uint64N(2*MiB)
	case 4:
		return 2*MiB + rng.Uint64N(6*MiB)
	default:
		return (1 + rng.Uint64N(8)) * (64 << 10)
	}
}

func roundUp(size uint64) uint64 {
	return (size + reliability.StampStride - 1) &^ (reliability.StampStride - 1)
}
