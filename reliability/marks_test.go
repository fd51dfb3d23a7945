package reliability

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/stitch"
)

// TestConcurrentMarkedIterations: goroutines run training-like iterations of two shapes each (the
// same script every time a shape recurs) on one engine, each calling MarkIteration at the start of
// its own iterations, so that marks come from several goroutines at once and every iteration the
// engine sees interleaves the scripts of all of them: memos are followed, left halfway and their
// places taken by other goroutines. Check runs beside them without pause, EmptyCache every few
// milliseconds (releasing places memos point at). Every block's physical bytes are claimed in the
// shadow map, and the run must end with the accounting consistent and nothing leaked.
func TestConcurrentMarkedIterations(t *testing.T) {
	const workers = 4
	iterations := concurrencyScale(t, 150, 5000)
	h, err := NewHarness(Config{Capacity: 512 * simG, EngineOptions: []stitch.Option{stitch.WithStitchBudget(32, 0)}})
	require.NoError(t, err)
	run := startShadowRun(t, h, 3*time.Millisecond)
	var marks atomic.Uint64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			k := run.worker(w, stitch.Stream(w%2))
			for it := range iterations {
				h.Engine.MarkIteration()
				marks.Add(1)
				shape := uint64(it % 2)
				rng := rand.New(rand.NewPCG(uint64(w), shape)) // one script per shape
				for i := range 24 + 8*int(shape) {
					if len(k.live) > 0 && (rng.IntN(3) == 0 || len(k.live) > 8) {
						if !k.free(rng.IntN(len(k.live))) {
							return
						}
						continue
					}
					if !k.alloc(randomRequest(rng, simG), fmt.Sprintf("iteration %d op %d", it, i)) {
						return
					}
				}
				if !k.freeAll() { // an iteration frees what it allocated
					return
				}
			}
		})
	}
	wg.Wait()
	run.stop()
	t.Logf("%d workers: %d iterations marked, %v; outcomes %v", workers, marks.Load(), run, h.Engine.Stats().Outcomes)
	assert.Zero(t, run.ooms.Load(), "out of memory: the workers never hold more than a quarter of the capacity")
	require.True(t, verified(t, h, "after the workers"))
	assert.Zero(t, h.Engine.Stats().LiveBytes)
	require.NoError(t, h.Close())
	if err := h.Leaks(); err != nil {
		tally.leaks.Add(1)
		t.Error(err)
	}
}
