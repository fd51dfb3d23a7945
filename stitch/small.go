package stitch

import "slices"

// page is a large block lent to the small pool. Small blocks are carved from it by best fit; its
// free ranges live in Engine.smallFree tagged with its id, so they never coalesce across pages.
type page struct {
	id   uint64
	blk  *block // the large block it is
	used uint64 // bytes of small blocks in it, live or cached
}

// allocSmall serves a request below the small threshold: best fit among the pages' free ranges,
// then the same after flushing every cached small block (flushSmallPool), then from a new page.
func (e *Engine) allocSmall(r uint64, s Stream) (*block, Outcome, error) {
	if b := e.carveSmall(r); b != nil {
		return b, OutcomeSplit, nil
	}
	if e.flushSmallPool() {
		if b := e.carveSmall(r); b != nil {
			return b, OutcomeSplit, nil
		}
	}
	// A page goes where the followed memo had one; once large requests' places are remembered,
	// away from them (pageaway.go); else to the lowest free range that holds it (the highest once
	// iterations are marked: carvePage), so that pages gather in one place from one iteration to
	// the next instead of landing in whatever gap between large blocks fits.
	var pb *block
	out := OutcomeSplit
	if h, ok := e.findPageMemo(); ok {
		pb = e.takeHome(h, e.pageSize)
	} else if pb = e.placePageAway(); pb != nil {
		// placed
	} else if h, ok := e.findHome(e.pageSize); ok {
		pb = e.takeHome(h, e.pageSize)
	} else if pb = e.carvePage(); pb != nil {
		e.rememberHome(pb)
	}
	if pb == nil {
		var err error
		if pb, out, err = e.allocLarge(e.pageSize, s); err != nil {
			return nil, 0, err
		}
	}
	e.recordPlace(pb, true)
	e.addPage(pb)
	b := e.carveSmall(r)
	if out == OutcomeExact {
		out = OutcomeSplit
	}
	return b, out, nil
}

// addPage lends large block pb to the small pool as an empty page. A page is never handed out, so
// it leaves the pointer index, where a take that re-carved a cached block at its place kept it
// (recarve).
func (e *Engine) addPage(pb *block) {
	if pb.indexed {
		e.blocks.Delete(uint64(pb.ptr))
		pb.indexed = false
	}
	e.nextPageID++
	p := &page{id: e.nextPageID, blk: pb}
	e.setLive(pb, true)
	pb.page = p
	e.pages[p.id] = p
	e.smallFree.add(span{start: uint64(pb.ptr), end: uint64(pb.ptr) + pb.size, owner: p.id})
}

// carveSmall takes r bytes from the start of the best-fitting free range of any page (the lowest
// of the shortest that hold it): the small pool is flushed whole before a page is added
// (allocSmall), so that best fit lays it out from coalesced ranges and the layout repeats with
// the script.
func (e *Engine) carveSmall(r uint64) *block {
	sp, fits := e.smallFree.bestFit(r)
	if !fits {
		return nil
	}
	at := sp.start
	e.smallFree.take(at, at+r)
	p := e.pages[sp.owner]
	p.used += r
	b := e.newBlock()
	b.kind, b.ptr, b.size, b.page = small, uintptr(at), r, p
	b.first = b.firstByte()
	return b
}

// flushSmall returns a cached small block's bytes to its page; it returns the free range now
// holding them.
func (e *Engine) flushSmall(b *block) uint64 {
	p := b.page
	merged := e.smallFree.insert(span{start: uint64(b.ptr), end: uint64(b.ptr) + b.size, owner: p.id})
	p.used -= b.size
	return merged.size()
}

// releaseEmptyPages gives every page with no small block in it back to the large pool's loose set.
func (e *Engine) releaseEmptyPages() {
	var empty []uint64
	for id, p := range e.pages {
		if p.used == 0 {
			empty = append(empty, id)
		}
	}
	slices.Sort(empty) // a deterministic order keeps replays reproducible
	for _, id := range empty {
		p := e.pages[id]
		e.smallFree.take(uint64(p.blk.ptr), uint64(p.blk.ptr)+p.blk.size)
		delete(e.pages, id)
		p.blk.page = nil
		e.releaseLarge(p.blk)
		e.recycle(p.blk)
	}
}

// carvePage takes a page from the loose ranges: from the end of the highest one that holds it when
// iterations are marked, where the large blocks of new shapes, laid out first-fit from below
// (shape.go), do not go, so that pages stay out of the places iteration memos give large blocks
// (a page lives across iterations); from the start of the lowest one otherwise.
func (e *Engine) carvePage() *block {
	if !e.marked() {
		return e.carveLowest(e.pageSize)
	}
	var sp span
	ok := false
	e.loose.byAddr.walk(func(s span) bool {
		if s.size() >= e.pageSize {
			sp, ok = s, true
		}
		return true
	})
	if !ok {
		return nil
	}
	return e.carveAt(sp.end-e.pageSize, e.pageSize)
}
