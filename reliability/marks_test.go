package reliability

import (
	"errors"
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
	e := h.Engine
	var done atomic.Bool
	var checks, empties, ops, ooms, marks atomic.Uint64
	var bg sync.WaitGroup
	bg.Go(func() {
		for !done.Load() {
			if err := e.Check(); err != nil {
				tally.violations.Add(1)
				t.Errorf("concurrent Check: %v", err)
				return
			}
			checks.Add(1)
		}
	})
	bg.Go(func() {
		tick := time.NewTicker(3 * time.Millisecond)
		defer tick.Stop()
		for !done.Load() {
			<-tick.C
			if err := e.EmptyCache(); err != nil {
				t.Errorf("concurrent EmptyCache: %v", err)
				return
			}
			empties.Add(1)
		}
	})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			s := stitch.Stream(w % 2)
			var live []Block
			var buf []PhysRange
			free := func(i int) bool {
				b := live[i]
				live[i] = live[len(live)-1]
				live = live[:len(live)-1]
				if err := h.Shadow.Release(b.Ptr); !assert.NoError(t, err) {
					return false
				}
				return assert.NoError(t, e.Free(b.Ptr, b.Size), "worker %d", w)
			}
			for it := range iterations {
				e.MarkIteration()
				marks.Add(1)
				shape := uint64(it % 2)
				rng := rand.New(rand.NewPCG(uint64(w), shape)) // one script per shape
				for i := range 24 + 8*int(shape) {
					if len(live) > 0 && (rng.IntN(3) == 0 || len(live) > 8) {
						if !free(rng.IntN(len(live))) {
							return
						}
						ops.Add(1)
						continue
					}
					size := randomRequest(rng, simG)
					ptr, err := e.Alloc(size, s)
					if errors.Is(err, stitch.ErrOutOfMemory) {
						ooms.Add(1)
						continue
					}
					if !assert.NoError(t, err, "worker %d iteration %d op %d", w, it, i) {
						return
					}
					buf, err = h.Tracker.AppendResolve(buf[:0], ptr, size)
					if err == nil {
						err = h.Shadow.Claim(ptr, buf)
					}
					if err != nil {
						tally.violations.Add(1)
						t.Errorf("worker %d iteration %d op %d: block %#x of %d bytes: %v", w, it, i, ptr, size, err)
						return
					}
					live = append(live, Block{Ptr: ptr, Size: size})
					ops.Add(1)
				}
				for len(live) > 0 { // an iteration frees what it allocated
					if !free(len(live) - 1) {
						return
					}
					ops.Add(1)
				}
			}
		})
	}
	wg.Wait()
	done.Store(true)
	bg.Wait()
	tally.shadowed.Add(ops.Load())
	t.Logf("%d workers: %d iterations marked, %d operations, %d out of memory, %d concurrent Checks, %d EmptyCaches; outcomes %v",
		workers, marks.Load(), ops.Load(), ooms.Load(), checks.Load(), empties.Load(), e.Stats().Outcomes)
	assert.Zero(t, ooms.Load(), "out of memory: the workers never hold more than a quarter of the capacity")
	require.True(t, verified(t, h, "after the workers"))
	assert.Zero(t, e.Stats().LiveBytes)
	require.NoError(t, h.Close())
	if err := h.Leaks(); err != nil {
		tally.leaks.Add(1)
		t.Error(err)
	}
}
