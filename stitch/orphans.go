package stitch

import "errors"

// Giving driver objects back: every one at Close (layout.close), and what the driver refuses to take back (an unmap, a release, a free
// or an event destroy that fails) is kept as an orphan, counted in the bytes the engine holds, and
// tried again at every EmptyCache and Close.

// orphan is a driver object the engine could not give back after an error; Close tries again.
type orphan struct {
	h      PhysHandle // physical allocation to release (0: none)
	addr   uintptr    // range to unmap (if mapped) or to free (if h == 0)
	size   uint64
	mapped bool
	ev     Event     // event to destroy (0: none)
	slots  [2]uint64 // first and count of arena slots the orphaned mapping blocks
	chunks []uint64  // arena slots whose chunks the orphaned view range still maps
	part   bool      // a mapping inside a view's range, which another orphan frees: unmapped, nothing more
}

// retryOrphans tries again to give back what an earlier error left behind; it returns the errors
// of what still fails.
func (l *layout) retryOrphans() error {
	kept := l.orphans[:0]
	var errs []error
	keep := func(o orphan, err error) {
		kept = append(kept, o)
		errs = append(errs, err)
	}
	for _, o := range l.orphans {
		if o.ev != 0 {
			if err := l.drv.destroyEvent(o.ev); err != nil {
				keep(o, err)
			}
			continue
		}
		if o.mapped {
			unmapSize := o.size
			if o.chunks != nil {
				unmapSize = uint64(len(o.chunks)) * l.g
			}
			if err := l.drv.unmap(o.addr, unmapSize); err != nil {
				keep(o, err)
				continue
			}
			o.mapped = false
			if l.slots != nil { // nil once closed
				for _, c := range o.chunks {
					l.slots[c].views--
				}
				if o.slots[1] > 0 {
					l.blockSlots(o.slots[0], o.slots[1], false)
				}
			}
			o.chunks, o.slots = nil, [2]uint64{}
			if o.part {
				continue
			}
		}
		if o.h != 0 {
			if err := l.drv.release(o.h); err != nil {
				keep(o, err)
				continue
			}
			l.orphanBytes -= o.size
		} else {
			if err := l.drv.free(o.addr, o.size); err != nil {
				keep(o, err)
				continue
			}
			l.orphanVirt -= o.size
		}
	}
	l.orphans = kept
	return errors.Join(errs...)
}

// destroyEvent destroys event ev, keeping it as an orphan if the driver refuses.
func (l *layout) destroyEvent(ev Event) {
	if err := l.drv.destroyEvent(ev); err != nil {
		l.log.Warn("stitch: destroy event failed; retried later", "err", err)
		l.orphans = append(l.orphans, orphan{ev: ev})
	}
}

// close gives every view, handle and the arena back to the driver and empties the layout; what the
// driver refuses is kept as an orphan for the next Close. It returns the errors of each refusal,
// and those of the retry of every orphan (retryOrphans) apart. Blocks still live become invalid.
func (l *layout) close() (errs []error, orphanErr error) {
	for _, v := range l.views {
		if err := l.unmapView(v); err != nil {
			errs = append(errs, err)
			l.orphans = append(l.orphans, orphan{addr: v.base, size: v.vsize, mapped: true})
			l.orphanVirt += v.vsize
		}
	}
	for _, pa := range l.sortedAllocs() {
		addr, size := l.arenaBase+uintptr(pa.first*l.g), pa.n*l.g
		l.reserved -= size
		l.orphanBytes += size
		if err := l.drv.unmap(addr, size); err != nil {
			errs = append(errs, err)
			l.orphans = append(l.orphans, orphan{h: pa.h, addr: addr, size: size, mapped: true})
			continue
		}
		if err := l.drv.release(pa.h); err != nil {
			errs = append(errs, err)
			l.orphans = append(l.orphans, orphan{h: pa.h, size: size})
			continue
		}
		l.orphanBytes -= size
	}
	l.orphans = append(l.orphans, orphan{addr: l.arenaBase, size: l.arenaSize})
	l.orphanVirt += l.arenaSize
	orphanErr = l.retryOrphans()
	l.arenaSize = 0
	l.blocks.Clear()
	l.pages, l.views, l.allocs, l.slots = nil, nil, nil, nil
	l.loose, l.smallFree, l.owners, l.room, l.roomQueue = l.newLoose(), newFreeSet(), tree{}, l.newRoom(), nil
	l.viewOldest, l.viewNewest, l.viewBytes = nil, nil, 0
	return errs, orphanErr
}
