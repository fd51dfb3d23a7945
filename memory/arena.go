package memory

import "gorgonia.org/tensor"

// Arena is a copy of Gorgonia's cuda.Arena interface (gorgonia.org/gorgonia/cuda, interfaces.go),
// which cannot be imported here: that package needs cuDNN 8 headers to build. Go interfaces are
// structural, so an *Allocator satisfies the original wherever it can be built.
type Arena interface {
	// Get allocates a chunk of memory of the given size.
	Get(size int64) (tensor.Memory, error)
	// Put returns the memory. Gorgonia passes the size it asked for.
	Put(mem tensor.Memory, size int64)
	// ResetAllocator frees everything.
	ResetAllocator()
}

var _ Arena = (*Allocator)(nil)

// Block is the memory returned by Get: size bytes at addr. Get allocates one Block (16 bytes) on
// the Go heap, the adapter's only allocation: tensor.Memory is an interface.
type Block struct {
	addr uintptr
	size int64
}

var _ tensor.Memory = (*Block)(nil)

// Uintptr is the block's address.
func (b *Block) Uintptr() uintptr { return b.addr }

// MemSize is the size asked for, in bytes (the block itself may be rounded up inside the engine).
func (b *Block) MemSize() uintptr { return uintptr(b.size) }
