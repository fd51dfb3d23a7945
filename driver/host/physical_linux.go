package host

import (
	"cmp"
	"fmt"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/gmlake/gmlake/stitch"
)

// region is one physical allocation: [offset, offset+size) of the memfd.
type region struct {
	offset, size uint64
	mappings     int // how many live mappings use part of it; Release needs 0
}

// span is a free stretch [offset, offset+size) inside the memfd.
type span struct{ offset, size uint64 }

// fileSpace manages the memfd's offsets: the file size, the bytes handed out, and the holes left by
// released regions, sorted by offset and merged with their neighbours.
type fileSpace struct {
	size  uint64
	inUse uint64
	holes []span
}

// take finds room for size bytes: the smallest hole that fits (its head is used), or the end of the
// file. grow reports whether the file must be extended to newSize first.
func (f *fileSpace) take(size uint64) (offset uint64, grow bool) {
	best := -1
	for i, h := range f.holes {
		if h.size >= size && (best < 0 || h.size < f.holes[best].size) {
			best = i
		}
	}
	if best < 0 {
		return f.size, true
	}
	h := &f.holes[best]
	offset = h.offset
	h.offset += size
	h.size -= size
	if h.size == 0 {
		f.holes = slices.Delete(f.holes, best, best+1)
	}
	return offset, false
}

// give returns [offset, offset+size) and merges it with adjacent holes. It reports the merged hole.
func (f *fileSpace) give(offset, size uint64) span {
	i, _ := slices.BinarySearchFunc(f.holes, offset, func(h span, off uint64) int {
		return cmp.Compare(h.offset, off)
	})
	f.holes = slices.Insert(f.holes, i, span{offset, size})
	if i+1 < len(f.holes) && f.holes[i].offset+f.holes[i].size == f.holes[i+1].offset {
		f.holes[i].size += f.holes[i+1].size
		f.holes = slices.Delete(f.holes, i+1, i+2)
	}
	if i > 0 && f.holes[i-1].offset+f.holes[i-1].size == f.holes[i].offset {
		f.holes[i-1].size += f.holes[i].size
		f.holes = slices.Delete(f.holes, i, i+1)
		i--
	}
	return f.holes[i]
}

// Create hands out size bytes of the memfd, reusing a released region when one fits.
func (d *Driver) Create(size uint64) (stitch.PhysHandle, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return 0, fmt.Errorf("create: %w", ErrClosed)
	}
	if err := d.checkSize(size); err != nil {
		return 0, fmt.Errorf("create: %w", err)
	}
	if size > d.capacity-d.file.inUse {
		return 0, fmt.Errorf("host driver: create %d bytes: %w (%d of %d bytes in use)",
			size, stitch.ErrOutOfMemory, d.file.inUse, d.capacity)
	}
	if _, free, err := d.room(); err != nil {
		return 0, fmt.Errorf("host driver: create %d bytes: %w", size, err)
	} else if size > free {
		return 0, fmt.Errorf("host driver: create %d bytes: %w (the machine can back %d more bytes; %d in use here)",
			size, stitch.ErrOutOfMemory, free, d.file.inUse)
	}
	offset, grow := d.file.take(size)
	if grow {
		if err := unix.Ftruncate(d.fd, int64(offset+size)); err != nil {
			return 0, fmt.Errorf("host driver: create %d bytes: ftruncate: %w", size, err)
		}
		d.file.size = offset + size
	}
	d.file.inUse += size
	h := d.nextHandle
	d.nextHandle++
	d.regions[h] = &region{offset: offset, size: size}
	d.log.Debug("host create", "handle", h, "offset", offset, "size", size)
	return h, nil
}

// Release gives the region of h back to the kernel: the file shrinks when the region ends it,
// otherwise its pages are punched out.
func (d *Driver) Release(h stitch.PhysHandle) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("release: %w", ErrClosed)
	}
	r, ok := d.regions[h]
	if !ok {
		return fmt.Errorf("release %d: %w", h, ErrUnknownHandle)
	}
	if r.mappings > 0 {
		return fmt.Errorf("release %d: %w (%d mappings)", h, ErrStillMapped, r.mappings)
	}
	if err := punchHole(d.fd, r.offset, r.size); err != nil {
		return fmt.Errorf("host driver: release %d: fallocate: %w", h, err)
	}
	delete(d.regions, h)
	d.file.inUse -= r.size
	if hole := d.file.give(r.offset, r.size); hole.offset+hole.size == d.file.size {
		// The hole is the file's tail: shrink the file instead of keeping a punched tail around.
		if err := unix.Ftruncate(d.fd, int64(hole.offset)); err != nil {
			d.log.Warn("host release: shrinking the memfd failed; its tail stays punched", "err", err)
		} else {
			d.file.size = hole.offset
			d.file.holes = d.file.holes[:len(d.file.holes)-1]
		}
	}
	d.log.Debug("host release", "handle", h, "offset", r.offset, "size", r.size)
	return nil
}
