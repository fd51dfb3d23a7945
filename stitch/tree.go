package stitch

// span is a half-open byte range [start, end): arena offsets in the large pool, virtual addresses in
// the small pool. owner tags the page a small-pool span belongs to (0 in the arena); spans coalesce
// only with neighbours of the same owner.
type span struct {
	start, end uint64
	owner      uint64
}

func (s span) size() uint64 { return s.end - s.start }

// tnode is a node of a treap.
type tnode struct {
	s           span
	b           *block // the block owning s, in the owner index; nil in free sets
	prio        uint32
	left, right *tnode
}

// tree is a treap of spans ordered by start (byAddr) or by (size, start) (bySize). Starts are unique
// within a tree. Removed nodes are kept for reuse so that steady churn allocates nothing.
type tree struct {
	root   *tnode
	n      int
	bySize bool
	spare  *tnode // free nodes, linked through right
	seed   uint32
}

func (t *tree) less(a, b span) bool {
	if t.bySize && a.size() != b.size() {
		return a.size() < b.size()
	}
	return a.start < b.start
}

func (t *tree) newNode(s span) *tnode {
	n := t.spare
	if n != nil {
		t.spare = n.right
		n.right = nil
	} else {
		n = &tnode{}
	}
	// xorshift: deterministic priorities keep replays reproducible.
	t.seed ^= t.seed << 13
	t.seed ^= t.seed >> 17
	t.seed ^= t.seed << 5
	if t.seed == 0 {
		t.seed = 2463534242
	}
	n.s, n.prio = s, t.seed
	return n
}

func (t *tree) insert(s span) { t.insertWith(s, nil) }

func (t *tree) insertWith(s span, b *block) {
	n := t.newNode(s)
	n.b = b
	t.root = t.ins(t.root, n)
	t.n++
}

func (t *tree) ins(n, x *tnode) *tnode {
	if n == nil {
		return x
	}
	if t.less(x.s, n.s) {
		n.left = t.ins(n.left, x)
		if n.left.prio > n.prio {
			l := n.left
			n.left, l.right = l.right, n
			return l
		}
	} else {
		n.right = t.ins(n.right, x)
		if n.right.prio > n.prio {
			r := n.right
			n.right, r.left = r.left, n
			return r
		}
	}
	return n
}

// remove deletes the span ordered equal to s; it reports whether there was one.
func (t *tree) remove(s span) bool {
	var found bool
	t.root = t.del(t.root, s, &found)
	if found {
		t.n--
	}
	return found
}

func (t *tree) del(n *tnode, s span, found *bool) *tnode {
	if n == nil {
		return nil
	}
	switch {
	case t.less(s, n.s):
		n.left = t.del(n.left, s, found)
	case t.less(n.s, s):
		n.right = t.del(n.right, s, found)
	default:
		*found = true
		m := merge(n.left, n.right)
		n.left, n.right, n.b = nil, t.spare, nil
		t.spare = n
		return m
	}
	return n
}

func merge(a, b *tnode) *tnode {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	if a.prio > b.prio {
		a.right = merge(a.right, b)
		return a
	}
	b.left = merge(a, b.left)
	return b
}

// ceilNode returns the node of the smallest span not ordered before key, or nil.
func (t *tree) ceilNode(key span) *tnode {
	var best *tnode
	for n := t.root; n != nil; {
		if !t.less(n.s, key) {
			best, n = n, n.left
		} else {
			n = n.right
		}
	}
	return best
}

// floorNode returns the node of the largest span not ordered after key, or nil.
func (t *tree) floorNode(key span) *tnode {
	var best *tnode
	for n := t.root; n != nil; {
		if !t.less(key, n.s) {
			best, n = n, n.right
		} else {
			n = n.left
		}
	}
	return best
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
// never did. fn must not change the tree. One descent, which finds both the span starting before
// start that may reach into the range and the path to the first span starting at or after it,
// then an in-order walk: O(log n + k).
func (t *tree) overlapping(start, end uint64, fn func(*tnode) bool) bool {
	var buf [64]*tnode
	stack := buf[:0]
	var before *tnode // the span with the largest start below start
	for x := t.root; x != nil; {
		if x.s.start >= start {
			stack = append(stack, x)
			x = x.left
		} else {
			before, x = x, x.right
		}
	}
	if before != nil && before.s.end > start && !fn(before) {
		return false
	}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n.s.start >= end {
			return true
		}
		if !fn(n) {
			return false
		}
		for x := n.right; x != nil; x = x.left {
			stack = append(stack, x)
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

// max returns the last span in order.
func (t *tree) max() (span, bool) {
	n := t.root
	if n == nil {
		return span{}, false
	}
	for n.right != nil {
		n = n.right
	}
	return n.s, true
}

// walk calls fn on every span in order until fn returns false.
func (t *tree) walk(fn func(span) bool) { walkNode(t.root, func(n *tnode) bool { return fn(n.s) }) }

// walkNodes calls fn on every node in order until fn returns false.
func (t *tree) walkNodes(fn func(*tnode) bool) { walkNode(t.root, fn) }

func walkNode(n *tnode, fn func(*tnode) bool) bool {
	for n != nil {
		if !walkNode(n.left, fn) || !fn(n) {
			return false
		}
		n = n.right
	}
	return true
}
