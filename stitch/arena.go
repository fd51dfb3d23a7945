package stitch

import (
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

// growthExtra is how many chunks beyond the n a growth needs to create as headroom: as many as the
// current iteration has grown so far (since the last MarkIteration; since New without marks), so that
// an iteration that keeps growing does it in ever fewer, larger steps, but at most the growth slack
// times the memory reserved; before the first memo, up to the warm-up growth (WithWarmupGrowth);
// in the first iteration, its bytes ahead (firstAhead); never past the capacity.
func (e *Engine) growthExtra(n uint64) uint64 {
	limit := min(uint64(float64(e.reserved)*e.cfg.growthSlack)/e.g, e.grownIter/e.g)
	least := e.firstAhead() // the bytes a growth makes at the least
	if len(e.memos) == 0 {
		least = max(least, e.cfg.warmupGrowth)
	}
	if unit := (least + e.g - 1) / e.g; n < unit {
		limit = max(limit, unit-n)
	}
	used := e.reserved + e.orphanBytes + n*e.g
	if used >= e.capacity {
		return 0
	}
	return min(limit, (e.capacity-used)/e.g)
}

// firstMarkedIteration reports whether the engine is building the job's memory in the caller's
// first marked iteration (callerMarks, before seenIteration: request by request).
func (e *Engine) firstMarkedIteration() bool { return e.callerMarks && !e.seenIteration }

// firstIterationFar reports whether the engine is building the job's first iteration far from
// the capacity: the caller's first marked iteration (firstMarkedIteration) or, never marked, the
// iterations before one is seen once frees show the training loop (unmarkedTraining); and the
// memory held at most 1/firstAheadFarShare of the room below the capacity. There a growth makes
// bytes ahead of its request (firstAhead); near the capacity, where a minimum capacity is
// decided, it does not.
func (e *Engine) firstIterationFar() bool {
	if !e.firstMarkedIteration() && !e.unmarkedTraining() {
		return false
	}
	held := e.reserved + e.orphanBytes
	return held < e.capacity && held <= (e.capacity-held)/firstAheadFarShare
}

// unmarkedTraining reports whether the engine, never marked and before it has seen an iteration,
// serves a training loop rather than a job's setup (trainingSeen, noteFreeRate). The setup of a
// job that will mark comes before its first mark, so the rule reaches it too; a setup frees
// little (tunables.go).
func (e *Engine) unmarkedTraining() bool {
	return !e.callerMarks && !e.seenIteration && e.trainingSeen
}

// noteFreeRate closes, at a growth, the window of requests over which the rate of frees is judged
// (trainingSeen) once it holds trainingWindow requests or more, and starts the next: frees at
// 1/trainingFreeShare of the rate of requests or more show the training loop. Judged at growths
// only (before an iteration is seen, never marked), so the rate costs the requests and frees
// nothing: the frees are the requests served less the live blocks.
func (e *Engine) noteFreeRate() {
	if e.callerMarks || e.seenIteration || e.trainingSeen {
		return
	}
	served := uint64(0)
	for _, n := range e.outcomes {
		served += n
	}
	if n := served - e.trainingFrom; n >= trainingWindow {
		freed := served - uint64(e.liveBlocks)
		e.trainingSeen = (freed-e.trainingFreed)*trainingFreeShare >= n
		e.trainingFrom, e.trainingFreed = served, freed
	}
}

// firstAhead is how many bytes a growth creates at the least in the job's first iteration far
// from the capacity (firstIterationFar): 1/firstAheadRoomShare of what the capacity
// still allows beyond the memory held, but no more than the memory held (a small job on a large
// device at most doubles what it holds); 0 otherwise, with fixed handles and with WithExactGrowth.
// The bytes ahead are loose memory that the next requests take, so the first iteration grows in a
// few large steps where it made one per request and stitched what the loose memory could not
// hold in one range (tunables.go says what it was measured to cost and save).
func (e *Engine) firstAhead() uint64 {
	if e.cfg.handleSize > 0 || e.cfg.exactGrowth || !e.firstIterationFar() {
		return 0
	}
	held := e.reserved + e.orphanBytes
	return min((e.capacity-held)/firstAheadRoomShare, held)
}

// peakAhead is how many chunks beyond need a growth creates once the engine has seen an iteration
// (seenIteration): as many as the current iteration has grown so far (grownIter), at most
// deficitBytes of what the capacity allows beyond the need, and 0 with fixed handles.
// An iteration that passes the job's peak (a longer sequence, a larger batch) then grows in a few
// ever larger handles, where it would make one per request. The bytes ahead are loose memory that
// the iteration's next requests take; tunables.go says what it was measured to cost and save.
func (e *Engine) peakAhead(need uint64) uint64 {
	if !e.seenIteration || e.cfg.handleSize > 0 {
		return 0
	}
	used := e.reserved + e.orphanBytes + need*e.g
	if used >= e.capacity {
		return 0
	}
	return min(e.grownIter, e.deficitBytes(e.capacity-used)) / e.g
}

// grow creates n chunks in free arena slots (holes left by EmptyCache first, lowest first, then
// past the end), the first need of which a request lacks (with the bytes ahead of a new peak,
// peakAhead), as handles sized by handleParts, and adds them to the loose set. The search for
// holes starts at holeFrom, below which every hole has been filled, so that a growth after a
// release near the arena's end does not walk the slots before it. On any driver error everything
// created by this call is undone.
func (e *Engine) grow(n, need uint64) error {
	if !e.seenIteration && e.repeatSeen && e.ctxNext-e.grownAtRequest >= e.grownAtRequest && (!e.callerMarks || e.deepMarked) {
		e.seenIteration = true // unmarked: see seenIteration (engine.go)
	}
	err := e.growParts(e.handleParts(n, need))
	if err == nil {
		e.grownAtRequest = e.ctxNext
	}
	return err
}

// growParts is grow of handles of parts chunks each, in arena order.
func (e *Engine) growParts(parts []uint64) error {
	n := uint64(0)
	for _, k := range parts {
		n += k
	}
	if e.reserved+e.orphanBytes+n*e.g > e.capacity {
		return fmt.Errorf("stitch: %d more bytes would pass the capacity of %d: %w", n*e.g, e.capacity, ErrOutOfMemory)
	}
	type run struct{ first, n uint64 }
	var runs []run
	need := n
	scanned := e.holeFrom // every hole below it is filled once the runs are made
	if e.holes > 0 {
		for ; scanned < uint64(len(e.slots)) && need > 0; scanned++ {
			i := scanned
			if e.slots[i].present || e.slots[i].blocked {
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
		runs = append(runs, run{uint64(len(e.slots)), need})
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
		pas, err := e.createRun(r.first, in)
		if err != nil {
			for _, m := range slices.Backward(made) {
				e.undoRun(m, true)
			}
			return err
		}
		made = append(made, pas...)
	}
	if e.holes > 0 {
		e.holeFrom = scanned
	}
	hw := e.highWater()
	var joined span // consecutive handles join the loose set as one range
	for _, pa := range made {
		if end := pa.first + pa.n; end > uint64(len(e.slots)) {
			e.slots = append(e.slots, make([]slot, end-uint64(len(e.slots)))...)
		}
		for i := uint64(0); i < pa.n; i++ {
			s := &e.slots[pa.first+i]
			if !s.present && pa.first+i < hw {
				e.holes--
			}
			*s = slot{h: pa.h, hoff: i * e.g, present: true}
		}
		e.allocs[pa.h] = &physAlloc{h: pa.h, first: pa.first, n: pa.n}
		e.reserved += pa.n * e.g
		if start := pa.first * e.g; start != joined.end {
			if joined.end > joined.start {
				e.loose.insert(joined)
			}
			joined.start = start
		}
		joined.end = (pa.first + pa.n) * e.g
	}
	if joined.end > joined.start {
		e.loose.insert(joined)
	}
	e.peakReserved = max(e.peakReserved, e.reserved)
	return nil
}

// highWater is the number of slots ever used; holes are counted below it.
func (e *Engine) highWater() uint64 { return uint64(len(e.slots)) }

// createRun creates the chunks of arena slots from first on as handles of parts chunks each, maps
// each whole at its slots and makes the run accessible with one SetAccess; it leaves nothing behind
// on error.
func (e *Engine) createRun(first uint64, parts []uint64) ([]physAlloc, error) {
	n := uint64(0)
	for _, k := range parts {
		n += k
	}
	var made []physAlloc
	undo := func(mapped bool) {
		for _, m := range slices.Backward(made) {
			e.undoRun(m, mapped)
		}
	}
	at := first
	for _, k := range parts {
		h, err := e.drv.create(k * e.g)
		if err != nil {
			undo(true)
			return nil, err
		}
		pa := physAlloc{h: h, first: at, n: k}
		if err := e.drv.mapRange(e.arenaBase+uintptr(at*e.g), k*e.g, h, 0); err != nil {
			e.undoRun(pa, false)
			undo(true)
			return nil, err
		}
		made = append(made, pa)
		at += k
	}
	if err := e.drv.setAccess(e.arenaBase+uintptr(first*e.g), n*e.g); err != nil {
		undo(true)
		return nil, err
	}
	return made, nil
}

// undoRun unmaps (if mapped) and releases a run made by createRun; what fails is kept as an orphan.
func (e *Engine) undoRun(pa physAlloc, mapped bool) {
	if mapped {
		if err := e.drv.unmap(e.arenaBase+uintptr(pa.first*e.g), pa.n*e.g); err != nil {
			e.log.Error("stitch: unmap during rollback failed; chunk kept as orphan", "err", err)
			e.orphans = append(e.orphans, orphan{h: pa.h, addr: e.arenaBase + uintptr(pa.first*e.g), size: pa.n * e.g,
				mapped: true, slots: [2]uint64{pa.first, pa.n}})
			e.orphanBytes += pa.n * e.g
			e.blockSlots(pa.first, pa.n, true)
			return
		}
	}
	if err := e.drv.release(pa.h); err != nil {
		e.log.Error("stitch: release during rollback failed; chunk kept as orphan", "err", err)
		e.orphans = append(e.orphans, orphan{h: pa.h, size: pa.n * e.g})
		e.orphanBytes += pa.n * e.g
	}
}

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

// blockSlots marks arena slots [first, first+n) as covered (or no longer) by an orphaned mapping,
// so that grow does not map over it.
func (e *Engine) blockSlots(first, n uint64, on bool) {
	for uint64(len(e.slots)) < first+n {
		e.slots = append(e.slots, slot{})
		e.holes++
	}
	for i := first; i < first+n; i++ {
		e.slots[i].blocked = on
	}
	if !on {
		e.holeFrom = min(e.holeFrom, first)
	}
}

// releasable reports whether physical allocation pa can be given back: every byte loose, no view
// mapping any of its chunks.
func (e *Engine) releasable(pa *physAlloc) bool {
	for i := pa.first; i < pa.first+pa.n; i++ {
		if e.slots[i].views != 0 {
			return false
		}
	}
	_, ok := e.loose.containing(pa.first*e.g, (pa.first+pa.n)*e.g)
	return ok
}

// releaseAlloc unmaps pa from the arena and releases it. The caller checked releasable.
func (e *Engine) releaseAlloc(pa *physAlloc) error {
	addr, size := e.arenaBase+uintptr(pa.first*e.g), pa.n*e.g
	if err := e.drv.unmap(addr, size); err != nil {
		return fmt.Errorf("stitch: release chunks at arena offset %d: %w", pa.first*e.g, err)
	}
	stillMapped := false
	if err := e.drv.release(pa.h); err != nil {
		// Put it back as it was, so the engine stays consistent.
		if merr := e.drv.mapRange(addr, size, pa.h, 0); merr == nil {
			if aerr := e.drv.setAccess(addr, size); aerr == nil {
				return fmt.Errorf("stitch: release chunks at arena offset %d: %w", pa.first*e.g, err)
			}
			// Mapped but not accessible: undo the map, or keep it mapped and its slots blocked.
			stillMapped = e.drv.unmap(addr, size) != nil
		}
		o := orphan{h: pa.h, size: size}
		if stillMapped {
			o.addr, o.mapped, o.slots = addr, true, [2]uint64{pa.first, pa.n}
		}
		e.orphans = append(e.orphans, o)
		e.orphanBytes += size
		e.log.Error("stitch: physical allocation orphaned after failed release", "err", err)
	}
	e.loose.take(pa.first*e.g, (pa.first+pa.n)*e.g)
	for i := pa.first; i < pa.first+pa.n; i++ {
		e.slots[i] = slot{}
		e.holes++
	}
	e.holeFrom = min(e.holeFrom, pa.first)
	if stillMapped {
		e.blockSlots(pa.first, pa.n, true)
	}
	delete(e.allocs, pa.h)
	e.reserved -= size
	return nil
}
