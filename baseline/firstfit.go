package baseline

import (
	"errors"
	"fmt"
	"sort"

	"github.com/gmlake/gmlake/internal/treap"
	"github.com/gmlake/gmlake/internal/units"
	"github.com/gmlake/gmlake/stitch"
)

// FirstFit is the algorithm of Gorgonia's default GPU pool (gorgonia/cuda/bfc.go): one arena taken
// from the device up front that never grows or shrinks, requests rounded up to 32 bytes with a
// 256-byte minimum, the free block at the lowest address that fits is taken (first fit, not best
// fit) and its tail split off, and a freed block is merged with free neighbours.
//
// It is a reimplementation of the algorithm, not of the code, and it differs from upstream where
// upstream is wrong or slow:
//   - upstream's coalesce unlinks a block without fixing its neighbour's back link, which can leave
//     an allocated block on the free list (false out-of-memory, nil-pointer panics); here free
//     blocks live in a balanced tree keyed by address, so there is no list to corrupt;
//   - upstream coalesces lazily (when nothing fits, and on every free once frees/allocs >= 0.75,
//     which a training loop reaches in its first iteration); here every free coalesces at once, so
//     placement matches upstream's steady state;
//   - upstream returns the padding between the size and its 32-byte rounding as its own free
//     fragment (under 32 bytes, below the 256-byte minimum, so never usable); here it stays with
//     the block;
//   - upstream ignores frees of unknown addresses silently; here they are errors;
//   - first fit is O(log n) (a search down the tree by largest free block) instead of a list walk.
//
// Because the lowest-address fit never looks past the highest byte it has used, a run on an arena
// of any size at least that high-water mark is identical: Reserved reports the high-water mark,
// the smallest arena that would have done, and an unbounded arena measures it.
type FirstFit struct {
	dev       Device
	base      uintptr
	arena     uint64               // arena size
	free      treap.Tree[struct{}] // free blocks: key (offset, 0), weight size
	used      map[uint64]uint64    // offset -> rounded size of each allocated block
	highWater uint64               // largest end offset ever allocated
	calls     uint64
}

// Gorgonia's bfc constants.
const (
	firstFitAlign = 32
	firstFitMin   = 256
)

// NewFirstFit takes an arena of arenaSize bytes from dev (one Malloc) and returns the pool over it.
func NewFirstFit(dev Device, arenaSize uint64) (*FirstFit, error) {
	if arenaSize < firstFitMin {
		return nil, fmt.Errorf("gorgonia: arena of %d bytes: %w", arenaSize, ErrInvalidSize)
	}
	f := &FirstFit{dev: dev, arena: arenaSize, used: make(map[uint64]uint64), calls: 1}
	base, err := dev.Malloc(arenaSize)
	if err != nil {
		return nil, fmt.Errorf("gorgonia: arena: %w", err)
	}
	f.base = base
	f.free.Insert(0, 0, arenaSize, struct{}{})
	return f, nil
}

// Name implements Allocator.
func (f *FirstFit) Name() string { return NameGorgonia }

func firstFitSize(size uint64) uint64 { return units.RoundUp(max(size, firstFitMin), firstFitAlign) }

// Alloc implements Allocator.
func (f *FirstFit) Alloc(size uint64, _ stitch.Stream) (uintptr, error) {
	n := firstFitSize(size)
	b := f.free.FirstWeightAtLeast(n)
	if b == nil {
		return 0, &OutOfMemoryError{Allocator: f.Name(), Requested: size, Reserved: f.arena,
			Capacity: f.arena, Largest: f.free.MaxWeight(), Pieces: f.free.Len()}
	}
	off, _ := b.Key()
	blockSize := b.Weight()
	f.free.Delete(off, 0)
	if blockSize > n {
		f.free.Insert(off+n, 0, blockSize-n, struct{}{})
	}
	f.used[off] = n
	f.highWater = max(f.highWater, off+n)
	return f.base + uintptr(off), nil
}

// Free implements Allocator.
func (f *FirstFit) Free(ptr uintptr, size uint64) error {
	off := uint64(ptr - f.base)
	n, ok := f.used[off]
	switch {
	case ptr < f.base || !ok:
		return fmt.Errorf("gorgonia: free %#x: %w", ptr, ErrUnknownPointer)
	case n != firstFitSize(size):
		return fmt.Errorf("gorgonia: free %#x of %d bytes, allocated %d: %w", ptr, size, n, ErrSizeMismatch)
	}
	delete(f.used, off)
	if prev := f.free.Floor(off, 0); prev != nil {
		if start, _ := prev.Key(); start+prev.Weight() == off {
			off, n = start, n+prev.Weight()
			f.free.Delete(start, 0)
		}
	}
	if next := f.free.Ceil(off+n, 0); next != nil {
		if start, _ := next.Key(); start == off+n {
			n += next.Weight()
			f.free.Delete(start, 0)
		}
	}
	f.free.Insert(off, 0, n, struct{}{})
	return nil
}

// Reserved implements Allocator: the arena's high-water mark (see the type's doc).
func (f *FirstFit) Reserved() uint64 { return f.highWater }

// ArenaSize is the size of the arena taken at construction.
func (f *FirstFit) ArenaSize() uint64 { return f.arena }

// DriverCalls implements Allocator: the arena's Malloc, and its Free once closed.
func (f *FirstFit) DriverCalls() uint64 { return f.calls }

// Close implements Allocator: it returns the arena, live blocks or not (Gorgonia's ResetAllocator).
func (f *FirstFit) Close() error {
	if f.dev == nil {
		return nil
	}
	f.calls++
	err := f.dev.Free(f.base)
	f.dev = nil
	return err
}

// Check implements Checker: free blocks are in bounds, disjoint from each other and from used
// blocks, never adjacent (coalescing is eager), and free plus used bytes cover the arena.
func (f *FirstFit) Check() error {
	type span struct {
		off, size uint64
		free      bool
	}
	spans := make([]span, 0, f.free.Len()+len(f.used))
	f.free.Ascend(func(n *treap.Node[struct{}]) bool {
		start, _ := n.Key()
		spans = append(spans, span{start, n.Weight(), true})
		return true
	})
	for off, n := range f.used {
		spans = append(spans, span{off, n, false})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].off < spans[j].off })
	var errs []error
	var end uint64
	for i, s := range spans {
		if s.off != end {
			errs = append(errs, fmt.Errorf("gorgonia: gap or overlap at offset %d (previous block ends at %d)", s.off, end))
		}
		if s.free && i > 0 && spans[i-1].free {
			errs = append(errs, fmt.Errorf("gorgonia: adjacent free blocks at %d and %d", spans[i-1].off, s.off))
		}
		end = s.off + s.size
	}
	if end != f.arena {
		errs = append(errs, fmt.Errorf("gorgonia: blocks end at %d, arena is %d", end, f.arena))
	}
	return errors.Join(errs...)
}
