package stitch

import (
	"cmp"
	"fmt"
	"slices"
)

// view is a stitched virtual range: whole physical allocations (handles) mapped one after another,
// each from its offset 0, so that its pieces (arena ranges; only the first may start inside a
// handle, only the last may end inside one) read as one contiguous range of cap bytes starting at
// base+head. A driver maps a handle only whole (cuMemMap), so a view costs one Map per handle and
// SetAccess and Unmap per handle it maps, however large the handles are. Blocks (live or cached) use windows of it
// whose bytes are disjoint; a view no block uses is idle and may be released.
type view struct {
	base   uintptr  // its virtual range: the key in layout.views. mapView
	vsize  uint64   // reserved and mapped bytes: len(chunks) * G. mapView. Check: checkViews
	head   uint64   // offset of the first piece's first byte in its handle. mapView. Check: checkViews
	pieces []span   // arena ranges, in view order. mapView. Check: checkViews (they meet at handle boundaries)
	chunks []uint64 // arena slot of each mapped chunk, in view order: every chunk of each handle. mapView. Check: checkViews
	cap    uint64   // sum of piece sizes: the largest block it can hold. mapView. Check: checkViews
	// users, held, inUse: the blocks using a window of it, live or cached (takeView adds,
	// releaseLarge removes), their bytes (none of them loose), and the bytes of the live ones
	// (setLive; none of them idle), so that a search skips a view whose own blocks leave no room.
	// Check: checkPhysical (against the blocks using it).
	users int
	held  uint64
	inUse uint64
	older *view // in the engine's view list, least recently used first: viewPush, viewUnlink. Check: checkViews
	newer *view
	gone  bool // its virtual range was given back (unmapView): places in it no longer exist. Check: checkViews
}

// handleSpan is the arena range of the physical allocation (handle) holding arena byte pos, which
// must hold a chunk.
func (l *layout) handleSpan(pos uint64) span {
	sl := l.slots[pos/l.g]
	start := pos/l.g*l.g - sl.hoff
	return span{start: start, end: start + l.allocs[sl.h].n*l.g}
}

// handleSpanIfAny is handleSpan for Check, which must not trust pos: false when no chunk is there.
func (l *layout) handleSpanIfAny(pos uint64) (span, bool) {
	if pos/l.g >= uint64(len(l.slots)) || !l.slots[pos/l.g].present || l.allocs[l.slots[pos/l.g].h] == nil {
		return span{}, false
	}
	return l.handleSpan(pos), true
}

// wholeHandles returns the first handle boundary at or after s.start and the last at or before
// s.end: [lo, hi) is the part of s made of whole handles, the only part a stitch can map in the
// middle of a view. lo > hi when s lies inside one handle and touches neither of its ends.
func (l *layout) wholeHandles(s span) (lo, hi uint64) {
	lo, hi = s.start, s.end
	if h := l.handleSpan(s.start); h.start != s.start {
		lo = h.end
	}
	if h := l.handleSpan(s.end - 1); h.end != s.end {
		hi = h.start
	}
	return lo, hi
}

// handlesOf lists the handles the pieces lie in, in view order: each piece's own, so a handle
// whose tail is the first piece and whose head the last is mapped twice.
func (l *layout) handlesOf(pieces []span) []span {
	var hs []span
	for _, p := range pieces {
		for at := p.start; at < p.end; {
			h := l.handleSpan(at)
			hs = append(hs, h)
			at = h.end
		}
	}
	return hs
}

// chunksOf lists the arena slots of every chunk of the handles the pieces lie in, in view order.
func (l *layout) chunksOf(pieces []span) []uint64 {
	var cs []uint64
	for _, h := range l.handlesOf(pieces) {
		for c := h.start / l.g; c*l.g < h.end; c++ {
			cs = append(cs, c)
		}
	}
	return cs
}

// mapView reserves a range and maps the handles under pieces into it, one whole handle per Map;
// on error nothing is left.
func (l *layout) mapView(pieces []span) (*view, error) {
	handles := l.handlesOf(pieces)
	chunks := l.chunksOf(pieces)
	v := &view{vsize: uint64(len(chunks)) * l.g, head: pieces[0].start - handles[0].start, pieces: pieces, chunks: chunks}
	for _, p := range pieces {
		v.cap += p.size()
	}
	base, err := l.drv.reserve(v.vsize)
	if err != nil {
		return nil, fmt.Errorf("stitch: reserve %d bytes for a stitched block: %w", v.vsize, err)
	}
	v.base = base
	mapped := uint64(0) // chunks mapped so far, from the start
	for _, h := range handles {
		if err := l.drv.mapRange(base+uintptr(mapped*l.g), h.size(), l.slots[h.start/l.g].h, 0); err != nil {
			l.dropRange(base, v.vsize, chunks[:mapped])
			return nil, fmt.Errorf("stitch: map a handle for a stitched block: %w", err)
		}
		mapped += h.size() / l.g
	}
	if err := l.drv.setAccess(base, v.vsize); err != nil {
		l.dropRange(base, v.vsize, chunks)
		return nil, fmt.Errorf("stitch: set access on a stitched block: %w", err)
	}
	for _, c := range chunks {
		l.slots[c].views++
	}
	l.views[base] = v
	l.viewBytes += v.vsize
	l.viewPush(v)
	return v, nil
}

// dropRange undoes a partly built view: unmaps the chunks mapped so far (from base on) and frees
// the range. If the unmap fails the range is kept as an orphan that still counts as mapping them.
func (l *layout) dropRange(base uintptr, size uint64, mapped []uint64) {
	if len(mapped) > 0 {
		if err := l.drv.unmap(base, uint64(len(mapped))*l.g); err != nil {
			l.log.Error("stitch: unmap during rollback failed; range kept as orphan", "err", err)
			chunks := slices.Clone(mapped)
			for _, c := range chunks {
				l.slots[c].views++
			}
			l.orphans = append(l.orphans, orphan{addr: base, size: size, mapped: true, chunks: chunks})
			l.orphanVirt += size
			return
		}
	}
	if err := l.drv.free(base, size); err != nil {
		l.log.Error("stitch: free during rollback failed; range kept as orphan", "err", err)
		l.orphans = append(l.orphans, orphan{addr: base, size: size})
		l.orphanVirt += size
	}
}

// unmapView releases an idle view's virtual range (physical memory stays).
func (l *layout) unmapView(v *view) error {
	if err := l.drv.unmap(v.base, v.vsize); err != nil {
		return fmt.Errorf("stitch: unmap stitched range: %w", err)
	}
	if err := l.drv.free(v.base, v.vsize); err != nil {
		l.orphans = append(l.orphans, orphan{addr: v.base, size: v.vsize})
		l.orphanVirt += v.vsize
		l.log.Error("stitch: free of stitched range failed; kept as orphan", "err", err)
	}
	l.viewUnlink(v)
	for _, c := range v.chunks {
		l.slots[c].views--
	}
	delete(l.views, v.base)
	v.gone = true
	l.viewsReleased++
	l.viewBytes -= v.vsize
	return nil
}

// viewPush makes v the most recently used view.
func (l *layout) viewPush(v *view) {
	v.older, v.newer = l.viewNewest, nil
	if l.viewNewest != nil {
		l.viewNewest.newer = v
	} else {
		l.viewOldest = v
	}
	l.viewNewest = v
}

func (l *layout) viewUnlink(v *view) {
	if v.older != nil {
		v.older.newer = v.newer
	} else {
		l.viewOldest = v.newer
	}
	if v.newer != nil {
		v.newer.older = v.older
	} else {
		l.viewNewest = v.older
	}
	v.older, v.newer = nil, nil
}

// trimViews releases idle views, least recently used first, while over the budget.
func (l *layout) trimViews() {
	for v := l.viewOldest; v != nil && (len(l.views) > l.maxViews || l.viewBytes > l.maxViewBytes); {
		next := v.newer
		if v.users == 0 {
			if err := l.unmapView(v); err != nil {
				l.log.Warn("stitch: releasing a cached stitched range failed", "err", err)
				return
			}
		}
		v = next
	}
}

// releaseIdleViews releases every view no block uses; it returns the first error.
func (l *layout) releaseIdleViews() error {
	for v := l.viewOldest; v != nil; {
		next := v.newer
		if v.users == 0 {
			if err := l.unmapView(v); err != nil {
				return err
			}
		}
		v = next
	}
	return nil
}

// window calls fn on the pieces under bytes [off, off+size) of v, cut to them, until fn returns false.
func window(v *view, off, size uint64, fn func(span) bool) {
	end := off + size
	at := uint64(0) // view offset of the current piece
	for _, p := range v.pieces {
		if at >= end {
			return
		}
		next := at + p.size()
		if next > off {
			lo, hi := p.start+max(off, at)-at, p.end-(next-min(end, next))
			if !fn(span{start: lo, end: hi}) {
				return
			}
		}
		at = next
	}
}

// findWindow looks through every view for the smallest run of at least r contiguous loose bytes;
// it returns the view and the run's offset in it, or nil. A run is loose bytes only, so with fewer
// than r loose bytes in all there is none, and the views are not walked: a miss at a new peak,
// whose request no loose range holds, comes here with the loose set nearly empty (in the single
// pass of llama1b-full, 79% of the searches marked and 38% unmarked).
func (l *layout) findWindow(r uint64) (*view, uint64) {
	if l.loose.bytes < r {
		return nil, 0
	}
	return l.scanWindows(r)
}

// scanWindows is findWindow's walk of the views.
func (l *layout) scanWindows(r uint64) (*view, uint64) {
	var best *view
	var bestOff, bestLen uint64
	for v, seen := l.viewNewest, 0; v != nil && seen < maxViewScan; v, seen = v.older, seen+1 {
		if v.cap-v.held < r {
			continue // its own blocks leave no r loose bytes
		}
		runOff, runLen := uint64(0), uint64(0)
		consider := func() {
			if runLen < r {
				return
			}
			// The shortest run; equal ones by the address of their first byte, so that choices
			// do not depend on when views were made.
			if best == nil || runLen < bestLen || runLen == bestLen && physAt(v, runOff) < physAt(best, bestOff) {
				best, bestOff, bestLen = v, runOff, runLen
			}
		}
		at := uint64(0) // view offset of the current piece
		for _, p := range v.pieces {
			open := runLen > 0 && runOff+runLen == at // the run reaches the start of this piece
			s, ok := l.loose.byAddr.floor(span{start: p.start})
			if !ok || s.end <= p.start {
				s, ok = l.loose.byAddr.ceil(span{start: p.start})
			}
			for ok && s.start < p.end {
				fs, fe := max(s.start, p.start), min(s.end, p.end)
				if fs == p.start && open {
					runLen += fe - fs
				} else {
					consider()
					runOff, runLen = at+fs-p.start, fe-fs
				}
				open = false
				if fe == p.end {
					break
				}
				s, ok = l.loose.byAddr.ceil(span{start: s.end})
			}
			at += p.size()
		}
		consider()
	}
	return best, bestOff
}

// physAt is the arena offset of byte off of view v.
func physAt(v *view, off uint64) uint64 {
	var at uint64
	window(v, off, 1, func(p span) bool { at = p.start; return false })
	return at
}

// candidate is a loose range considered for stitching: head is its part before the first handle
// boundary, mid its whole handles, tail its part after the last boundary. Only the view's first
// piece may use a head and only its last a tail.
type candidate struct {
	s               span
	head, mid, tail uint64
}

// stitchPlan chooses loose ranges to stitch into r bytes, largest first, and returns the pieces
// in view order cut to r bytes, or nil and the most stitching could reach. The stitch index
// (stitchable.go) tells what every loose range reaches, so a request stitching cannot serve costs
// O(log n); else the loose ranges are taken largest first until they reach r, O(k log n) for the
// k looked at.
func (l *layout) stitchPlan(r uint64) ([]span, uint64) {
	all := l.stitchReach()
	if all < r {
		// Past one candidate a plan's reach is its candidates' middles and two ends, which the
		// index sums; the largest candidate alone may reach further (a plan of one: its whole
		// range), but no range is larger than the largest loose range.
		if big, ok := l.loose.sizes().max(); !ok || big.size() < r {
			return nil, all
		}
	}
	cands := l.candBuf[:0]
	var ends planEnds
	l.loose.sizes().largestFirst(func(s, _ span, _ bool) bool {
		if c, ok := l.candidateOf(s); ok {
			cands = append(cands, c)
			ends.add(cands)
		}
		return ends.reach < r
	})
	l.candBuf = cands
	if ends.reach < r {
		if all >= r {
			panic("stitch: the loose ranges reach less than the stitch index says")
		}
		return nil, all // the largest loose range holds r, but is no candidate
	}
	return planPieces(cands, ends, r), ends.reach
}

// planFrom is stitchPlan over the ranges ranges gives, in any order.
func (l *layout) planFrom(r uint64, ranges func(func(span))) ([]span, uint64) {
	l.candBuf = l.candBuf[:0]
	ranges(func(s span) {
		if c, ok := l.candidateOf(s); ok {
			l.candBuf = append(l.candBuf, c)
		}
	})
	cands := l.candBuf
	// Largest first; equal sizes by address, so that the same free memory always makes the same view.
	slices.SortFunc(cands, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(b.s.size(), a.s.size()), cmp.Compare(a.s.start, b.s.start))
	})
	var ends planEnds
	for n := 1; n <= len(cands) && ends.reach < r; n++ {
		ends.add(cands[:n])
	}
	if ends.reach < r {
		return nil, ends.reach
	}
	return planPieces(cands[:ends.n], ends, r), ends.reach
}

// planEnds follows, as candidates join a plan one at a time, the first piece (which may add its
// head) and the last (which may add its tail), distinct, that maximise the plan's reach: O(1) a
// candidate.
type planEnds struct {
	n              int    // candidates so far
	mids           uint64 // their whole-handle bytes
	h1, h2, t1, t2 int    // the largest two heads and tails so far (-1: none)
	first, last    int
	reach          uint64
}

// add takes the last of cs, the candidates so far, into the plan.
func (p *planEnds) add(cs []candidate) {
	i, c := len(cs)-1, cs[len(cs)-1]
	if i == 0 {
		p.h1, p.h2, p.t1, p.t2 = -1, -1, -1, -1
	}
	p.n, p.mids = i+1, p.mids+c.mid
	if p.h1 < 0 || c.head > cs[p.h1].head {
		p.h1, p.h2 = i, p.h1
	} else if p.h2 < 0 || c.head > cs[p.h2].head {
		p.h2 = i
	}
	if p.t1 < 0 || c.tail > cs[p.t1].tail {
		p.t1, p.t2 = i, p.t1
	} else if p.t2 < 0 || c.tail > cs[p.t2].tail {
		p.t2 = i
	}
	switch {
	case p.n == 1:
		p.first, p.last, p.reach = 0, 0, c.s.size()
	case p.h1 != p.t1:
		p.first, p.last, p.reach = p.h1, p.t1, p.mids+cs[p.h1].head+cs[p.t1].tail
	default:
		a := cs[p.h1].head + cs[p.t2].tail
		b := cs[p.h2].head + cs[p.t1].tail
		if a >= b {
			p.first, p.last, p.reach = p.h1, p.t2, p.mids+a
		} else {
			p.first, p.last, p.reach = p.h2, p.t1, p.mids+b
		}
	}
}

// planPieces lays the chosen candidates out in view order, the first and last as ends chose
// them, the rest's whole handles between them in address order, and cuts them to r bytes.
func planPieces(chosen []candidate, ends planEnds, r uint64) []span {
	var pieces []span
	if len(chosen) == 1 {
		return append(pieces, span{start: chosen[0].s.start, end: chosen[0].s.start + r})
	}
	f, l := chosen[ends.first], chosen[ends.last]
	if p := (span{start: f.s.start, end: f.s.end - f.tail}); p.size() > 0 {
		pieces = append(pieces, p)
	}
	middle := make([]span, 0, len(chosen))
	for i, c := range chosen {
		if i != ends.first && i != ends.last && c.mid > 0 {
			middle = append(middle, span{start: c.s.start + c.head, end: c.s.end - c.tail})
		}
	}
	slices.SortFunc(middle, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	pieces = append(pieces, middle...)
	if p := (span{start: l.s.start + l.head, end: l.s.end}); p.size() > 0 {
		pieces = append(pieces, p)
	}
	// Cut to r bytes.
	need := r
	for i := range pieces {
		if pieces[i].size() >= need {
			pieces[i].end = pieces[i].start + need
			return pieces[:i+1]
		}
		need -= pieces[i].size()
	}
	panic("stitch: plan shorter than its reach")
}

// stitch maps pieces under a new view and makes them a block of r bytes.
func (l *layout) stitch(pieces []span, r uint64) (*block, error) {
	v, err := l.mapView(pieces)
	if err != nil {
		return nil, err
	}
	b := l.takeView(v, 0, r)
	l.trimViews()
	return b, nil
}

// takeView makes bytes [off, off+r) of view v (all loose) a stitched block.
func (l *layout) takeView(v *view, off, r uint64) *block {
	window(v, off, r, func(p span) bool {
		if !l.loose.take(p.start, p.end) {
			panic("stitch: view piece not free")
		}
		return true
	})
	return l.windowBlock(v, off, r)
}

// windowBlock makes bytes [off, off+r) of view v, whose arena bytes are in no free set and owned by
// no block, a block.
func (l *layout) windowBlock(v *view, off, r uint64) *block {
	b := l.newBlock()
	window(v, off, r, func(p span) bool {
		l.owners.insertWith(p, b)
		return true
	})
	b.kind, b.view, b.voff, b.size, b.ptr = stitched, v, off, r, l.addressOf(home{v: v, off: off})
	b.first = b.firstByte()
	v.users++
	v.held += r
	l.viewUnlink(v)
	l.viewPush(v)
	return b
}

func roundUp(x, a uint64) uint64 { return (x + a - 1) / a * a }
