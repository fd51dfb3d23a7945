package stitch

import "github.com/gmlake/gmlake/internal/btree"

// freeSet is a set of disjoint free byte ranges, coalesced (two adjacent spans of the same owner are
// always one span), indexed by address (to coalesce and to answer "is this range free") and by size
// (for best fit).
//
// The size index of a set made by newLazyFreeSet is kept lazily, as the stitch index is
// (stitchable.go): the changes since it was last read are counted (sizeLag), and once they
// outnumber the spans it is dropped (sizeStale) and changes cost it nothing until the next read
// (sizes) rebuilds it from the address index. Its watcher is told of every span added and removed
// either way. The loose set is kept so: in the steady iterations of a training loop every miss
// changes it several times (a re-carve takes loose bytes and gives a flushed block's rest back)
// and nothing asks it for a best fit: kept eagerly, its size index would be a fifth of the tree
// operations there (the H200 ResNet-18 trace: 268 of 1,359 per iteration); kept lazily it costs
// none. The spans it holds, and so every answer, are the same either way.
//
// A span that changes is given a new tnode in the address index, so that what was noted of the old
// one (tnode.boundZero) goes with it.
type freeSet struct {
	byAddr tree
	bySize tree   // read through sizes
	bytes  uint64 // sum of span sizes

	changes uint64 // spans added, removed or changed so far (roomHint)

	lazySize  bool // the size index is kept lazily
	sizeLag   int  // changes to the size index since it was last read
	sizeStale bool // the size index is dropped (empty) until sizes rebuilds it
}

func newFreeSet() *freeSet {
	return &freeSet{bySize: tree{bySize: true}}
}

// newLazyFreeSet is newFreeSet with its size index kept lazily.
func newLazyFreeSet() *freeSet {
	f := newFreeSet()
	f.lazySize = true
	return f
}

// sizes returns the size index, rebuilt from the address index if it was dropped, and starts
// counting the changes since this read afresh.
func (f *freeSet) sizes() *tree {
	f.sizeLag = 0
	if f.sizeStale {
		f.sizeStale = false
		f.byAddr.walk(func(s span) bool {
			f.bySize.insertUnwatched(s)
			return true
		})
	}
	return &f.bySize
}

// sizeInsert adds s to the size index and sizeRemove takes it out (sizeChange).
func (f *freeSet) sizeInsert(s span) { f.sizeChange(s, true) }
func (f *freeSet) sizeRemove(s span) { f.sizeChange(s, false) }

// sizeChange adds s to the size index or takes it out, or only tells the index's watcher while
// the index is dropped.
func (f *freeSet) sizeChange(s span, added bool) {
	switch {
	case f.sizeStale:
		f.bySize.notify(s, added)
		return
	case added:
		f.bySize.insert(s)
	default:
		f.bySize.remove(s)
	}
	f.sizeChanged()
}

// sizeChanged counts a change to a lazily kept size index and drops the index once the changes
// since the last read outnumber the spans.
func (f *freeSet) sizeChanged() {
	if !f.lazySize {
		return
	}
	if f.sizeLag++; f.sizeLag > f.byAddr.len() {
		f.bySize.clear()
		f.sizeStale = true
	}
}

func (f *freeSet) len() int { return f.byAddr.len() }

func (f *freeSet) add(s span) {
	f.changes++
	f.byAddr.insert(s)
	f.sizeInsert(s)
	f.bytes += s.size()
}

func (f *freeSet) drop(s span) {
	f.changes++
	f.byAddr.remove(s)
	f.sizeRemove(s)
	f.bytes -= s.size()
}

// insert adds s (which must not overlap the set), coalescing with its neighbours of the same owner,
// and returns the span that now holds it. A merge with the neighbour before keeps that node of the
// address index (its start, the key, does not change) and one with the neighbour after moves that
// node's key to s's start, which no other span lies between: the address index changes in place.
func (f *freeSet) insert(s span) span {
	f.changes++
	// s overlaps no span, so the span after the one before s is the first at or past s.end.
	before := f.byAddr.floorAt(s.start)
	prev, next := before, f.byAddr.after(before)
	if prev.Valid() && (prev.Value().s.end != s.start || prev.Value().s.owner != s.owner) {
		prev = btree.Cursor[tnode]{}
	}
	if next.Valid() && (next.Value().s.start != s.end || next.Value().s.owner != s.owner) {
		next = btree.Cursor[tnode]{}
	}
	merged := s
	switch {
	case prev.Valid() && next.Valid():
		p, n := prev.Value().s, next.Value().s
		merged.start, merged.end = p.start, n.end
		f.sizeRemove(p)
		f.sizeRemove(n)
		*prev.Value() = tnode{s: merged} // before the remove, which may move prev's entry
		f.byAddr.remove(n)
	case prev.Valid():
		p := prev.Value().s
		merged.start = p.start
		f.sizeRemove(p)
		*prev.Value() = tnode{s: merged}
	case next.Valid():
		n := next.Value().s
		merged.end = n.end
		f.sizeRemove(n)
		*f.byAddr.rekey(next, merged.start).Value() = tnode{s: merged}
	default:
		f.byAddr.insertAfter(before, s)
	}
	f.sizeInsert(merged)
	f.bytes += s.size()
	return merged
}

// containing returns the span holding [start, end), if the whole range is free.
func (f *freeSet) containing(start, end uint64) (span, bool) {
	s, ok := f.byAddr.floor(span{start: start})
	if !ok || s.end < end {
		return span{}, false
	}
	return s, true
}

// take removes [start, end), which must be free, from the set. The span holding it keeps its node
// of the address index for what remains of it before start, or moves the node's key to end when
// only bytes after it remain.
func (f *freeSet) take(start, end uint64) bool {
	n := f.byAddr.floorAt(start)
	if !n.Valid() || n.Value().s.end < end {
		return false
	}
	f.changes++
	s := n.Value().s
	f.sizeRemove(s)
	before := span{start: s.start, end: start, owner: s.owner}
	after := span{start: end, end: s.end, owner: s.owner}
	switch {
	case before.size() > 0 && after.size() > 0:
		*n.Value() = tnode{s: before}
		f.sizeInsert(before)
		f.byAddr.insertAfter(n, after)
		f.sizeInsert(after)
	case before.size() > 0:
		*n.Value() = tnode{s: before}
		f.sizeInsert(before)
	case after.size() > 0:
		*f.byAddr.rekey(n, after.start).Value() = tnode{s: after}
		f.sizeInsert(after)
	default:
		f.byAddr.remove(s)
	}
	f.bytes -= end - start
	return true
}

// bestFit returns the smallest span of at least size bytes (the lowest such if several).
func (f *freeSet) bestFit(size uint64) (span, bool) {
	return f.sizes().ceil(span{start: 0, end: size})
}

// largest returns the largest span.
func (f *freeSet) largest() (span, bool) { return f.sizes().max() }
