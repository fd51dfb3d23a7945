package memory

import (
	"sync/atomic"

	"gorgonia.org/tensor"
)

// Arena is a copy of Gorgonia's cuda.Arena interface (gorgonia.org/gorgonia/cuda, interfaces.go),
// which cannot be imported here: that package needs cuDNN 8 headers to build. Go interfaces are
// structural, so an *Allocator satisfies the original wherever it can be built.
type Arena interface {
	// Get allocates a chunk of memory of the given size.
	Get(size int64) (tensor.Memory, error)
	// Put returns the memory. Gorgonia passes the size it asked for.
	Put(mem tensor.Memory, size int64)
	// ResetAllocator is called by Gorgonia's CUDA VMs at Reset (gmlake's frees nothing: see
	// Allocator.ResetAllocator).
	ResetAllocator()
}

var _ Arena = (*Allocator)(nil)

// Block is the memory returned by Get: size bytes at addr, and the handle that frees them. Get
// allocates one Block (24 bytes) on the Go heap, the adapter's only allocation: tensor.Memory is an
// interface. The handle is good for one Free: it records that it was freed, so that a second Free
// of it fails with stitch.ErrDoubleFree even once the engine has forgotten the block, and it can
// never free another Get's block at the same address (a fresh handle, with its own record).
type Block struct {
	addr  uintptr
	owner *Allocator   // the Allocator whose Get returned it; nil for a Block not made by Get
	state atomic.Int64 // the size asked for; negated by the Free that gave the block back
}

var _ tensor.Memory = (*Block)(nil)

// newBlock is the handle of a live block.
func newBlock(addr uintptr, size int64, owner *Allocator) *Block {
	b := &Block{addr: addr, owner: owner}
	b.state.Store(size)
	return b
}

// Uintptr is the block's address.
func (b *Block) Uintptr() uintptr { return b.addr }

// MemSize is the size asked for, in bytes (the block itself may be rounded up inside the engine).
func (b *Block) MemSize() uintptr {
	size := b.state.Load()
	return uintptr(max(size, -size))
}

// live says whether b is a handle of a that has not been freed.
func (b *Block) live(a *Allocator) bool { return b != nil && b.owner == a && b.state.Load() > 0 }

// claim marks a live handle of size bytes freed; false if it was freed already.
func (b *Block) claim(size int64) bool { return b.state.CompareAndSwap(size, -size) }

// unclaim undoes claim, for a Free the engine refused.
func (b *Block) unclaim(size int64) { b.state.Store(size) }
