package traincmd

import (
	"sync/atomic"
	"time"

	"github.com/gmlake/gmlake/gpu/pool"
	"github.com/gmlake/gmlake/stitch"
)

// AllocClock passes a pool's requests on and sums the wall time spent inside its Alloc and Free:
// the allocator's share of a training step on the host, driver calls included. Beside the step
// time it tells an allocator that slows the step by its own work on the CPU from one whose memory
// makes the device slower.
type AllocClock struct {
	pool.Pool
	spent atomic.Int64 // nanoseconds inside Alloc and Free
	calls atomic.Uint64
}

// NewAllocClock times the requests made of p.
func NewAllocClock(p pool.Pool) *AllocClock { return &AllocClock{Pool: p} }

// Alloc implements gpu.Allocator.
func (c *AllocClock) Alloc(size uint64, s stitch.Stream) (uintptr, error) {
	start := time.Now()
	p, err := c.Pool.Alloc(size, s)
	c.spent.Add(int64(time.Since(start)))
	c.calls.Add(1)
	return p, err
}

// Free implements gpu.Allocator.
func (c *AllocClock) Free(p uintptr, size uint64) error {
	start := time.Now()
	err := c.Pool.Free(p, size)
	c.spent.Add(int64(time.Since(start)))
	c.calls.Add(1)
	return err
}

// Spent is the time spent inside Alloc and Free so far, and the number of those calls.
func (c *AllocClock) Spent() (time.Duration, uint64) {
	return time.Duration(c.spent.Load()), c.calls.Load()
}

// MarkIteration passes the hint on to a pool that takes it, untimed: a Device hands it only to an
// allocator that has the method, so the clock must have it for the engine to see iterations.
func (c *AllocClock) MarkIteration() {
	if m, ok := c.Pool.(interface{ MarkIteration() }); ok {
		m.MarkIteration()
	}
}
