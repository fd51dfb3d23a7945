package baseline

import (
	"fmt"

	"github.com/gmlake/gmlake/internal/treap"
	"github.com/gmlake/gmlake/internal/units"
	"github.com/gmlake/gmlake/stitch"
)

// Caching follows PyTorch's native CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp) in its
// default mode, with max_split_size, garbage collection and roundup_power2_divisions unset:
//
//   - a request is rounded up to a multiple of 512 bytes (minimum 512);
//   - requests up to 1 MiB use the small pool, larger ones the large pool; each pool keeps its free
//     blocks per stream ordered by (size, address) and takes the smallest that fits (best fit);
//   - when nothing fits it allocates a segment: 2 MiB for a small request, 20 MiB for a request
//     under 10 MiB, otherwise the request rounded up to 2 MiB;
//   - a block is split when the rest is at least 512 bytes (small pool) or more than 1 MiB (large);
//   - a freed block merges with free neighbours in its segment and goes back to its pool;
//   - when a segment cannot be allocated (device full, or the limit of
//     set_per_process_memory_fraction reached) it frees every cached segment that is wholly free
//     and tries once more before reporting out-of-memory.
//
// Left out, because replayed traces cannot exercise them: cross-stream use (record_stream) and the
// events it waits on, CUDA graphs, expandable segments, and the OOM observers.
type Caching struct {
	dev      Device
	limit    uint64                                  // PyTorch's memory-fraction limit on reserved bytes; 0 = none
	pools    map[cachePool]*treap.Tree[*cachedBlock] // free blocks: key (size, address)
	live     map[uintptr]*cachedBlock                // allocated blocks by address
	reserved uint64                                  // bytes in segments
	calls    uint64                                  // Device calls
}

// cachePool names a free list: one per stream and pool size class.
type cachePool struct {
	stream stitch.Stream
	small  bool
}

// cachedBlock is a piece of a segment, allocated or free; blocks of one segment are linked in
// address order, and a segment whose only block is free can be returned to the device.
type cachedBlock struct {
	ptr        uintptr
	size       uint64 // rounded bytes this block spans
	requested  uint64 // the size given to Alloc, while allocated
	pool       cachePool
	allocated  bool
	prev, next *cachedBlock
}

// PyTorch's constants.
const (
	cacheMinBlock      = 512      // kMinBlockSize: rounding and smallest split remainder (small pool)
	cacheSmallSize     = 1 << 20  // kSmallSize: largest small-pool request
	cacheSmallBuffer   = 2 << 20  // kSmallBuffer: small-pool segment
	cacheLargeBuffer   = 20 << 20 // kLargeBuffer: segment for requests under cacheMinLargeAlloc
	cacheMinLargeAlloc = 10 << 20 // kMinLargeAlloc
	cacheRoundLarge    = 2 << 20  // kRoundLarge: rounding of larger segments
)

// CachingOption configures a Caching allocator.
type CachingOption func(*Caching)

// WithLimit caps the bytes the allocator reserves, as torch.cuda.set_per_process_memory_fraction
// does; 0 means no cap beyond the device's.
func WithLimit(bytes uint64) CachingOption { return func(c *Caching) { c.limit = bytes } }

// NewCaching returns an empty caching allocator over dev.
func NewCaching(dev Device, opts ...CachingOption) *Caching {
	c := &Caching{dev: dev, pools: make(map[cachePool]*treap.Tree[*cachedBlock]), live: make(map[uintptr]*cachedBlock)}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Name implements Allocator.
func (c *Caching) Name() string { return NameCaching }

func cacheRoundSize(size uint64) uint64 {
	return units.RoundUp(max(size, cacheMinBlock), cacheMinBlock)
}

func cacheSegmentSize(rounded uint64) uint64 {
	switch {
	case rounded <= cacheSmallSize:
		return cacheSmallBuffer
	case rounded < cacheMinLargeAlloc:
		return cacheLargeBuffer
	}
	return units.RoundUp(rounded, cacheRoundLarge)
}

func (c *Caching) freeList(p cachePool) *treap.Tree[*cachedBlock] {
	t := c.pools[p]
	if t == nil {
		t = &treap.Tree[*cachedBlock]{}
		c.pools[p] = t
	}
	return t
}

// Alloc implements Allocator.
func (c *Caching) Alloc(size uint64, s stitch.Stream) (uintptr, error) {
	rounded := cacheRoundSize(size)
	pool := cachePool{stream: s, small: rounded <= cacheSmallSize}
	free := c.freeList(pool)
	var b *cachedBlock
	if n := free.Ceil(rounded, 0); n != nil {
		b = n.Value
		free.Delete(b.size, uint64(b.ptr))
	} else {
		var err error
		if b, err = c.newSegment(rounded, pool); err != nil {
			return 0, err
		}
	}
	if rest := b.size - rounded; (pool.small && rest >= cacheMinBlock) || (!pool.small && rest > cacheSmallSize) {
		tail := &cachedBlock{ptr: b.ptr + uintptr(rounded), size: rest, pool: pool, prev: b, next: b.next}
		if b.next != nil {
			b.next.prev = tail
		}
		b.next, b.size = tail, rounded
		free.Insert(tail.size, uint64(tail.ptr), 0, tail)
	}
	b.allocated, b.requested = true, size
	c.live[b.ptr] = b
	return b.ptr, nil
}

// newSegment allocates a segment for a request of rounded bytes, freeing the cache and retrying once
// if the device (or the limit) refuses.
func (c *Caching) newSegment(rounded uint64, pool cachePool) (*cachedBlock, error) {
	size := cacheSegmentSize(rounded)
	p, err := c.malloc(size)
	if err != nil && errorsIsOOM(err) {
		c.releaseCached()
		p, err = c.malloc(size)
	}
	if err != nil {
		if !errorsIsOOM(err) {
			return nil, fmt.Errorf("caching: %w", err)
		}
		largest, pieces := c.largestFree(pool)
		return nil, &OutOfMemoryError{Allocator: c.Name(), Requested: rounded, Reserved: c.reserved,
			Capacity: c.limit, Largest: largest, Pieces: pieces}
	}
	c.reserved += size
	return &cachedBlock{ptr: p, size: size, pool: pool}, nil
}

func (c *Caching) malloc(size uint64) (uintptr, error) {
	if c.limit != 0 && c.reserved+size > c.limit {
		return 0, ErrOutOfMemory
	}
	c.calls++
	return c.dev.Malloc(size)
}

// releaseCached returns every wholly free segment to the device (PyTorch's release_cached_blocks).
func (c *Caching) releaseCached() {
	for _, free := range c.pools {
		var whole []*cachedBlock
		free.Ascend(func(n *treap.Node[*cachedBlock]) bool {
			if b := n.Value; b.prev == nil && b.next == nil {
				whole = append(whole, b)
			}
			return true
		})
		for _, b := range whole {
			c.calls++
			if err := c.dev.Free(b.ptr); err != nil {
				continue // the device keeps it; so do we
			}
			free.Delete(b.size, uint64(b.ptr))
			c.reserved -= b.size
		}
	}
}

func (c *Caching) largestFree(pool cachePool) (largest uint64, pieces int) {
	for _, free := range c.pools {
		pieces += free.Len()
	}
	if free := c.pools[pool]; free != nil {
		if n := free.Max(); n != nil {
			largest, _ = n.Key()
		}
	}
	return largest, pieces
}

// Free implements Allocator.
func (c *Caching) Free(ptr uintptr, size uint64) error {
	b, ok := c.live[ptr]
	switch {
	case !ok:
		return fmt.Errorf("caching: free %#x: %w", ptr, ErrUnknownPointer)
	case b.requested != size:
		return fmt.Errorf("caching: free %#x of %d bytes, allocated %d: %w", ptr, size, b.requested, ErrSizeMismatch)
	}
	delete(c.live, ptr)
	b.allocated, b.requested = false, 0
	free := c.freeList(b.pool)
	if p := b.prev; p != nil && !p.allocated {
		free.Delete(p.size, uint64(p.ptr))
		b.ptr, b.size, b.prev = p.ptr, b.size+p.size, p.prev
		if b.prev != nil {
			b.prev.next = b
		}
	}
	if n := b.next; n != nil && !n.allocated {
		free.Delete(n.size, uint64(n.ptr))
		b.size, b.next = b.size+n.size, n.next
		if b.next != nil {
			b.next.prev = b
		}
	}
	free.Insert(b.size, uint64(b.ptr), 0, b)
	return nil
}

// EmptyCache returns every wholly free segment to the device (torch.cuda.empty_cache).
func (c *Caching) EmptyCache() { c.releaseCached() }

// Reserved implements Allocator.
func (c *Caching) Reserved() uint64 { return c.reserved }

// DriverCalls implements Allocator.
func (c *Caching) DriverCalls() uint64 { return c.calls }

// Close implements Allocator: it frees live blocks, then every segment.
func (c *Caching) Close() error {
	for p, b := range c.live {
		if err := c.Free(p, b.requested); err != nil {
			return err
		}
	}
	c.releaseCached()
	if c.reserved != 0 {
		return fmt.Errorf("caching: %s still reserved after close", units.FormatBytes(c.reserved))
	}
	return nil
}
