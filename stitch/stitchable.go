package stitch

import "math"

// stitchable sums up the loose ranges as stitch candidates (candidate, view.go), so that what a
// plan over all of them reaches is known without walking them: the sum of their whole-handle
// middles, plus the largest head of one and tail of another (bestEnds), or the whole range when
// there is one candidate. A request that stitching cannot serve (it grows) is then told so in
// O(log n), and stitchPlan walks the loose ranges, largest first, only when they reach the request.
//
// It is kept as the loose set changes: the loose set's size index tells looseChanged of every span
// it gains and loses (tree.watch). A candidate's head, middle and tail depend only on its span and
// on where the handles holding its first and last byte begin and end, which stay as they are while
// the span is loose: a handle is made before its bytes join the loose set and released after they
// leave it, and a handle re-cut inside loose memory (handles.go) keeps its outer ends. Check verifies the
// index against a walk over the loose ranges.
type stitchable struct {
	mids  uint64 // whole-handle bytes of every candidate
	heads tree   // one span per candidate: {start, start+head}, by (head, start)
	tails tree   // likewise {start, start+tail}, by (tail, start)
}

func newStitchable() stitchable {
	return stitchable{heads: tree{bySize: true}, tails: tree{bySize: true}}
}

// newLoose makes an empty loose set that keeps the stitch index.
func (e *Engine) newLoose() *freeSet {
	f := newFreeSet()
	f.bySize.watch = e.looseChanged
	e.stitchable = newStitchable()
	return f
}

// candidateOf is loose range s as a stitch candidate, or false when s cannot join a view: it lies
// inside one handle touching neither end, or it is below the smallest piece allowed.
func (e *Engine) candidateOf(s span) (candidate, bool) {
	lo, hi := e.wholeHandles(s)
	if lo > hi || s.size() < min(e.cfg.minStitch, e.g) {
		return candidate{}, false
	}
	return candidate{s: s, head: lo - s.start, mid: hi - lo, tail: s.end - hi}, true
}

// looseChanged counts loose span s in the stitch index (added) or takes it out.
func (e *Engine) looseChanged(s span, added bool) {
	c, ok := e.candidateOf(s)
	if !ok {
		return
	}
	x := &e.stitchable
	head, tail := span{start: s.start, end: s.start + c.head}, span{start: s.start, end: s.start + c.tail}
	if added {
		x.mids += c.mid
		x.heads.insert(head)
		x.tails.insert(tail)
		return
	}
	x.mids -= c.mid
	if !x.heads.remove(head) || !x.tails.remove(tail) {
		panic("stitch: a loose range leaves the stitch index as another candidate than it joined")
	}
}

// stitchReach is what a stitch plan over every loose range reaches (planFrom's reach when no plan
// is made).
func (e *Engine) stitchReach() uint64 {
	x := &e.stitchable
	switch x.heads.len() {
	case 0:
		return 0
	case 1:
		h, _ := x.heads.max()
		s, _ := e.loose.byAddr.floor(span{start: h.start})
		return s.size()
	}
	h1, h2 := topTwo(&x.heads)
	t1, t2 := topTwo(&x.tails)
	if h1.start != t1.start {
		return x.mids + h1.size() + t1.size()
	}
	return x.mids + max(h1.size()+t2.size(), h2.size()+t1.size())
}

// topTwo returns the two last spans of a tree ordered by size, which holds two at least.
func topTwo(t *tree) (a, b span) {
	a, _ = t.max()
	hi, lo := a.size(), a.start-1
	if a.start == 0 {
		hi, lo = a.size()-1, math.MaxUint64
	}
	return a, t.t.Floor(hi, lo).Value.s
}
