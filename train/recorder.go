package train

import (
	"fmt"
	"sync"

	"github.com/gmlake/gmlake/trace"
	"github.com/gmlake/gmlake/train/vm"
	"gorgonia.org/tensor"
)

// Recorder is a vm.Allocator that passes every request to another allocator and records it in the
// allocation-trace format (../shared/traces/README.md): `a ID SIZE 0` per Get, `f ID` per Free, and
// `i N` when Iteration is called. It is safe for concurrent use.
type Recorder struct {
	next vm.Allocator

	mu     sync.Mutex
	nextID int64
	live   map[uintptr]int64 // address -> allocation ID
	events []trace.Event
}

// NewRecorder records the traffic to next.
func NewRecorder(next vm.Allocator) *Recorder {
	return &Recorder{next: next, live: make(map[uintptr]int64)}
}

// Get implements vm.Allocator.
func (r *Recorder) Get(size int64) (tensor.Memory, error) {
	mem, err := r.next.Get(size)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	id := r.nextID
	r.nextID++
	r.live[mem.Uintptr()] = id
	r.events = append(r.events, trace.Event{Kind: trace.Alloc, ID: id, Size: uint64(size)})
	return mem, nil
}

// Free implements vm.Allocator.
func (r *Recorder) Free(mem tensor.Memory, size int64) error {
	r.mu.Lock()
	id, ok := r.live[mem.Uintptr()]
	if ok {
		delete(r.live, mem.Uintptr())
		r.events = append(r.events, trace.Event{Kind: trace.Free, ID: id})
	}
	r.mu.Unlock()
	if err := r.next.Free(mem, size); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("train: recorder: free of %#x, which it never handed out", mem.Uintptr())
	}
	return nil
}

// Iteration marks the start of training iteration n.
func (r *Recorder) Iteration(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, trace.Event{Kind: trace.Iter, ID: int64(n)})
}

// MarkIteration passes the iteration hint on to the recorded allocator, when it takes one.
func (r *Recorder) MarkIteration() {
	if m, ok := r.next.(interface{ MarkIteration() }); ok {
		m.MarkIteration()
	}
}

// Trace returns a copy of what was recorded so far, named workload. Allocations still live stay
// unfreed in it, as weights and optimizer state do in the recorded PyTorch traces.
func (r *Recorder) Trace(workload string, header ...string) *trace.Trace {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := &trace.Trace{Name: workload, Events: append([]trace.Event(nil), r.events...)}
	t.Header = append([]string{fmt.Sprintf("workload %s events %d", workload, len(r.events))}, header...)
	return t
}
