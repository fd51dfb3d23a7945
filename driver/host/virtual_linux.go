package host

import (
	"cmp"
	"fmt"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/gmlake/gmlake/stitch"
)

// vrange is a reserved virtual range and what is mapped in it.
type vrange struct {
	size     uint64
	mappings []mapping // sorted by offset, never overlapping
}

// mapping is [offset, offset+size) of a range backed by region handle from its byte regionOffset.
type mapping struct {
	offset, size uint64
	handle       stitch.PhysHandle
	regionOffset uint64
}

func (m mapping) end() uint64 { return m.offset + m.size }

// Reserve reserves size bytes of PROT_NONE address space aligned to the granularity.
func (d *Driver) Reserve(size uint64) (uintptr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return 0, fmt.Errorf("reserve: %w", ErrClosed)
	}
	if err := d.checkSize(size); err != nil {
		return 0, fmt.Errorf("reserve: %w", err)
	}
	base, err := reserve(size, d.granularity)
	if err != nil {
		return 0, fmt.Errorf("host driver: reserve %d bytes: mmap: %w", size, mapErr(err))
	}
	d.ranges[base] = &vrange{size: size}
	i, _ := slices.BinarySearch(d.rangeBases, base)
	d.rangeBases = slices.Insert(d.rangeBases, i, base)
	d.log.Debug("host reserve", "addr", base, "size", size)
	return base, nil
}

// Free unmaps the reserved range [addr, addr+size), which must be exactly a range Reserve returned,
// with nothing mapped in it.
func (d *Driver) Free(addr uintptr, size uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("free: %w", ErrClosed)
	}
	r, ok := d.ranges[addr]
	if !ok || r.size != size {
		return fmt.Errorf("free %#x+%d: %w", addr, size, ErrUnknownRange)
	}
	if len(r.mappings) > 0 {
		return fmt.Errorf("free %#x+%d: %w (%d mappings)", addr, size, ErrStillMapped, len(r.mappings))
	}
	if err := munmap(addr, size); err != nil {
		return fmt.Errorf("host driver: free %#x+%d: munmap: %w", addr, size, err)
	}
	delete(d.ranges, addr)
	i, _ := slices.BinarySearch(d.rangeBases, addr)
	d.rangeBases = slices.Delete(d.rangeBases, i, i+1)
	d.log.Debug("host free", "addr", addr, "size", size)
	return nil
}

// Map maps [offset, offset+size) of region h at addr, which must lie in a reserved range where
// nothing is mapped yet.
func (d *Driver) Map(addr uintptr, size uint64, h stitch.PhysHandle, offset uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("map: %w", ErrClosed)
	}
	base, r, err := d.locate(addr, size)
	if err != nil {
		return fmt.Errorf("map %#x+%d: %w", addr, size, err)
	}
	if offset%d.granularity != 0 {
		return fmt.Errorf("map %#x+%d: %w: region offset %d", addr, size, ErrMisaligned, offset)
	}
	reg, ok := d.regions[h]
	if !ok {
		return fmt.Errorf("map %#x+%d: %w: %d", addr, size, ErrUnknownHandle, h)
	}
	if offset > reg.size || size > reg.size-offset {
		return fmt.Errorf("map %#x+%d: %w: [%d, %d) of a %d-byte region", addr, size, ErrOutOfBounds,
			offset, offset+size, reg.size)
	}
	m := mapping{offset: uint64(addr - base), size: size, handle: h, regionOffset: offset}
	i, _ := slices.BinarySearchFunc(r.mappings, m.offset, func(x mapping, off uint64) int {
		return cmp.Compare(x.offset, off)
	})
	if (i > 0 && r.mappings[i-1].end() > m.offset) || (i < len(r.mappings) && r.mappings[i].offset < m.end()) {
		return fmt.Errorf("map %#x+%d: %w", addr, size, ErrOverlap)
	}
	prot := unix.PROT_READ | unix.PROT_WRITE
	if d.strictAccess {
		prot = unix.PROT_NONE
	}
	if err := mapShared(addr, size, d.fd, reg.offset+offset, prot); err != nil {
		return fmt.Errorf("host driver: map %#x+%d: mmap: %w", addr, size, mapErr(err))
	}
	r.mappings = slices.Insert(r.mappings, i, m)
	reg.mappings++
	d.log.Debug("host map", "addr", addr, "size", size, "handle", h, "offset", offset)
	return nil
}

// Unmap removes the mappings in [addr, addr+size), which must cover each of them whole, and leaves
// the addresses reserved.
func (d *Driver) Unmap(addr uintptr, size uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("unmap: %w", ErrClosed)
	}
	base, r, err := d.locate(addr, size)
	if err != nil {
		return fmt.Errorf("unmap %#x+%d: %w", addr, size, err)
	}
	lo, hi := uint64(addr-base), uint64(addr-base)+size
	first, last := r.overlapping(lo, hi)
	if first == last {
		return fmt.Errorf("unmap %#x+%d: %w: nothing mapped there", addr, size, ErrNotMapped)
	}
	if r.mappings[first].offset < lo || r.mappings[last-1].end() > hi {
		return fmt.Errorf("unmap %#x+%d: %w: it would cut a mapping in two", addr, size, ErrNotMapped)
	}
	if err := rereserve(addr, size); err != nil {
		return fmt.Errorf("host driver: unmap %#x+%d: mmap: %w", addr, size, mapErr(err))
	}
	for _, m := range r.mappings[first:last] {
		d.regions[m.handle].mappings--
	}
	r.mappings = slices.Delete(r.mappings, first, last)
	d.log.Debug("host unmap", "addr", addr, "size", size)
	return nil
}

// SetAccess checks that [addr, addr+size) is wholly mapped and, with WithStrictAccess, makes it
// readable and writable.
func (d *Driver) SetAccess(addr uintptr, size uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("set_access: %w", ErrClosed)
	}
	base, r, err := d.locate(addr, size)
	if err != nil {
		return fmt.Errorf("set_access %#x+%d: %w", addr, size, err)
	}
	lo, hi := uint64(addr-base), uint64(addr-base)+size
	first, last := r.overlapping(lo, hi)
	covered := lo
	for _, m := range r.mappings[first:last] {
		if m.offset > covered {
			break
		}
		covered = m.end()
	}
	if covered < hi {
		return fmt.Errorf("set_access %#x+%d: %w: hole at %#x", addr, size, ErrNotMapped, base+uintptr(covered))
	}
	if d.strictAccess {
		if err := mprotect(addr, size, unix.PROT_READ|unix.PROT_WRITE); err != nil {
			return fmt.Errorf("host driver: set_access %#x+%d: mprotect: %w", addr, size, mapErr(err))
		}
	}
	return nil
}

// locate validates [addr, addr+size) and finds the reserved range that holds it.
func (d *Driver) locate(addr uintptr, size uint64) (uintptr, *vrange, error) {
	if err := d.checkSize(size); err != nil {
		return 0, nil, err
	}
	if uint64(addr)%d.granularity != 0 {
		return 0, nil, fmt.Errorf("%w: address %#x", ErrMisaligned, addr)
	}
	i, found := slices.BinarySearch(d.rangeBases, addr)
	if !found {
		i--
	}
	if i < 0 {
		return 0, nil, ErrUnknownRange
	}
	base := d.rangeBases[i]
	r := d.ranges[base]
	off := uint64(addr - base)
	if off >= r.size {
		return 0, nil, ErrUnknownRange
	}
	if size > r.size-off {
		return 0, nil, fmt.Errorf("%w: runs %d bytes past the end of the range at %#x", ErrOutOfBounds,
			size-(r.size-off), base)
	}
	return base, r, nil
}

// overlapping returns the index range [first, last) of the mappings that intersect [lo, hi).
func (r *vrange) overlapping(lo, hi uint64) (first, last int) {
	first, _ = slices.BinarySearchFunc(r.mappings, lo, func(m mapping, off uint64) int {
		return cmp.Compare(m.end(), off+1) // first mapping whose end is > lo
	})
	last = first
	for last < len(r.mappings) && r.mappings[last].offset < hi {
		last++
	}
	return first, last
}
