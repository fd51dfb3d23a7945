package vm

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"gorgonia.org/tensor"
)

// Allocator is what a Machine needs from the memory it runs on. *memory.Allocator (gmlake.NewAllocator)
// satisfies it; so does GoAllocator. The Machine computes on the CPU, so the memory must be host
// memory: an Allocator that has a HostAccessible() bool method and answers false (gmlake over the
// CUDA driver or the simulated one) is refused with ErrDeviceMemory; one without the method is
// taken to hand out host memory.
type Allocator interface {
	// Get returns a block of at least size bytes.
	Get(size int64) (tensor.Memory, error)
	// Free returns a block obtained from Get; size is the size given to Get.
	Free(mem tensor.Memory, size int64) error
}

// ErrDeviceMemory is returned by New (and CheckHostMemory) for an Allocator whose memory Go code
// cannot read or write: the CPU executor would fault on it. gpu/graphexec runs graphs on the GPU.
var ErrDeviceMemory = errors.New("vm: the allocator's memory is not host memory")

// hostMemory is implemented by allocators that say whether their memory is host memory.
type hostMemory interface{ HostAccessible() bool }

// CheckHostMemory returns an error wrapping ErrDeviceMemory when a says its memory is not host
// memory, nil otherwise.
func CheckHostMemory(a Allocator) error {
	if h, ok := a.(hostMemory); ok && !h.HostAccessible() {
		return fmt.Errorf("%w: %T hands out memory the CPU cannot read (run the graph with gpu/graphexec)", ErrDeviceMemory, a)
	}
	return nil
}

// ErrUnknownMemory is returned by GoAllocator.Free for a block it did not hand out (or already freed).
var ErrUnknownMemory = errors.New("vm: free of unknown memory")

// GoAllocator is an Allocator over the Go heap: each Get is a fresh []byte kept alive until Free.
// It is the reference the stitched allocators are compared against, and the tests' allocator.
// With Poison set, freed blocks are filled with 0xFF (a NaN in every float type) and never reused,
// so a read after free shows up as NaN instead of going unnoticed.
type GoAllocator struct {
	Poison bool

	mu   sync.Mutex
	live map[uintptr][]byte
	dead [][]byte // poisoned blocks, kept so their addresses are not reused
}

type goMemory struct{ ptr, size uintptr }

func (m goMemory) Uintptr() uintptr { return m.ptr }
func (m goMemory) MemSize() uintptr { return m.size }

// Get implements Allocator.
func (a *GoAllocator) Get(size int64) (tensor.Memory, error) {
	if size <= 0 {
		return nil, fmt.Errorf("vm: GoAllocator.Get(%d): size must be positive", size)
	}
	b := make([]byte, size)
	ptr := uintptr(unsafe.Pointer(&b[0]))
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.live == nil {
		a.live = make(map[uintptr][]byte)
	}
	a.live[ptr] = b
	return goMemory{ptr: ptr, size: uintptr(size)}, nil
}

// Free implements Allocator.
func (a *GoAllocator) Free(mem tensor.Memory, size int64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	b, ok := a.live[mem.Uintptr()]
	if !ok || int64(len(b)) != size {
		return fmt.Errorf("%w: %#x (%d bytes)", ErrUnknownMemory, mem.Uintptr(), size)
	}
	delete(a.live, mem.Uintptr())
	if a.Poison {
		for i := range b {
			b[i] = 0xFF
		}
		a.dead = append(a.dead, b)
	}
	return nil
}

// LiveBytes is the number of bytes handed out and not freed.
func (a *GoAllocator) LiveBytes() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	var n int64
	for _, b := range a.live {
		n += int64(len(b))
	}
	return n
}
