package memory

import (
	"fmt"
	"unsafe"

	"gorgonia.org/tensor"
)

// hostAccessible is implemented by drivers whose mapped memory Go code may read and write
// (driver/host).
type hostAccessible interface{ HostAccessible() bool }

// TensorEngine is a tensor.Engine that allocates from an Allocator over host memory. Arithmetic is
// tensor.StdEng's; Alloc, Free and the memory primitives are gmlake's.
type TensorEngine struct {
	tensor.StdEng
	alloc *Allocator
}

var (
	_ tensor.Engine       = (*TensorEngine)(nil)
	_ tensor.NonStdEngine = (*TensorEngine)(nil)
)

// NewTensorEngine returns a tensor engine over a. It fails with ErrNotHostAccessible unless a's driver
// gives host memory. The TensorEngine does not own a: close a when done.
func NewTensorEngine(a *Allocator) (*TensorEngine, error) {
	if h, ok := a.Driver().(hostAccessible); !ok || !h.HostAccessible() {
		return nil, fmt.Errorf("memory: new engine over a %T driver: %w", a.Driver(), ErrNotHostAccessible)
	}
	return &TensorEngine{alloc: a}, nil
}

// Allocator is the Allocator the TensorEngine draws from.
func (e *TensorEngine) Allocator() *Allocator { return e.alloc }

// NonStdAlloc marks the TensorEngine as allocating its own memory: without it package tensor would
// allocate on the Go heap and never call Alloc.
func (e *TensorEngine) NonStdAlloc() {}

// AllocAccessible reports that allocated memory is Go-accessible.
func (e *TensorEngine) AllocAccessible() bool { return true }

// Alloc allocates size bytes from the Allocator.
func (e *TensorEngine) Alloc(size int64) (tensor.Memory, error) { return e.alloc.Get(size) }

// Free returns memory obtained from Alloc; see Allocator.Free for its errors.
func (e *TensorEngine) Free(mem tensor.Memory, size int64) error { return e.alloc.Free(mem, size) }

// Accessible returns mem itself: it is host memory.
func (e *TensorEngine) Accessible(mem tensor.Memory) (tensor.Memory, error) { return mem, nil }

// WorksWith reports that every data order is supported, as by tensor.StdEng.
func (e *TensorEngine) WorksWith(tensor.DataOrder) bool { return true }

// Memclr zeroes mem.
func (e *TensorEngine) Memclr(mem tensor.Memory) {
	if n := mem.MemSize(); n > 0 {
		clear(bytesOf(mem.Uintptr(), n))
	}
}

// Memcpy copies src into the start of dst, which must be at least as large.
func (e *TensorEngine) Memcpy(dst, src tensor.Memory) error {
	n := src.MemSize()
	if n == 0 {
		return nil
	}
	if dst.MemSize() < n {
		return fmt.Errorf("memory: memcpy of %d bytes into %d: %w", n, dst.MemSize(), ErrShortBuffer)
	}
	copy(bytesOf(dst.Uintptr(), n), bytesOf(src.Uintptr(), n))
	return nil
}

// Memset fills mem with val, which must be a Go number or bool; mem is read as a slice of val's type.
func (e *TensorEngine) Memset(mem tensor.Memory, val any) error {
	if ms, ok := mem.(tensor.MemSetter); ok {
		return ms.Memset(val)
	}
	addr, n := mem.Uintptr(), mem.MemSize()
	switch v := val.(type) {
	case bool:
		fill(addr, n, v)
	case int:
		fill(addr, n, v)
	case int8:
		fill(addr, n, v)
	case int16:
		fill(addr, n, v)
	case int32:
		fill(addr, n, v)
	case int64:
		fill(addr, n, v)
	case uint:
		fill(addr, n, v)
	case uint8:
		fill(addr, n, v)
	case uint16:
		fill(addr, n, v)
	case uint32:
		fill(addr, n, v)
	case uint64:
		fill(addr, n, v)
	case uintptr:
		fill(addr, n, v)
	case float32:
		fill(addr, n, v)
	case float64:
		fill(addr, n, v)
	case complex64:
		fill(addr, n, v)
	case complex128:
		fill(addr, n, v)
	default:
		return fmt.Errorf("memory: memset with %T: %w", val, ErrUnsupportedType)
	}
	return nil
}

// fill sets every whole T in the n bytes at addr to v.
func fill[T any](addr, n uintptr, v T) {
	count := n / unsafe.Sizeof(v)
	if count == 0 {
		return
	}
	s := unsafe.Slice((*T)(pointerAt(addr)), count)
	for i := range s {
		s[i] = v
	}
}

// bytesOf views n bytes at addr.
func bytesOf(addr, n uintptr) []byte { return unsafe.Slice((*byte)(pointerAt(addr)), n) }

// pointerAt turns an address of gmlake memory into a pointer. The memory is mapped outside the Go
// heap, so the garbage collector neither moves nor frees it; the double indirection keeps go vet's
// unsafeptr check quiet about a conversion that is legitimate here.
func pointerAt(addr uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&addr)) }
