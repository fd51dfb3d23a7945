package stitch

import "slices"

// page is a large block lent to the small pool. Small blocks are carved from it by best fit; its
// free ranges live in layout.smallFree tagged with its id, so they never coalesce across pages.
type page struct {
	id   uint64
	blk  *block // the large block it is
	used uint64 // bytes of small blocks in it, live or cached
}

// addPage lends large block pb to the small pool as an empty page. A page is never handed out, so
// it leaves the pointer index, where a take that re-carved a cached block at its place kept it
// (recarve).
func (l *layout) addPage(pb *block) {
	if pb.indexed {
		l.blocks.Delete(uint64(pb.ptr))
		pb.indexed = false
	}
	l.nextPageID++
	p := &page{id: l.nextPageID, blk: pb}
	l.setLive(pb, true)
	pb.page = p
	l.pages[p.id] = p
	l.smallFree.add(span{start: uint64(pb.ptr), end: uint64(pb.ptr) + pb.size, owner: p.id})
}

// carveSmall takes r bytes from the start of the best-fitting free range of any page (the lowest
// of the shortest that hold it): the small pool is flushed whole before a page is added
// (allocSmall), so that best fit lays it out from coalesced ranges and the layout repeats with
// the script.
func (l *layout) carveSmall(r uint64) *block {
	sp, fits := l.smallFree.bestFit(r)
	if !fits {
		return nil
	}
	at := sp.start
	l.smallFree.take(at, at+r)
	p := l.pages[sp.owner]
	p.used += r
	b := l.newBlock()
	b.kind, b.ptr, b.size, b.page = small, uintptr(at), r, p
	b.first = b.firstByte()
	return b
}

// flushSmall returns a cached small block's bytes to its page; it returns the free range now
// holding them.
func (l *layout) flushSmall(b *block) uint64 {
	p := b.page
	merged := l.smallFree.insert(span{start: uint64(b.ptr), end: uint64(b.ptr) + b.size, owner: p.id})
	p.used -= b.size
	return merged.size()
}

// releaseEmptyPages gives every page with no small block in it back to the large pool's loose set.
func (l *layout) releaseEmptyPages() {
	var empty []uint64
	for id, p := range l.pages {
		if p.used == 0 {
			empty = append(empty, id)
		}
	}
	slices.Sort(empty) // a deterministic order keeps replays reproducible
	for _, id := range empty {
		p := l.pages[id]
		l.smallFree.take(uint64(p.blk.ptr), uint64(p.blk.ptr)+p.blk.size)
		delete(l.pages, id)
		p.blk.page = nil
		l.releaseLarge(p.blk)
		l.recycle(p.blk)
	}
}
