package stitch

import "math"

// idleWindow is a place for a block of r bytes that no live block uses: bytes [off, off+r) of the
// arena (v == nil) or of view v. The cached blocks overlapping it must be flushed to take it.
type idleWindow struct {
	v    *view
	off  uint64
	cost uint64 // bytes of cached blocks overlapping the window: what taking it flushes
	run  uint64 // length of the idle run holding the window
	addr uint64 // arena offset of the window's first byte
}

// better orders idle windows: fewer cached bytes flushed, then the tightest run, then the lowest
// address, then the arena before a view: canonical, so that a repeating script chooses the same.
func (w idleWindow) better(o idleWindow) bool {
	switch {
	case w.cost != o.cost:
		return w.cost < o.cost
	case w.run != o.run:
		return w.run < o.run
	case w.addr != o.addr:
		return w.addr < o.addr
	}
	return w.v == nil && o.v != nil
}

// runTracker gathers maximal runs of idle bytes (loose, or owned by idle cached blocks) from
// segments fed in order, and hands each run of at least r bytes to found, with the run's segments.
type runTracker struct {
	r          uint64
	open       bool
	start, end uint64
	segs       []idleSeg // of the open run
	found      func(start, end uint64, segs []idleSeg)
	// minLoose, if set, is the fewest loose bytes that an arena range fed by idleRunsIn must hold
	// for a window there to matter (lossBound); a range with fewer is passed over unwalked.
	minLoose func() uint64
}

// idleSeg is a piece of an idle run: loose bytes (cost 0) or the bytes of a cached block (cost:
// the block's size, what flushing it gives up).
type idleSeg struct {
	start, end, cost uint64
}

func (t *runTracker) extend(start, end, cost uint64) {
	if end <= start {
		return
	}
	if !t.open || t.end != start {
		t.close()
		t.open, t.start = true, start
	}
	t.end = end
	t.segs = append(t.segs, idleSeg{start: start, end: end, cost: cost})
}

func (t *runTracker) close() {
	if t.open && t.end-t.start >= t.r {
		t.found(t.start, t.end, t.segs)
	}
	t.open = false
	t.segs = t.segs[:0]
}

// windowCost sums the cost of the segments overlapping [start, end).
func windowCost(segs []idleSeg, start, end uint64) uint64 {
	var c uint64
	for _, s := range segs {
		if s.start < end && s.end > start {
			c += s.cost
		}
	}
	return c
}

// findIdle looks for the window of r bytes that no live block uses and whose taking flushes the
// fewest cached bytes: in the arena, and only when the arena holds none, in every view. A miss
// then repurposes only what it needs and keeps the rest of the cache for exact matches; and where
// the arena cannot serve it, a request reuses a stitched range an earlier request made instead of
// mapping a new one. An arena window makes a primitive block, which maps nothing either, so a
// view's window is not weighed against it. Weighing them (the best of both), measured on the 20
// traces of the placement check (gmlake-bench replay --min-capacity --repeat 4, H200 cost model):
// marked, every placement the same; unmarked, where a new shape's misses fall through to this
// search, 1.1-3.7 times the instructions per steady pair (callgrind over steady-replay, ten
// traces), more driver time (the largest steady and warm-up iterations, summed over the traces:
// 814 and 1,788 ms against 783 and 1,771) and the same memory (capacity / peak active: 10 traces
// lower without the views, 6 higher, each within 0.003).
func (e *Engine) findIdle(r uint64) (idleWindow, bool) {
	if e.loose.bytes+e.largeAge.bytes < r {
		return idleWindow{}, false // an idle window is loose bytes and cached large blocks
	}
	best, found := e.arenaIdle(r, true)
	if found {
		return best, true
	}
	offer := func(w idleWindow) {
		if !found || w.better(best) {
			best, found = w, true
		}
	}

	// Every view, in view offsets.
	for v, seen := e.viewNewest, 0; v != nil && seen < maxViewScan; v, seen = v.older, seen+1 {
		if v.cap-v.inUse < r || !e.roomRun(v, r) {
			continue // its own live blocks, or those of the arena, leave no r idle bytes
		}
		e.viewIdleRuns(v, r, func(start, end uint64) {
			if found && best.cost == 0 && end-start > best.run {
				return // no window here flushes less than nothing from a shorter run
			}
			for _, off := range [2]uint64{start, end - r} {
				var cost uint64
				window(v, off, r, func(p span) bool { cost += e.cachedIn(p.start, p.end); return true })
				offer(idleWindow{v: v, off: off, cost: cost, run: end - start, addr: physAt(v, off)})
			}
		})
	}
	return best, found
}

// viewIdleRuns hands found every maximal run of at least r idle bytes of view v (loose bytes and
// idle cached blocks, in view offsets), in order: a walk of every block its pieces meet.
func (e *Engine) viewIdleRuns(v *view, r uint64, found func(start, end uint64)) {
	vt := runTracker{r: r, found: func(start, end uint64, _ []idleSeg) { found(start, end) }}
	at := uint64(0) // view offset of the current piece
	for _, p := range v.pieces {
		cur := p.start
		e.owners.overlapping(p.start, p.end, func(n *tnode) bool {
			lo, hi := max(n.s.start, p.start), min(n.s.end, p.end)
			vt.extend(at+cur-p.start, at+lo-p.start, 0) // loose bytes before it
			if e.idle(n.b) {
				vt.extend(at+lo-p.start, at+hi-p.start, 0)
			} else {
				vt.close()
			}
			cur = hi
			return true
		})
		vt.extend(at+cur-p.start, at+p.size(), 0)
		at += p.size()
	}
	vt.close()
}

// roomRun reports whether view v maps a run of at least r bytes of room spans (bytes no live large
// block owns), with the room index up to date. Idle bytes are room bytes, so a view without such a
// run holds no idle window of r bytes: findIdle passes over it after a walk of the room spans its
// pieces meet, O(log n) per piece, rather than of every block there. Unmarked, a new shape's
// requests fall through to findIdle (on llama1b-full, 3530 searches, 265 of which take a view's
// window); with this filter and the one on runs longer than a window that flushes nothing, the
// views' part of findIdle costs 25% fewer instructions there (callgrind, the whole replay: 471 ->
// 354 M) and every placement of every trace stays the same (gmlake-bench replay --json
// --min-capacity --repeat 4, marked and unmarked).
func (e *Engine) roomRun(v *view, r uint64) bool {
	run := uint64(0) // room bytes that end where the pieces so far end
	for _, p := range v.pieces {
		cur := p.start // arena offset up to which p is accounted for
		e.room.byAddr.overlapping(p.start, p.end, func(n *tnode) bool {
			lo, hi := max(n.s.start, p.start), min(n.s.end, p.end)
			if lo > cur {
				run = 0
			}
			run, cur = run+hi-lo, hi
			return run < r
		})
		if run >= r {
			return true
		}
		if cur < p.end {
			run = 0
		}
	}
	return false
}

// lossBound is the fewest loose bytes that a window of r bytes must hold to flush no more cached
// bytes than best (if found) does; 0 when any window may. A window's bytes are loose or owned by
// idle cached blocks, and it flushes each of those blocks whole, so a window holding L loose bytes
// flushes at least r-L: a room holding fewer loose bytes than the bound holds no window better
// than best, and arenaIdle passes over it without walking its blocks. A room's bound (room.go) is
// 0 as soon as it holds any loose bytes; this one counts them. Unmarked, it saves 2.6-4.1% of the
// steady instructions on llama1b-full, t5base-encdec-full and bertbase-mlm-full (callgrind over
// steady-replay), every placement the same.
func lossBound(found bool, best idleWindow, r uint64) uint64 {
	if !found || best.cost >= r {
		return 0
	}
	return r - best.cost
}

// arenaIdle is the best idle window of r bytes in the arena (findIdle's search there), and whether
// there is one. With bounded set, a room whose bound is above the cost of the best window found so
// far is passed over: it holds no better window.
func (e *Engine) arenaIdle(r uint64, bounded bool) (best idleWindow, found bool) {
	// Owned ranges in address order, loose ranges between them.
	t := runTracker{r: r, segs: e.segBuf[:0], found: func(start, end uint64, segs []idleSeg) {
		for _, pos := range [2]uint64{start, end - r} {
			w := idleWindow{off: pos, cost: windowCost(segs, pos, pos+r), run: end - start, addr: pos}
			if !found || w.better(best) {
				best, found = w, true
			}
		}
	}}
	below := noBound
	if bounded {
		t.minLoose = func() uint64 { return lossBound(found, best, r) }
		below = func() uint64 {
			if !found {
				return math.MaxUint64
			}
			return best.cost
		}
	}
	e.idleRuns(&t, below)
	e.segBuf = t.segs[:0]
	return best, found
}

// idleRuns feeds t the arena's idle bytes in address order: loose ranges and the ranges of idle
// cached blocks, of the rooms whose bound is at most below() (see roomAtLeast).
func (e *Engine) idleRuns(t *runTracker, below func() uint64) {
	// An idle run lies in a room span (room.go): only the room spans of at least t.r bytes can
	// hold a run t reports. With several streams a cached block is idle once its stream's events
	// say so, and a run ends at one that is not; the streams are polled first as a walk over every
	// block would poll them (pollUnsettled).
	if e.multiStream {
		e.pollUnsettled()
	}
	e.syncRoom()
	e.roomAtLeast(t.r, below, func(s span) { e.idleRunsIn(t, s) })
}

// idleRunsIn feeds t the idle bytes of arena range in in address order, then closes t's run.
func (e *Engine) idleRunsIn(t *runTracker, in span) {
	// Merge the two address-ordered trees in one pass each.
	loose := e.looseBuf[:0]
	var looseBytes uint64
	e.loose.byAddr.overlapping(in.start, in.end, func(n *tnode) bool {
		loose = append(loose, n.s)
		looseBytes += n.s.size() // whole: a run takes a loose range whole
		return true
	})
	e.looseBuf = loose
	if t.minLoose != nil && looseBytes < t.minLoose() {
		return // every window here flushes more cached bytes than the best found (lossBound)
	}
	i := 0
	e.owners.overlapping(in.start, in.end, func(n *tnode) bool {
		for ; i < len(loose) && loose[i].start < n.s.start; i++ {
			t.extend(loose[i].start, loose[i].end, 0)
		}
		if e.idle(n.b) {
			t.extend(n.s.start, n.s.end, n.b.size)
		} else {
			t.close()
		}
		return true
	})
	for ; i < len(loose); i++ {
		t.extend(loose[i].start, loose[i].end, 0)
	}
	t.close()
}

// idlePlan is a stitch plan over the arena's idle runs rather than its loose ranges: what a stitch
// could map if the cached blocks it covers were flushed, or nil and at least what a plan over
// every idle run reaches. planFrom takes runs largest first, equal ones lowest first. First, with
// at most idleBoundBlocks cached large blocks, a bound on what every run reaches
// (idleReachBound): below r, no plan serves r, and idlePlan says so in O(k log n) for k cached
// blocks. Else the runs come from the room index, largest room first (with several streams
// once the streams are polled, as idleRuns polls them): a run
// larger than every room still to come (or as large and below it) is already in its place in that
// order, so once those runs make a plan it is the plan all the runs make, and the search stops. A
// plan over k runs then looks at about k rooms, O(k log n); a request no plan serves but the bound
// does not rule out (more cached blocks than idleBoundBlocks, or runs that reach r only as the
// bound counts them) still looks at every room.
func (e *Engine) idlePlan(r uint64) ([]span, uint64) {
	if e.multiStream {
		e.pollUnsettled() // as idleRuns
	}
	if e.largeAge.n == 0 {
		return e.stitchPlan(r) // no cached large block: the idle runs are the loose ranges
	}
	e.syncRoom()
	if bound, ok := e.idleReachBound(); ok && bound < r {
		return nil, bound
	}
	runs := e.runBuf[:0]
	t := runTracker{r: 1, segs: e.segBuf[:0], found: func(start, end uint64, _ []idleSeg) {
		runs = append(runs, span{start: start, end: end})
	}}
	defer func() { e.segBuf, e.runBuf = t.segs[:0], runs[:0] }()
	plan := func(rs []span) ([]span, uint64) {
		return e.planFrom(r, func(fn func(span)) {
			for _, s := range rs {
				fn(s)
			}
		})
	}
	var seen, tried uint64 // bytes of the runs gathered; seen when a plan over them was last tried
	var pieces []span
	var reach uint64
	e.room.bySize.largestFirst(func(room, next span, more bool) bool {
		before := len(runs)
		e.idleRunsIn(&t, room)
		for _, s := range runs[before:] {
			seen += s.size()
		}
		if !more || seen < r || seen < 2*tried {
			return more // tried again once the runs have doubled: O(m log m) over m runs in all
		}
		tried = seen
		final := e.planBuf[:0]
		for _, s := range runs {
			if s.size() > next.size() || s.size() == next.size() && s.start < next.start {
				final = append(final, s)
			}
		}
		e.planBuf = final[:0]
		pieces, reach = plan(final)
		return pieces == nil
	})
	if pieces != nil {
		return pieces, reach
	}
	return plan(runs)
}

// idleReachBound is a bound on what a stitch plan over every idle run of the arena reaches (planFrom's
// reach), worked out from the stitch index of the loose ranges and from the runs holding idle cached
// large blocks, in O(k log n) for k cached large blocks; false, and no bound, past idleBoundBlocks
// of them. A plan's reach is the whole-handle bytes (mid) of the runs it takes plus the head of one
// and the tail of one (a single run: its size, the same sum), so the sum of every run's mid plus the
// largest head and the largest tail bounds it. A run holding no idle cached block is a loose range
// (the loose set is coalesced), a candidate of the stitch index, whose sums and largest head and
// tail the index keeps; the others are found from their cached blocks (idleRunAround). The loose
// ranges inside those runs are counted twice, which only raises the bound.
func (e *Engine) idleReachBound() (uint64, bool) {
	if e.largeAge.n > idleBoundBlocks {
		return 0, false
	}
	x := e.stitchIndex()
	mids, head, tail := x.mids, uint64(0), uint64(0)
	if h, ok := x.heads.max(); ok {
		head = h.size()
	}
	if t, ok := x.tails.max(); ok {
		tail = t.size()
	}
	runs := e.runBuf[:0]
	for b := e.largeAge.oldest; b != nil; b = b.newer {
		if !e.idle(b) {
			continue // in no run
		}
		e.eachArenaRange(b, func(p span) {
			for _, s := range runs {
				if s.start <= p.start && p.end <= s.end {
					return // its run is counted
				}
			}
			run := e.idleRunAround(p)
			runs = append(runs, run)
			if c, ok := e.candidateOf(run); ok {
				mids += c.mid
				head, tail = max(head, c.head), max(tail, c.tail)
			}
		})
	}
	e.runBuf = runs[:0]
	return mids + head + tail, true
}

// idleRunAround is the idle run (idleRunsIn's, over loose ranges and idle cached blocks) holding
// arena range p, the range of an idle cached block: O(k log n) for the k pieces of the run.
func (e *Engine) idleRunAround(p span) span {
	run := p
	joins := func(n *tnode) bool { return n != nil && e.idle(n.b) } // a block's range next to the run
	for run.start > 0 {
		if l, ok := e.loose.byAddr.floor(span{start: run.start - 1}); ok && l.end == run.start {
			run.start = l.start
		} else if n := e.owners.ownerAt(run.start - 1); joins(n) && n.s.end == run.start {
			run.start = n.s.start
		} else {
			break
		}
	}
	for {
		if l, ok := e.loose.byAddr.ceil(span{start: run.end}); ok && l.start == run.end {
			run.end = l.end
		} else if n := e.owners.ownerAt(run.end); joins(n) && n.s.start == run.end {
			run.end = n.s.end
		} else {
			return run
		}
	}
}

// cachedIn is the bytes of cached blocks owning arena bytes in [start, end) (a stitched block with
// several pieces there counts once per piece).
func (e *Engine) cachedIn(start, end uint64) uint64 {
	var n uint64
	e.owners.overlapping(start, end, func(t *tnode) bool {
		n += t.b.size
		return true
	})
	return n
}
