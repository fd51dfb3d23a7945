package stitch

import (
	"cmp"
	"fmt"
	"slices"
)

// slot is one chunk-sized place of the arena. While present it holds the chunk at offset hoff of
// physical allocation h, mapped at arenaBase + index*G.
type slot struct {
	h       PhysHandle
	hoff    uint64
	present bool
	blocked bool  // an orphaned mapping (a failed rollback) still covers this empty slot
	views   int32 // views (and orphaned view ranges) that map this chunk besides the arena
}

// physAlloc is one driver allocation (one Create: a handle), mapped whole at consecutive arena slots.
type physAlloc struct {
	h        PhysHandle
	first, n uint64 // slots [first, first+n)
}

// growParts is grow of handles of parts chunks each, in arena order.
func (l *layout) growParts(parts []uint64) error {
	n := uint64(0)
	for _, k := range parts {
		n += k
	}
	if l.reserved+l.orphanBytes+n*l.g > l.capacity {
		return fmt.Errorf("stitch: %d more bytes would pass the capacity of %d: %w", n*l.g, l.capacity, ErrOutOfMemory)
	}
	type run struct{ first, n uint64 }
	var runs []run
	need := n
	scanned := l.holeFrom // every hole below it is filled once the runs are made
	if l.holes > 0 {
		for ; scanned < uint64(len(l.slots)) && need > 0; scanned++ {
			i := scanned
			if l.slots[i].present || l.slots[i].blocked {
				continue
			}
			if k := len(runs) - 1; k >= 0 && runs[k].first+runs[k].n == i {
				runs[k].n++
			} else {
				runs = append(runs, run{i, 1})
			}
			need--
		}
	}
	if need > 0 {
		runs = append(runs, run{uint64(len(l.slots)), need})
	}
	var made []physAlloc
	for _, r := range runs {
		// The parts that fall in this run, the one crossing its end cut there.
		var in []uint64
		for left := r.n; left > 0; {
			k := min(parts[0], left)
			in = append(in, k)
			left -= k
			if parts[0] -= k; parts[0] == 0 {
				parts = parts[1:]
			}
		}
		pas, err := l.createRun(r.first, in)
		if err != nil {
			for _, m := range slices.Backward(made) {
				l.undoRun(m, true)
			}
			return err
		}
		made = append(made, pas...)
	}
	if l.holes > 0 {
		l.holeFrom = scanned
	}
	hw := l.highWater()
	var joined span // consecutive handles join the loose set as one range
	for _, pa := range made {
		if end := pa.first + pa.n; end > uint64(len(l.slots)) {
			l.slots = append(l.slots, make([]slot, end-uint64(len(l.slots)))...)
		}
		for i := uint64(0); i < pa.n; i++ {
			s := &l.slots[pa.first+i]
			if !s.present && pa.first+i < hw {
				l.holes--
			}
			*s = slot{h: pa.h, hoff: i * l.g, present: true}
		}
		l.allocs[pa.h] = &physAlloc{h: pa.h, first: pa.first, n: pa.n}
		l.reserved += pa.n * l.g
		if start := pa.first * l.g; start != joined.end {
			if joined.end > joined.start {
				l.loose.insert(joined)
			}
			joined.start = start
		}
		joined.end = (pa.first + pa.n) * l.g
	}
	if joined.end > joined.start {
		l.loose.insert(joined)
	}
	l.peakReserved = max(l.peakReserved, l.reserved)
	return nil
}

// highWater is the number of slots ever used; holes are counted below it.
func (l *layout) highWater() uint64 { return uint64(len(l.slots)) }

// createRun creates the chunks of arena slots from first on as handles of parts chunks each, maps
// each whole at its slots and makes the run accessible with one SetAccess; it leaves nothing behind
// on error.
func (l *layout) createRun(first uint64, parts []uint64) ([]physAlloc, error) {
	n := uint64(0)
	for _, k := range parts {
		n += k
	}
	var made []physAlloc
	undo := func(mapped bool) {
		for _, m := range slices.Backward(made) {
			l.undoRun(m, mapped)
		}
	}
	at := first
	for _, k := range parts {
		h, err := l.drv.create(k * l.g)
		if err != nil {
			undo(true)
			return nil, err
		}
		pa := physAlloc{h: h, first: at, n: k}
		if err := l.drv.mapRange(l.arenaBase+uintptr(at*l.g), k*l.g, h, 0); err != nil {
			l.undoRun(pa, false)
			undo(true)
			return nil, err
		}
		made = append(made, pa)
		at += k
	}
	if err := l.drv.setAccess(l.arenaBase+uintptr(first*l.g), n*l.g); err != nil {
		undo(true)
		return nil, err
	}
	return made, nil
}

// undoRun unmaps (if mapped) and releases a run made by createRun; what fails is kept as an orphan.
func (l *layout) undoRun(pa physAlloc, mapped bool) {
	if mapped {
		if err := l.drv.unmap(l.arenaBase+uintptr(pa.first*l.g), pa.n*l.g); err != nil {
			l.log.Error("stitch: unmap during rollback failed; chunk kept as orphan", "err", err)
			l.orphans = append(l.orphans, orphan{h: pa.h, addr: l.arenaBase + uintptr(pa.first*l.g), size: pa.n * l.g,
				mapped: true, slots: [2]uint64{pa.first, pa.n}})
			l.orphanBytes += pa.n * l.g
			l.blockSlots(pa.first, pa.n, true)
			return
		}
	}
	if err := l.drv.release(pa.h); err != nil {
		l.log.Error("stitch: release during rollback failed; chunk kept as orphan", "err", err)
		l.orphans = append(l.orphans, orphan{h: pa.h, size: pa.n * l.g})
		l.orphanBytes += pa.n * l.g
	}
}

// blockSlots marks arena slots [first, first+n) as covered (or no longer) by an orphaned mapping,
// so that grow does not map over it.
func (l *layout) blockSlots(first, n uint64, on bool) {
	for uint64(len(l.slots)) < first+n {
		l.slots = append(l.slots, slot{})
		l.holes++
	}
	for i := first; i < first+n; i++ {
		l.slots[i].blocked = on
	}
	if !on {
		l.holeFrom = min(l.holeFrom, first)
	}
}

// releasable reports whether physical allocation pa can be given back: every byte loose, no view
// mapping any of its chunks.
func (l *layout) releasable(pa *physAlloc) bool {
	for i := pa.first; i < pa.first+pa.n; i++ {
		if l.slots[i].views != 0 {
			return false
		}
	}
	_, ok := l.loose.containing(pa.first*l.g, (pa.first+pa.n)*l.g)
	return ok
}

// releaseAlloc unmaps pa from the arena and releases it. The caller checked releasable.
func (l *layout) releaseAlloc(pa *physAlloc) error {
	addr, size := l.arenaBase+uintptr(pa.first*l.g), pa.n*l.g
	if err := l.drv.unmap(addr, size); err != nil {
		return fmt.Errorf("stitch: release chunks at arena offset %d: %w", pa.first*l.g, err)
	}
	stillMapped := false
	if err := l.drv.release(pa.h); err != nil {
		// Put it back as it was, so the engine stays consistent.
		if merr := l.drv.mapRange(addr, size, pa.h, 0); merr == nil {
			if aerr := l.drv.setAccess(addr, size); aerr == nil {
				return fmt.Errorf("stitch: release chunks at arena offset %d: %w", pa.first*l.g, err)
			}
			// Mapped but not accessible: undo the map, or keep it mapped and its slots blocked.
			stillMapped = l.drv.unmap(addr, size) != nil
		}
		o := orphan{h: pa.h, size: size}
		if stillMapped {
			o.addr, o.mapped, o.slots = addr, true, [2]uint64{pa.first, pa.n}
		}
		l.orphans = append(l.orphans, o)
		l.orphanBytes += size
		l.log.Error("stitch: physical allocation orphaned after failed release", "err", err)
	}
	l.loose.take(pa.first*l.g, (pa.first+pa.n)*l.g)
	for i := pa.first; i < pa.first+pa.n; i++ {
		l.slots[i] = slot{}
		l.holes++
	}
	l.holeFrom = min(l.holeFrom, pa.first)
	if stillMapped {
		l.blockSlots(pa.first, pa.n, true)
	}
	delete(l.allocs, pa.h)
	l.reserved -= size
	return nil
}

func (l *layout) sortedAllocs() []*physAlloc {
	pas := make([]*physAlloc, 0, len(l.allocs))
	for _, pa := range l.allocs {
		pas = append(pas, pa)
	}
	slices.SortFunc(pas, func(a, b *physAlloc) int { return cmp.Compare(a.first, b.first) })
	return pas
}
