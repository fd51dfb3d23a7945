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
// leave it. Check verifies the index against a walk over the loose ranges.
//
// It is read only when a request may stitch, which in the steady iterations of a training loop is
// rare, while every miss there changes the loose set several times: re-carving a place takes loose
// bytes and gives a flushed block's rest back. So the index is kept lazily. It counts the changes
// since it was last read (lag); once they outnumber the loose ranges it is dropped (stale) and
// changes cost nothing until the next read rebuilds it from a walk over the loose ranges (stitchIndex).
// A rebuild costs about what as many changes as there are loose ranges cost, so kept either way
// the index costs at most about twice its incremental upkeep between two reads, and nothing past
// that while it is not read. The sets it holds, and so every plan and reach, are the same either
// way. Measured on the training-loop steps of the H200 ResNet traces (results/bench/STEADY-CPU.md):
// the index's upkeep was about a fifth of the engine's instructions per alloc+free pair there.
//
// The candidates holding whole handles are kept by address too (wholes): a handle that could be
// released lies whole in one of them, so EmptyCache looks through them (releaseCandidates) rather
// than through every handle.
type stitchable struct {
	mids   uint64 // whole-handle bytes of every candidate
	heads  tree   // one span per candidate: {start, start+head}, by (head, start)
	tails  tree   // likewise {start, start+tail}, by (tail, start)
	wholes tree   // the candidates with whole handles (mid > 0), by address
	lag    int    // changes counted since the index was last read (stitchIndex)
	stale  bool   // dropped: mids, heads, tails and wholes are empty until stitchIndex rebuilds them
}

func newStitchable() stitchable {
	return stitchable{heads: tree{bySize: true}, tails: tree{bySize: true}}
}

// newLoose makes an empty loose set that keeps the stitch index.
func (l *layout) newLoose() *freeSet {
	f := newLazyFreeSet()
	f.bySize.watch = l.looseChanged
	l.stitchable = newStitchable()
	return f
}

// candidateOf is loose range s as a stitch candidate, or false when s cannot join a view: it lies
// inside one handle touching neither end, or it is below the smallest piece allowed.
func (l *layout) candidateOf(s span) (candidate, bool) {
	lo, hi := l.wholeHandles(s)
	if lo > hi || s.size() < min(l.minStitch, l.g) {
		return candidate{}, false
	}
	return candidate{s: s, head: lo - s.start, mid: hi - lo, tail: s.end - hi}, true
}

// looseChanged counts loose span s in the stitch index (added) or takes it out; a span added
// lowers the bound of the rooms it lies in (roomLoosened).
func (l *layout) looseChanged(s span, added bool) {
	if added {
		l.roomLoosened(s)
	}
	x := &l.stitchable
	if x.stale {
		return
	}
	if x.lag++; x.lag > l.loose.len() {
		*x = newStitchable()
		x.stale = true
		return
	}
	c, ok := l.candidateOf(s)
	if !ok {
		return
	}
	if added {
		x.add(c)
		return
	}
	x.mids -= c.mid
	if !x.heads.remove(c.headSpan()) || !x.tails.remove(c.tailSpan()) || c.mid > 0 && !x.wholes.remove(c.s) {
		panic("stitch: a loose range leaves the stitch index as another candidate than it joined")
	}
}

// add counts candidate c in the index.
func (x *stitchable) add(c candidate) {
	x.mids += c.mid
	x.heads.insert(c.headSpan())
	x.tails.insert(c.tailSpan())
	if c.mid > 0 {
		x.wholes.insert(c.s)
	}
}

// releaseCandidates lists, in address order, the handles that lie whole in loose ranges: those
// EmptyCache may release (releasable), found in O(k log n) for k of them.
func (l *layout) releaseCandidates() []*physAlloc {
	var pas []*physAlloc
	l.stitchIndex().wholes.walk(func(s span) bool {
		lo, hi := l.wholeHandles(s)
		for at := lo; at < hi; {
			pa := l.allocs[l.slots[at/l.g].h]
			pas = append(pas, pa)
			at = (pa.first + pa.n) * l.g
		}
		return true
	})
	return pas
}

// headSpan and tailSpan are c's entries in the stitch index: spans from its start as long as its head,
// and as its tail.
func (c candidate) headSpan() span { return span{start: c.s.start, end: c.s.start + c.head} }
func (c candidate) tailSpan() span { return span{start: c.s.start, end: c.s.start + c.tail} }

// stitchIndex returns the stitch index, rebuilt from the loose ranges if it was dropped, and
// starts counting the changes since this read afresh.
func (l *layout) stitchIndex() *stitchable {
	x := &l.stitchable
	x.lag = 0
	if x.stale {
		x.stale = false
		l.loose.byAddr.walk(func(s span) bool {
			if c, ok := l.candidateOf(s); ok {
				x.add(c)
			}
			return true
		})
	}
	return x
}

// stitchReach is what a stitch plan over every loose range reaches (planFrom's reach when no plan
// is made).
func (l *layout) stitchReach() uint64 {
	x := l.stitchIndex()
	switch x.heads.len() {
	case 0:
		return 0
	case 1:
		h, _ := x.heads.max()
		s, _ := l.loose.byAddr.floor(span{start: h.start})
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
