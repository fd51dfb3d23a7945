// Package traincmd holds what the GPU training commands (gpu-train, cnn-train) share: the recorder
// that writes a run's allocation requests down as a trace, the clock of the time spent inside the
// allocator, the log of each step's time and driver calls split into warm-up and steady steps, the
// order of timed rounds and of steps taken in turn with their paired comparison, and the search for
// the largest batch that fits.
package traincmd

import (
	"fmt"
	"sync"

	"github.com/gmlake/gmlake/gpu/pool"
	"github.com/gmlake/gmlake/stitch"
	"github.com/gmlake/gmlake/trace"
)

// Recorder passes a pool's requests on and writes them down as an allocation trace (the text format
// of package trace, with an iteration marker at each MarkIteration), so that a GPU run's pattern can
// be replayed by gmlake-bench on any machine: every tensor, scratch buffer and workspace the Device
// asks for.
type Recorder struct {
	pool.Pool
	tool string // the command's name, in errors
	rec  trace.Recorder

	mu      sync.Mutex
	iters   int64
	allocs  uint64
	streams map[stitch.Stream]uint64 // stream handles, numbered in order of appearance
}

// NewRecorder records the requests made of p; tool names the command in errors.
func NewRecorder(p pool.Pool, tool string) *Recorder {
	return &Recorder{Pool: p, tool: tool, streams: map[stitch.Stream]uint64{}}
}

// Alloc implements gpu.Allocator.
func (r *Recorder) Alloc(size uint64, s stitch.Stream) (uintptr, error) {
	p, err := r.Pool.Alloc(size, s)
	if err != nil {
		return p, err
	}
	r.mu.Lock()
	sid, ok := r.streams[s]
	if !ok {
		sid = uint64(len(r.streams))
		r.streams[s] = sid
	}
	r.allocs++
	r.mu.Unlock()
	r.rec.Alloc(p, size, sid)
	return p, nil
}

// Free implements gpu.Allocator.
func (r *Recorder) Free(p uintptr, size uint64) error {
	if err := r.Pool.Free(p, size); err != nil {
		return err
	}
	if err := r.rec.Free(p); err != nil {
		return fmt.Errorf("%s: %w", r.tool, err)
	}
	return nil
}

// MarkIteration records an iteration marker and passes the hint on.
func (r *Recorder) MarkIteration() {
	r.mu.Lock()
	n := r.iters
	r.iters++
	r.mu.Unlock()
	r.rec.Iteration(n)
	if m, ok := r.Pool.(interface{ MarkIteration() }); ok {
		m.MarkIteration()
	}
}

// Allocs is the number of allocations recorded.
func (r *Recorder) Allocs() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.allocs
}

// Write saves what was recorded to path (gzip'd if it ends in .gz), with workload and header as the
// trace's name and header line.
func (r *Recorder) Write(path, workload, header string) error {
	return trace.WriteFile(path, r.rec.Trace(workload, header))
}
