package stitch

import (
	"math"

	"github.com/gmlake/gmlake/internal/treap"
)

// span is a half-open byte range [start, end): arena offsets in the large pool, virtual addresses in
// the small pool. owner tags the page a small-pool span belongs to (0 in the arena); spans coalesce
// only with neighbours of the same owner.
type span struct {
	start, end uint64
	owner      uint64
}

func (s span) size() uint64 { return s.end - s.start }

// tnode is what a tree holds for a span.
type tnode struct {
	s span
	b *block // the block owning s, in the owner index; nil in free sets
	// boundZero, in the room index's address index, notes that the room's bound is 0 in its size
	// index (roomLoosened), so that new loose bytes in the room cost no reweigh there. A bound
	// rises only when its room changes, which gives the span a new tnode (freeSet).
	boundZero bool
}

// tree is a set of spans ordered by start (byAddr) or by (size, start) (bySize), kept in a treap.
// Starts are unique within a tree.
type tree struct {
	t      treap.Tree[tnode]
	bySize bool
	// watch, if set, is told of every span inserted and removed: the loose set's size index keeps
	// the stitch index this way (stitchable.go), since a free set changes its address index in
	// place but its size index only by insert and remove.
	watch func(s span, added bool)
	// weigh, if set, gives each span inserted its weight (treap weights: the room index's bounds,
	// room.go); spans are weighted 0 without it.
	weigh func(s span) uint64
}

// key is s's place in the tree's order.
func (t *tree) key(s span) (hi, lo uint64) {
	if t.bySize {
		return s.size(), s.start
	}
	return s.start, 0
}

// len returns the number of spans.
func (t *tree) len() int { return t.t.Len() }

func (t *tree) insert(s span) { t.insertWith(s, nil) }

func (t *tree) insertWith(s span, b *block) {
	hi, lo := t.key(s)
	var w uint64
	if t.weigh != nil {
		w = t.weigh(s)
	}
	t.t.Insert(hi, lo, w, tnode{s: s, b: b})
	if t.watch != nil {
		t.watch(s, true)
	}
}

// insertUnwatched adds s, unweighted, without telling the watcher (a rebuild of what it was told).
func (t *tree) insertUnwatched(s span) {
	hi, lo := t.key(s)
	t.t.Insert(hi, lo, 0, tnode{s: s})
}

// notify tells the watcher, if any, that s was added or removed.
func (t *tree) notify(s span, added bool) {
	if t.watch != nil {
		t.watch(s, added)
	}
}

// clear empties the tree; its watcher is not told.
func (t *tree) clear() { t.t.Clear() }

// remove deletes the span ordered equal to s; it reports whether there was one.
func (t *tree) remove(s span) bool {
	gone := t.t.Delete(t.key(s))
	if gone && t.watch != nil {
		t.watch(s, false)
	}
	return gone
}

// ceilNode returns the node of the smallest span not ordered before key, or nil.
func (t *tree) ceilNode(key span) *tnode {
	if n := t.t.Ceil(t.key(key)); n != nil {
		return &n.Value
	}
	return nil
}

// floorNode returns the node of the largest span not ordered after key, or nil.
func (t *tree) floorNode(key span) *tnode {
	if n := t.t.Floor(t.key(key)); n != nil {
		return &n.Value
	}
	return nil
}

// floorTreap returns the tree node of the last span (of a tree ordered by address) starting at or
// before start, or nil: for changes in place (its Value, or its key by Rekey).
func (t *tree) floorTreap(start uint64) *treap.Node[tnode] { return t.t.Floor(start, 0) }

// ceilTreap returns the tree node of the first span (of a tree ordered by address) starting at or
// after start, or nil.
func (t *tree) ceilTreap(start uint64) *treap.Node[tnode] { return t.t.Ceil(start, 0) }

// ceil returns the smallest span not ordered before key.
func (t *tree) ceil(key span) (span, bool) {
	if n := t.ceilNode(key); n != nil {
		return n.s, true
	}
	return span{}, false
}

// floor returns the largest span not ordered after key.
func (t *tree) floor(key span) (span, bool) {
	if n := t.floorNode(key); n != nil {
		return n.s, true
	}
	return span{}, false
}

// overlapping calls fn on the node of every span (of a tree ordered by address, its spans
// disjoint) that overlaps [start, end), in order, until fn returns false; it reports whether fn
// never did. fn must not change the tree. A descent for the span starting at or before start,
// then one for each of the next few spans, then an in-order walk for the rest: most queries (a
// block's range, a home) meet one or two spans, and for those a descent costs less than the stack
// of a walk (on the ResNet-18 trace's steady iterations, 5% of the engine's instructions); a walk
// keeps a long query O(log n + k).
func (t *tree) overlapping(start, end uint64, fn func(*tnode) bool) bool {
	n := t.t.Floor(start, 0)
	if n == nil || n.Value.s.end <= start {
		n = t.t.Ceil(start, 0) // no span before the range, or it ends short of it
	}
	for range overlapDescents {
		if n == nil || n.Value.s.start >= end {
			return true
		}
		if !fn(&n.Value) {
			return false
		}
		n = t.t.Ceil(n.Value.s.start+1, 0)
	}
	if n == nil {
		return true
	}
	return t.t.AscendRange(n.Value.s.start, 0, end, 0, func(n *treap.Node[tnode]) bool { return fn(&n.Value) })
}

// overlapDescents is how many spans overlapping finds by a descent each before it walks.
const overlapDescents = 4

// ownerAt returns the node of the span (of a tree ordered by address, its spans disjoint) that
// holds byte pos, or nil.
func (t *tree) ownerAt(pos uint64) *tnode {
	if n := t.floorNode(span{start: pos}); n != nil && n.s.end > pos {
		return n
	}
	return nil
}

// ascend calls fn on the node of every span not ordered before key, in order, until fn returns
// false. fn must not change the tree. O(log n + k) for k nodes visited.
func (t *tree) ascend(key span, fn func(*tnode) bool) {
	hi, lo := t.key(key)
	t.t.AscendRange(hi, lo, ^uint64(0), ^uint64(0), func(n *treap.Node[tnode]) bool { return fn(&n.Value) })
}

// ascendHeavy is ascend over only the nodes whose weight is at least atLeast(), which fn may raise
// (never lower) as it goes; subtrees whose weights are all below it are passed over unseen.
func (t *tree) ascendHeavy(key span, atLeast func() uint64, fn func(*tnode) bool) {
	hi, lo := t.key(key)
	t.t.AscendHeavy(hi, lo, atLeast, func(n *treap.Node[tnode]) bool { return fn(&n.Value) })
}

// reweigh sets the weight of the span ordered equal to s; it reports whether there was one.
func (t *tree) reweigh(s span, w uint64) bool {
	hi, lo := t.key(s)
	return t.t.Reweigh(hi, lo, w)
}

// weight returns the weight of the span ordered equal to s, and whether there is one.
func (t *tree) weight(s span) (uint64, bool) {
	hi, lo := t.key(s)
	if n := t.t.Ceil(hi, lo); n != nil {
		if h, l := n.Key(); h == hi && l == lo {
			return n.Weight(), true
		}
	}
	return 0, false
}

// max returns the last span in order.
func (t *tree) max() (span, bool) {
	if n := t.t.Max(); n != nil {
		return n.Value.s, true
	}
	return span{}, false
}

// walk calls fn on every span in order until fn returns false.
func (t *tree) walk(fn func(span) bool) {
	t.t.Ascend(func(n *treap.Node[tnode]) bool { return fn(n.Value.s) })
}

// walkNodes calls fn on every node in order until fn returns false.
// misKeyed returns the first span, in the tree's order, whose node is not keyed by the span's
// place in that order (key) or is keyed no higher than the node before it; ok is false if there is
// none. Check's: a span changed in place (recarve) must keep its key in step.
func (t *tree) misKeyed() (span, bool) {
	var bad span
	found, first := false, true
	var lastHi, lastLo uint64
	t.t.Ascend(func(n *treap.Node[tnode]) bool {
		hi, lo := n.Key()
		wantHi, wantLo := t.key(n.Value.s)
		if hi != wantHi || lo != wantLo || !first && (hi < lastHi || hi == lastHi && lo <= lastLo) {
			bad, found = n.Value.s, true
			return false
		}
		first, lastHi, lastLo = false, hi, lo
		return true
	})
	return bad, found
}

func (t *tree) walkNodes(fn func(*tnode) bool) {
	t.t.Ascend(func(n *treap.Node[tnode]) bool { return fn(&n.Value) })
}

// largestFirst calls fn on every span of a tree ordered by size, largest first, equal sizes lowest
// address first, until fn returns false; next is the span after s in that order (more is false
// after the last), so fn knows that every span still to come is smaller than next, or as large
// and not below it. O(log n) a span.
func (t *tree) largestFirst(fn func(s, next span, more bool) bool) {
	// lowest returns the lowest-addressed span of the largest size not above hi.
	lowest := func(hi uint64) (span, bool) {
		n := t.t.Floor(hi, math.MaxUint64)
		if n == nil {
			return span{}, false
		}
		return t.t.Ceil(n.Value.s.size(), 0).Value.s, true
	}
	after := func(s span) (span, bool) {
		if n := t.t.Ceil(s.size(), s.start+1); n != nil && n.Value.s.size() == s.size() {
			return n.Value.s, true
		}
		if s.size() == 0 {
			return span{}, false
		}
		return lowest(s.size() - 1)
	}
	s, ok := lowest(math.MaxUint64)
	for ok {
		next, more := after(s)
		if !fn(s, next, more) {
			return
		}
		s, ok = next, more
	}
}
