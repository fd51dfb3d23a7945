package trace

import (
	"fmt"
	"sync"
)

// Recorder writes down an allocator's traffic as a Trace: blocks are known by address while live
// and get IDs 0, 1, 2, ... in the order they were handed out. Allocators that wrap another (train.Recorder,
// gpu-train's) call it around the calls they pass on. It is safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	nextID int64
	live   map[uintptr]int64 // address -> allocation ID
	events []Event
}

// Alloc records that size bytes on stream were handed out at addr.
func (r *Recorder) Alloc(addr uintptr, size, stream uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.live == nil {
		r.live = make(map[uintptr]int64)
	}
	id := r.nextID
	r.nextID++
	r.live[addr] = id
	r.events = append(r.events, Event{Kind: Alloc, ID: id, Size: size, Stream: stream})
}

// Free records that the block at addr was given back; it is an error if none was recorded there.
func (r *Recorder) Free(addr uintptr) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok := r.live[addr]
	if !ok {
		return fmt.Errorf("trace: recorder: free of %#x, which was never recorded", addr)
	}
	delete(r.live, addr)
	r.events = append(r.events, Event{Kind: Free, ID: id})
	return nil
}

// Iteration records that training iteration n begins.
func (r *Recorder) Iteration(n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, Event{Kind: Iter, ID: n})
}

// Trace returns a copy of what was recorded so far, named workload, with a header line naming it
// and counting its events, then header. Blocks still live stay unfreed in it, as weights and
// optimizer state do in the recorded PyTorch traces.
func (r *Recorder) Trace(workload string, header ...string) *Trace {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &Trace{
		Name:   workload,
		Header: append([]string{fmt.Sprintf("workload %s events %d", workload, len(r.events))}, header...),
		Events: append([]Event(nil), r.events...),
	}
}
