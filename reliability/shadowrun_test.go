package reliability

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/gmlake/gmlake/stitch"
)

// shadowRun is what the concurrent shadow tests share: Check in a loop and EmptyCache (every
// emptyEvery, or back to back when 0) beside the workers until stop, and the counts.
type shadowRun struct {
	t    *testing.T
	h    *Harness
	e    *stitch.Engine
	done atomic.Bool
	bg   sync.WaitGroup

	checks, empties, ops, ooms atomic.Uint64
}

func startShadowRun(t *testing.T, h *Harness, emptyEvery time.Duration) *shadowRun {
	r := &shadowRun{t: t, h: h, e: h.Engine}
	r.bg.Go(func() {
		for !r.done.Load() {
			if err := r.e.Check(); err != nil {
				tally.violations.Add(1)
				t.Errorf("concurrent Check: %v", err)
				return
			}
			r.checks.Add(1)
		}
	})
	r.bg.Go(func() {
		var tick <-chan time.Time
		if emptyEvery > 0 {
			ticker := time.NewTicker(emptyEvery)
			defer ticker.Stop()
			tick = ticker.C
		}
		for !r.done.Load() {
			if tick != nil {
				<-tick
			}
			if err := r.e.EmptyCache(); err != nil {
				t.Errorf("concurrent EmptyCache: %v", err)
				return
			}
			r.empties.Add(1)
		}
	})
	return r
}

// stop ends the background goroutines and adds the operations to the tally.
func (r *shadowRun) stop() {
	r.done.Store(true)
	r.bg.Wait()
	tally.shadowed.Add(r.ops.Load())
}

// shadowWorker is one goroutine's live blocks, each with its physical bytes claimed in the shadow map.
type shadowWorker struct {
	r    *shadowRun
	id   int
	s    stitch.Stream
	live []Block
	buf  []PhysRange
}

func (r *shadowRun) worker(id int, s stitch.Stream) *shadowWorker {
	return &shadowWorker{r: r, id: id, s: s}
}

// alloc asks for size bytes and claims them; false ends the worker (the failure is reported). Out of
// memory is counted and is not a failure.
func (k *shadowWorker) alloc(size uint64, where string) bool {
	r := k.r
	ptr, err := r.e.Alloc(size, k.s)
	if errors.Is(err, stitch.ErrOutOfMemory) {
		r.ooms.Add(1)
		return true
	}
	if !assert.NoError(r.t, err, "worker %d %s", k.id, where) {
		return false
	}
	k.buf, err = r.h.Tracker.AppendResolve(k.buf[:0], ptr, size)
	if err == nil {
		err = r.h.Shadow.Claim(ptr, k.buf)
	}
	if err != nil {
		tally.violations.Add(1)
		r.t.Errorf("worker %d %s: block %#x of %d bytes: %v", k.id, where, ptr, size, err)
		return false
	}
	k.live = append(k.live, Block{Ptr: ptr, Size: size})
	r.ops.Add(1)
	return true
}

// free releases live block i's claim and frees it; false ends the worker.
func (k *shadowWorker) free(i int) bool {
	b := k.live[i]
	k.live[i] = k.live[len(k.live)-1]
	k.live = k.live[:len(k.live)-1]
	if err := k.r.h.Shadow.Release(b.Ptr); !assert.NoError(k.r.t, err) {
		return false
	}
	k.r.ops.Add(1)
	return assert.NoError(k.r.t, k.r.e.Free(b.Ptr, b.Size), "worker %d", k.id)
}

// freeAll frees every live block, the newest first.
func (k *shadowWorker) freeAll() bool {
	for len(k.live) > 0 {
		if !k.free(len(k.live) - 1) {
			return false
		}
	}
	return true
}

func (r *shadowRun) String() string {
	return fmt.Sprintf("%d operations, %d out of memory, %d concurrent Checks, %d EmptyCaches",
		r.ops.Load(), r.ooms.Load(), r.checks.Load(), r.empties.Load())
}
