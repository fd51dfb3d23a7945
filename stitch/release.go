package stitch

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// EmptyCache waits for the device, then releases every cached stitched range and every physical
// allocation that no live block uses.
func (e *Engine) EmptyCache() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	return e.emptyCache()
}

func (e *Engine) emptyCache() error {
	_ = e.retryOrphans() // first, so that chunks an orphaned range maps become releasable
	if err := e.synchronize(); err != nil {
		return fmt.Errorf("stitch: synchronize before releasing memory: %w", err)
	}
	e.flushSmallPool()
	e.releaseEmptyPages()
	e.flushUntil(&e.largeAge, ^uint64(0))
	var errs []error
	if err := e.releaseIdleViews(); err != nil {
		errs = append(errs, err)
	}
	for _, pa := range e.releaseCandidates() {
		if e.releasable(pa) {
			if err := e.releaseAlloc(pa); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := e.retryOrphans(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (e *Engine) sortedAllocs() []*physAlloc {
	pas := make([]*physAlloc, 0, len(e.allocs))
	for _, pa := range e.allocs {
		pas = append(pas, pa)
	}
	slices.SortFunc(pas, func(a, b *physAlloc) int { return cmp.Compare(a.first, b.first) })
	return pas
}

// retryOrphans tries again to give back what an earlier error left behind; it returns the errors
// of what still fails.
func (e *Engine) retryOrphans() error {
	kept := e.orphans[:0]
	var errs []error
	keep := func(o orphan, err error) {
		kept = append(kept, o)
		errs = append(errs, err)
	}
	for _, o := range e.orphans {
		if o.ev != 0 {
			if err := e.drv.destroyEvent(o.ev); err != nil {
				keep(o, err)
			}
			continue
		}
		if o.mapped {
			unmapSize := o.size
			if o.chunks != nil {
				unmapSize = uint64(len(o.chunks)) * e.g
			}
			if err := e.drv.unmap(o.addr, unmapSize); err != nil {
				keep(o, err)
				continue
			}
			o.mapped = false
			if !e.closed && e.slots != nil {
				for _, c := range o.chunks {
					e.slots[c].views--
				}
				if o.slots[1] > 0 {
					e.blockSlots(o.slots[0], o.slots[1], false)
				}
			}
			o.chunks, o.slots = nil, [2]uint64{}
			if o.part {
				continue
			}
		}
		if o.h != 0 {
			if err := e.drv.release(o.h); err != nil {
				keep(o, err)
				continue
			}
			e.orphanBytes -= o.size
		} else {
			if err := e.drv.free(o.addr, o.size); err != nil {
				keep(o, err)
				continue
			}
			e.orphanVirt -= o.size
		}
	}
	e.orphans = kept
	return errors.Join(errs...)
}

// Reset frees every live block, then releases memory as EmptyCache does.
func (e *Engine) Reset() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	e.freeAll()
	return e.emptyCache()
}

func (e *Engine) freeAll() {
	var live []*block
	for _, b := range e.blocks.All() {
		if b.live {
			live = append(live, b)
		}
	}
	slices.SortFunc(live, func(a, b *block) int { return cmp.Compare(a.ptr, b.ptr) })
	for _, b := range live {
		e.cache(b)
	}
}

// Close gives every driver object back. Blocks still live become invalid. Every later call fails
// with ErrClosed, except Close itself while something could not be given back: it tries again.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		if len(e.orphans) == 0 {
			return ErrClosed
		}
		if err := e.retryOrphans(); err != nil {
			return fmt.Errorf("stitch: %d driver objects still cannot be given back: %w", len(e.orphans), err)
		}
		return nil
	}
	var errs []error
	e.freeAll()
	err := e.emptyCache()
	if err != nil && e.synchronize() == nil {
		// The wait for the device (or a release) failed: once more, before memory is given back
		// while the device may still use it.
		err = e.emptyCache()
	}
	if err != nil {
		errs = append(errs, err)
	}
	// Whatever is still held (after a failure above, or cached blocks waiting for events) goes now;
	// what the driver refuses is kept as an orphan for the next Close.
	e.dropClockEvents()
	for _, v := range e.views {
		if err := e.unmapView(v); err != nil {
			errs = append(errs, err)
			e.orphans = append(e.orphans, orphan{addr: v.base, size: v.vsize, mapped: true})
			e.orphanVirt += v.vsize
		}
	}
	for _, pa := range e.sortedAllocs() {
		addr, size := e.arenaBase+uintptr(pa.first*e.g), pa.n*e.g
		e.reserved -= size
		e.orphanBytes += size
		if err := e.drv.unmap(addr, size); err != nil {
			errs = append(errs, err)
			e.orphans = append(e.orphans, orphan{h: pa.h, addr: addr, size: size, mapped: true})
			continue
		}
		if err := e.drv.release(pa.h); err != nil {
			errs = append(errs, err)
			e.orphans = append(e.orphans, orphan{h: pa.h, size: size})
			continue
		}
		e.orphanBytes -= size
	}
	e.orphans = append(e.orphans, orphan{addr: e.arenaBase, size: e.arenaSize})
	e.orphanVirt += e.arenaSize
	orphanErr := e.retryOrphans()
	e.closed = true
	e.arenaSize = 0
	e.blocks.Clear()
	e.pages, e.views, e.allocs, e.slots = nil, nil, nil, nil
	e.loose, e.smallFree, e.owners, e.room, e.roomQueue = e.newLoose(), newFreeSet(), tree{}, e.newRoom(), nil
	e.largeAge, e.smallAge = ageList{}, ageList{}
	e.hotLists.Clear()
	e.otherLists = nil
	e.viewOldest, e.viewNewest, e.viewBytes = nil, nil, 0
	e.live, e.liveBlocks = 0, 0
	if len(e.orphans) > 0 {
		errs = append(errs, fmt.Errorf("stitch: %d driver objects could not be given back; Close again to retry: %w", len(e.orphans), orphanErr))
	}
	return errors.Join(errs...)
}
