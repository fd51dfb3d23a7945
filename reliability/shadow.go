package reliability

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/gmlake/gmlake/stitch"
)

// Errors of the shadow map.
var (
	ErrOverlap    = errors.New("reliability: byte handed out twice")         // two live blocks share a physical byte
	ErrNotClaimed = errors.New("reliability: release of an unclaimed block") // a harness bug, not an engine one
)

// Shadow holds the physical ranges of every live block and refuses a claim that overlaps one. It is
// safe for concurrent use.
type Shadow struct {
	mu       sync.Mutex
	byHandle map[stitch.PhysHandle][]claimed // sorted by start, disjoint
	owners   map[uintptr][]PhysRange
	bytes    uint64
}

type claimed struct {
	start, end uint64
	owner      uintptr
}

// NewShadow makes an empty shadow map.
func NewShadow() *Shadow {
	return &Shadow{byHandle: make(map[stitch.PhysHandle][]claimed), owners: make(map[uintptr][]PhysRange)}
}

// Claim records that the live block at ptr holds ranges. It fails with ErrOverlap, and records
// nothing, when any byte of them is already held by another live block (or twice by this one).
func (s *Shadow) Claim(ptr uintptr, ranges []PhysRange) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.owners[ptr]; ok {
		return fmt.Errorf("%w: block %#x is already live", ErrOverlap, ptr)
	}
	for i, r := range ranges {
		if other, ok := s.overlapping(r); ok {
			return fmt.Errorf("%w: block %#x holds bytes [%d, %d) of handle %d, which block %#x holds",
				ErrOverlap, ptr, r.Offset, r.Offset+r.Length, r.Handle, other)
		}
		for _, q := range ranges[:i] {
			if q.Handle == r.Handle && q.Offset < r.Offset+r.Length && r.Offset < q.Offset+q.Length {
				return fmt.Errorf("%w: block %#x maps bytes of handle %d twice", ErrOverlap, ptr, r.Handle)
			}
		}
	}
	for _, r := range ranges {
		cs := s.byHandle[r.Handle]
		i := sort.Search(len(cs), func(i int) bool { return cs[i].start >= r.Offset })
		s.byHandle[r.Handle] = slices.Insert(cs, i, claimed{start: r.Offset, end: r.Offset + r.Length, owner: ptr})
		s.bytes += r.Length
	}
	s.owners[ptr] = slices.Clone(ranges)
	return nil
}

// overlapping returns the owner of a claimed range overlapping r. The caller holds s.mu.
func (s *Shadow) overlapping(r PhysRange) (uintptr, bool) {
	cs := s.byHandle[r.Handle]
	i := sort.Search(len(cs), func(i int) bool { return cs[i].end > r.Offset })
	if i < len(cs) && cs[i].start < r.Offset+r.Length {
		return cs[i].owner, true
	}
	return 0, false
}

// Release forgets the block at ptr.
func (s *Shadow) Release(ptr uintptr) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ranges, ok := s.owners[ptr]
	if !ok {
		return fmt.Errorf("%w: %#x", ErrNotClaimed, ptr)
	}
	for _, r := range ranges {
		cs := s.byHandle[r.Handle]
		i := sort.Search(len(cs), func(i int) bool { return cs[i].start >= r.Offset })
		if i == len(cs) || cs[i].owner != ptr {
			return fmt.Errorf("%w: %#x lost its range of handle %d", ErrNotClaimed, ptr, r.Handle)
		}
		if cs = slices.Delete(cs, i, i+1); len(cs) == 0 {
			delete(s.byHandle, r.Handle)
		} else {
			s.byHandle[r.Handle] = cs
		}
		s.bytes -= r.Length
	}
	delete(s.owners, ptr)
	return nil
}

// ReleaseAll forgets every block.
func (s *Shadow) ReleaseAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.byHandle)
	clear(s.owners)
	s.bytes = 0
}

// Blocks is the number of live blocks claimed.
func (s *Shadow) Blocks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.owners)
}

// Bytes is the number of physical bytes claimed.
func (s *Shadow) Bytes() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}
