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
// and returns the span that now holds it.
func (f *freeSet) insert(s span) span {
	if prev, ok := f.byAddr.floor(span{start: s.start}); ok && prev.end == s.start && prev.owner == s.owner {
		f.drop(prev)
		s.start = prev.start
	}
	if next, ok := f.byAddr.ceil(span{start: s.end}); ok && next.start == s.end && next.owner == s.owner {
		f.drop(next)
		s.end = next.end
	}
	f.add(s)
	return s
}

// containing returns the span holding [start, end), if the whole range is free.
func (f *freeSet) containing(start, end uint64) (span, bool) {
	s, ok := f.byAddr.floor(span{start: start})
	if !ok || s.end < end {
		return span{}, false
	}
	return s, true
}

// take removes [start, end), which must be free, from the set.
func (f *freeSet) take(start, end uint64) bool {
	s, ok := f.containing(start, end)
	if !ok {
		return false
	}
	f.drop(s)
	if s.start < start {
		f.add(span{start: s.start, end: start, owner: s.owner})
	}
	if end < s.end {
		f.add(span{start: end, end: s.end, owner: s.owner})
	}
	return true
}

// bestFit returns the smallest span of at least size bytes (the lowest such if several).
func (f *freeSet) bestFit(size uint64) (span, bool) {
	return f.bySize.ceil(span{start: 0, end: size})
}

// largest returns the largest span.
func (f *freeSet) largest() (span, bool) { return f.bySize.max() }
