package train

import (
	"fmt"

	"github.com/gmlake/gmlake/trace"
	"github.com/gmlake/gmlake/train/vm"
	"gorgonia.org/tensor"
)

// Recorder is a vm.Allocator that passes every request to another allocator and records it in the
// allocation-trace format (../shared/traces/README.md): `a ID SIZE 0` per Get, `f ID` per Free, and
// `i N` when Iteration is called. It is safe for concurrent use.
type Recorder struct {
	next vm.Allocator
	rec  trace.Recorder
}

// NewRecorder records the traffic to next.
func NewRecorder(next vm.Allocator) *Recorder { return &Recorder{next: next} }

// Get implements vm.Allocator.
func (r *Recorder) Get(size int64) (tensor.Memory, error) {
	mem, err := r.next.Get(size)
	if err != nil {
		return nil, err
	}
	r.rec.Alloc(mem.Uintptr(), uint64(size), 0)
	return mem, nil
}

// Free implements vm.Allocator.
func (r *Recorder) Free(mem tensor.Memory, size int64) error {
	recErr := r.rec.Free(mem.Uintptr())
	if err := r.next.Free(mem, size); err != nil {
		return err
	}
	if recErr != nil {
		return fmt.Errorf("train: %w", recErr)
	}
	return nil
}

// Iteration marks the start of training iteration n.
func (r *Recorder) Iteration(n int) { r.rec.Iteration(int64(n)) }

// MarkIteration passes the iteration hint on to the recorded allocator, when it takes one.
func (r *Recorder) MarkIteration() {
	if m, ok := r.next.(interface{ MarkIteration() }); ok {
		m.MarkIteration()
	}
}

// HostAccessible says whether the recorded allocator's memory is host memory (true when it does not
// say), so that vm.New refuses device memory through a Recorder too.
func (r *Recorder) HostAccessible() bool { return vm.CheckHostMemory(r.next) == nil }

// Trace returns a copy of what was recorded so far, named workload. Allocations still live stay
// unfreed in it, as weights and optimizer state do in the recorded PyTorch traces.
func (r *Recorder) Trace(workload string, header ...string) *trace.Trace {
	return r.rec.Trace(workload, header...)
}
