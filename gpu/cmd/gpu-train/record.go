//go:build gmlakegpu

package main

import (
	"fmt"
	"sync"

	"github.com/gmlake/gmlake/gpu/pool"
	"github.com/gmlake/gmlake/stitch"
	"github.com/gmlake/gmlake/trace"
)

// recorder passes a pool's requests on and writes them down as an allocation trace (the text format
// of package trace, with an iteration marker at each MarkIteration), so that a GPU run's pattern can
// be replayed by gmlake-bench on any machine.
type recorder struct {
	pool.Pool
	mu      sync.Mutex
	ids     map[uintptr]int64
	streams map[stitch.Stream]uint64 // stream handles, numbered in order of appearance
	next    int64
	iters   int64
	events  []trace.Event
}

func newRecorder(p pool.Pool) *recorder {
	return &recorder{Pool: p, ids: map[uintptr]int64{}, streams: map[stitch.Stream]uint64{}}
}

// Alloc implements gpu.Allocator.
func (r *recorder) Alloc(size uint64, s stitch.Stream) (uintptr, error) {
	p, err := r.Pool.Alloc(size, s)
	if err != nil {
		return p, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	r.ids[p] = r.next
	sid, ok := r.streams[s]
	if !ok {
		sid = uint64(len(r.streams))
		r.streams[s] = sid
	}
	r.events = append(r.events, trace.Event{Kind: trace.Alloc, ID: r.next, Size: size, Stream: sid})
	return p, nil
}

// Free implements gpu.Allocator.
func (r *recorder) Free(p uintptr, size uint64) error {
	if err := r.Pool.Free(p, size); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok := r.ids[p]
	if !ok {
		return fmt.Errorf("gpu-train: recorder: free of %#x, never recorded", p)
	}
	delete(r.ids, p)
	r.events = append(r.events, trace.Event{Kind: trace.Free, ID: id})
	return nil
}

// MarkIteration records an iteration marker and passes the hint on.
func (r *recorder) MarkIteration() {
	r.mu.Lock()
	r.events = append(r.events, trace.Event{Kind: trace.Iter, ID: r.iters})
	r.iters++
	r.mu.Unlock()
	if m, ok := r.Pool.(interface{ MarkIteration() }); ok {
		m.MarkIteration()
	}
}

// write saves what was recorded to path (gzip'd if it ends in .gz).
func (r *recorder) write(path, workload string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return trace.WriteFile(path, &trace.Trace{Name: workload, Header: []string{"workload " + workload + " gpu-train"}, Events: r.events})
}
