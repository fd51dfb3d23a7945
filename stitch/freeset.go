package stitch

// freeSet is a set of disjoint free byte ranges, coalesced (two adjacent spans of the same owner are
// always one span), indexed by address (to coalesce and to answer "is this range free") and by size
// (for best fit).
type freeSet struct {
	byAddr tree
	bySize tree
	bytes  uint64 // sum of span sizes
}

func newFreeSet() *freeSet {
	return &freeSet{bySize: tree{bySize: true}}
}

func (f *freeSet) len() int { return f.byAddr.len() }

func (f *freeSet) add(s span) {
	f.byAddr.insert(s)
	f.bySize.insert(s)
	f.bytes += s.size()
}

func (f *freeSet) drop(s span) {
	f.byAddr.remove(s)
	f.bySize.remove(s)
	f.bytes -= s.size()
}

// insert adds s (which must not overlap the set), coalescing with its neighbours of the same owner,
// and returns the span that now holds it. A merge with the neighbour before keeps that node of the
// address index (its start, the key, does not change) and one with the neighbour after moves that
// node's key to s's start, which no other span lies between: the address index changes in place.
func (f *freeSet) insert(s span) span {
	prev := f.byAddr.floorTreap(s.start)
	if prev != nil && (prev.Value.s.end != s.start || prev.Value.s.owner != s.owner) {
		prev = nil
	}
	next := f.byAddr.ceilTreap(s.end)
	if next != nil && (next.Value.s.start != s.end || next.Value.s.owner != s.owner) {
		next = nil
	}
	merged := s
	switch {
	case prev != nil && next != nil:
		p, n := prev.Value.s, next.Value.s
		merged.start, merged.end = p.start, n.end
		f.bySize.remove(p)
		f.bySize.remove(n)
		f.byAddr.remove(n)
		prev.Value.s = merged
	case prev != nil:
		p := prev.Value.s
		merged.start = p.start
		f.bySize.remove(p)
		prev.Value.s = merged
	case next != nil:
		n := next.Value.s
		merged.end = n.end
		f.bySize.remove(n)
		next.Rekey(f.byAddr.key(merged))
		next.Value.s = merged
	default:
		f.byAddr.insert(s)
	}
	f.bySize.insert(merged)
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
	n := f.byAddr.floorTreap(start)
	if n == nil || n.Value.s.end < end {
		return false
	}
	s := n.Value.s
	f.bySize.remove(s)
	before := span{start: s.start, end: start, owner: s.owner}
	after := span{start: end, end: s.end, owner: s.owner}
	switch {
	case before.size() > 0 && after.size() > 0:
		n.Value.s = before
		f.bySize.insert(before)
		f.byAddr.insert(after)
		f.bySize.insert(after)
	case before.size() > 0:
		n.Value.s = before
		f.bySize.insert(before)
	case after.size() > 0:
		n.Rekey(f.byAddr.key(after))
		n.Value.s = after
		f.bySize.insert(after)
	default:
		f.byAddr.remove(s)
	}
	f.bytes -= end - start
	return true
}

// bestFit returns the smallest span of at least size bytes (the lowest such if several).
func (f *freeSet) bestFit(size uint64) (span, bool) {
	return f.bySize.ceil(span{start: 0, end: size})
}

// largest returns the largest span.
func (f *freeSet) largest() (span, bool) { return f.bySize.max() }
