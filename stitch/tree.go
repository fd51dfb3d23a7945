package stitch

import (
	"math"

	"github.com/gmlake/gmlake/internal/btree"
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

// tree is a set of spans ordered by start (byAddr) or by (size, start) (bySize). Starts are unique
// within a tree.
//
// A tree ordered by address is a B+ tree of wide nodes (internal/btree): the owner index and the
// free sets' address indexes, which every re-carve of a cached place descends several times with
// the caches cold on a GPU host (the executor's work between two requests evicts them), so that
// what a descent costs is the lines it misses one after another, three levels of one or two for
// thousands of spans. A tree ordered by size is a treap (internal/treap), whose subtree weights
// the room search needs (ascendHeavy) and which only misses (best fit, the room and stitch
// indexes) read.
type tree struct {
	a      btree.Map[tnode] // the spans of a tree ordered by address, keyed by start
	t      treap.Tree[tnode]
	bySize bool
	// watch, if set, is told of every span inserted and removed: the loose set's size index keeps
	// the stitch index this way (stitchable.go), since a free set changes its address index in
	// place but its size index only by insert and remove.
	watch func(s span, added bool)
	// weigh, if set, gives each span inserted in a tree ordered by size its weight (treap
	// weights: the room index's bounds, room.go); spans are weighted 0 without it.
	weigh func(s span) uint64
}

// key is s's place in a tree ordered by size (a tree ordered by address is keyed by s.start).
func (t *tree) key(s span) (hi, lo uint64) { return s.size(), s.start }

// len returns the number of spans.
func (t *tree) len() int {
	if t.bySize {
		return t.t.Len()
	}
	return t.a.Len()
}

func (t *tree) insert(s span) { t.insertWith(s, nil) }

func (t *tree) insertWith(s span, b *block) {
	if t.bySize {
		var w uint64
		if t.weigh != nil {
			w = t.weigh(s)
		}
		hi, lo := t.key(s)
		t.t.Insert(hi, lo, w, tnode{s: s, b: b})
	} else {
		t.a.Insert(s.start, tnode{s: s, b: b})
	}
	if t.watch != nil {
		t.watch(s, true)
	}
}

// insertUnwatched adds s, unweighted, to a tree ordered by size without telling the watcher (a
// rebuild of what it was told: freeSet.sizes).
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
func (t *tree) clear() {
	t.t.Clear()
	t.a.Clear()
}

// remove deletes the span ordered equal to s; it reports whether there was one.
func (t *tree) remove(s span) bool {
	var gone bool
	if t.bySize {
		gone = t.t.Delete(t.key(s))
	} else {
		gone = t.a.Delete(s.start)
	}
	if gone && t.watch != nil {
		t.watch(s, false)
	}
	return gone
}

// ceilNode returns the node of the smallest span not ordered before key, or nil.
func (t *tree) ceilNode(key span) *tnode {
	if !t.bySize {
		if c := t.a.Ceil(key.start); c.Valid() {
			return c.Value()
		}
		return nil
	}
	if n := t.t.Ceil(t.key(key)); n != nil {
		return &n.Value
	}
	return nil
}

// floorNode returns the node of the largest span not ordered after key, or nil.
func (t *tree) floorNode(key span) *tnode {
	if !t.bySize {
		if c := t.a.Floor(key.start); c.Valid() {
			return c.Value()
		}
		return nil
	}
	if n := t.t.Floor(t.key(key)); n != nil {
		return &n.Value
	}
	return nil
}

// floorAt returns the place of the last span (of a tree ordered by address) starting at or before
// start, invalid if none: for changes in place (its Value, or its start by rekey).
func (t *tree) floorAt(start uint64) btree.Cursor[tnode] { return t.a.Floor(start) }

// after returns the place of the span after c's (of a tree ordered by address), or of the first
// span if c is invalid: the ceiling of any byte in the gap after c's span, without a descent.
func (t *tree) after(c btree.Cursor[tnode]) btree.Cursor[tnode] {
	if c.Valid() {
		return c.Next()
	}
	return t.a.Min()
}

// insertAfter adds s to a tree ordered by address, told c, the place of the last span starting
// before s (invalid if none): without a descent where c's leaf has room. Its watcher is told.
func (t *tree) insertAfter(c btree.Cursor[tnode], s span) {
	t.a.InsertAfter(c, s.start, tnode{s: s})
	if t.watch != nil {
		t.watch(s, true)
	}
}

// rekey moves the span at c (of a tree ordered by address) to start, which no other span's start
// lies between it and its own, and returns its new place, for its Value to be set to the span
// that now begins there.
func (t *tree) rekey(c btree.Cursor[tnode], start uint64) btree.Cursor[tnode] {
	return t.a.Rekey(c, start)
}

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
// never did. fn must not change the tree. One descent, then a step along the leaves per span.
func (t *tree) overlapping(start, end uint64, fn func(*tnode) bool) bool {
	c := t.a.Floor(start)
	switch {
	case !c.Valid():
		c = t.a.Min() // no span begins at or before start
	case c.Value().s.end <= start:
		c = c.Next() // the span before the range ends short of it
	}
	for ; c.Valid() && c.Value().s.start < end; c = c.Next() {
		if !fn(c.Value()) {
			return false
		}
	}
	return true
}

// ownerAt returns the node of the span (of a tree ordered by address, its spans disjoint) that
// holds byte pos, or nil.
func (t *tree) ownerAt(pos uint64) *tnode {
	if n := t.floorNode(span{start: pos}); n != nil && n.s.end > pos {
		return n
	}
	return nil
}

// ascendHeavy is an ascent (of a tree ordered by size) from key over only the nodes whose weight
// is at least atLeast(), which fn may raise (never lower) as it goes; subtrees whose weights are
// all below it are passed over unseen.
func (t *tree) ascendHeavy(key span, atLeast func() uint64, fn func(*tnode) bool) {
	hi, lo := t.key(key)
	t.t.AscendHeavy(hi, lo, atLeast, func(n *treap.Node[tnode]) bool { return fn(&n.Value) })
}

// reweigh sets the weight of the span ordered equal to s (in a tree ordered by size); it reports
// whether there was one.
func (t *tree) reweigh(s span, w uint64) bool {
	hi, lo := t.key(s)
	return t.t.Reweigh(hi, lo, w)
}

// weight returns the weight of the span ordered equal to s (in a tree ordered by size), and
// whether there is one.
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
	if !t.bySize {
		if c := t.a.Max(); c.Valid() {
			return c.Value().s, true
		}
		return span{}, false
	}
	if n := t.t.Max(); n != nil {
		return n.Value.s, true
	}
	return span{}, false
}

// walk calls fn on every span in order until fn returns false.
func (t *tree) walk(fn func(span) bool) {
	t.walkNodes(func(n *tnode) bool { return fn(n.s) })
}

// walkNodes calls fn on every node in order until fn returns false.
func (t *tree) walkNodes(fn func(*tnode) bool) {
	if t.bySize {
		t.t.Ascend(func(n *treap.Node[tnode]) bool { return fn(&n.Value) })
		return
	}
	t.a.Ascend(func(_ uint64, n *tnode) bool { return fn(n) })
}

// misKeyed returns the first span, in the tree's order, whose node is not keyed by the span's
// place in that order (key) or is keyed no higher than the node before it; ok is false if there is
// none. Check's: a span changed in place (recarve, a free set's merges and takes) must keep its key
// in step. A tree ordered by address also checks its B+ tree's own invariants (err).
func (t *tree) misKeyed() (bad span, found bool, err error) {
	if !t.bySize {
		if err := t.a.Check(); err != nil {
			return span{}, false, err
		}
		t.a.Ascend(func(k uint64, n *tnode) bool {
			if k != n.s.start {
				bad, found = n.s, true
			}
			return !found
		})
		return bad, found, nil
	}
	first := true
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
	return bad, found, nil
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
