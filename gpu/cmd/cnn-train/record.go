package main

import (
	"fmt"
	"sync"

	"github.com/gmlake/gmlake/gpu/pool"
	"github.com/gmlake/gmlake/stitch"
	"github.com/gmlake/gmlake/trace"
)

// recorder passes a pool's requests on and writes them down as an allocation trace (the text
// format of package trace, an iteration marker at each MarkIteration): every tensor, scratch
// buffer and convolution workspace the Device asks for.
type recorder struct {
	pool.Pool
	rec trace.Recorder

	mu      sync.Mutex
	iters   int64
	allocs  uint64
	streams map[stitch.Stream]uint64
}

func newRecorder(p pool.Pool) *recorder {
	return &recorder{Pool: p, streams: map[stitch.Stream]uint64{}}
}

// Alloc implements gpu.Allocator.
func (r *recorder) Alloc(size uint64, s stitch.Stream) (uintptr, error) {
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
func (r *recorder) Free(p uintptr, size uint64) error {
	if err := r.Pool.Free(p, size); err != nil {
		return err
	}
	if err := r.rec.Free(p); err != nil {
		return fmt.Errorf("cnn-train: %w", err)
	}
	return nil
}

// MarkIteration records an iteration marker and passes the hint on.
func (r *recorder) MarkIteration() {
	r.mu.Lock()
	n := r.iters
	r.iters++
	r.mu.Unlock()
	r.rec.Iteration(n)
	if m, ok := r.Pool.(interface{ MarkIteration() }); ok {
		m.MarkIteration()
	}
}

func (r *recorder) write(path, workload, header string) error {
	return trace.WriteFile(path, r.rec.Trace(workload, header))
}
