package treap

// Tree is an ordered set of nodes with distinct keys. The zero value is an empty tree.
type Tree[V any] struct {
	root  *Node[V]
	len   int
	rng   uint64     // xorshift state for priorities; 0 until the first insert
	spare *Node[V]   // deleted nodes kept for reuse, linked through right
	path  []*Node[V] // Delete's scratch: the nodes above the one removed
	// weighted: a node has been given a weight above 0. Until then every weight and largest
	// weight is 0, and inserts and deletes leave them unread.
	weighted bool
}

// Len returns the number of nodes.
func (t *Tree[V]) Len() int { return t.len }

// MaxWeight returns the largest weight in the tree, 0 when it is empty.
func (t *Tree[V]) MaxWeight() uint64 {
	if t.root == nil {
		return 0
	}
	return t.root.maxWeight
}

func (t *Tree[V]) nextPrio() uint64 {
	if t.rng == 0 {
		t.rng = 0x9e3779b97f4a7c15
	}
	t.rng ^= t.rng << 13
	t.rng ^= t.rng >> 7
	t.rng ^= t.rng << 17
	return t.rng
}

// Insert adds a node of key (hi, lo), weight w and value v, and returns it. The key must not be in
// the tree already.
func (t *Tree[V]) Insert(hi, lo, w uint64, v V) *Node[V] {
	n := t.spare
	if n != nil {
		t.spare = n.right
	} else {
		n = new(Node[V])
	}
	n.hi, n.lo, n.weight, n.maxWeight, n.prio, n.left, n.right = hi, lo, w, w, t.nextPrio(), nil, nil
	n.Value = v
	t.weighted = t.weighted || w > 0
	insert(&t.root, n, t.weighted)
	t.len++
	return n
}

// Delete removes the node of key (hi, lo) and reports whether there was one.
func (t *Tree[V]) Delete(hi, lo uint64) bool {
	gone := remove(&t.root, hi, lo, &t.path, t.weighted)
	if gone == nil {
		return false
	}
	t.len--
	var zero V
	gone.left, gone.right, gone.Value = nil, t.spare, zero // drop what the value points to
	t.spare = gone
	return true
}

// Ceil returns the node of the smallest key at or after (hi, lo), or nil.
func (t *Tree[V]) Ceil(hi, lo uint64) *Node[V] {
	var best *Node[V]
	for n := t.root; n != nil; {
		if less(n.hi, n.lo, hi, lo) {
			n = n.right
		} else {
			best, n = n, n.left
		}
	}
	return best
}

// Floor returns the node of the largest key at or before (hi, lo), or nil.
func (t *Tree[V]) Floor(hi, lo uint64) *Node[V] {
	var best *Node[V]
	for n := t.root; n != nil; {
		if less(hi, lo, n.hi, n.lo) {
			n = n.left
		} else {
			best, n = n, n.right
		}
	}
	return best
}

// Max returns the node of the largest key, or nil.
func (t *Tree[V]) Max() *Node[V] {
	n := t.root
	if n == nil {
		return nil
	}
	for n.right != nil {
		n = n.right
	}
	return n
}

// FirstWeightAtLeast returns the node of the smallest key whose weight is at least w, or nil.
func (t *Tree[V]) FirstWeightAtLeast(w uint64) *Node[V] {
	n := t.root
	if n == nil || n.maxWeight < w {
		return nil
	}
	for {
		switch {
		case n.left != nil && n.left.maxWeight >= w:
			n = n.left
		case n.weight >= w:
			return n
		default:
			n = n.right // its maxWeight is at least w, or n's could not be
		}
	}
}

// Ascend calls fn on every node in key order until fn returns false; it reports whether fn never
// did. fn must not insert or delete.
func (t *Tree[V]) Ascend(fn func(*Node[V]) bool) bool { return ascend(t.root, fn) }

// AscendRange calls fn on every node of key in [(fromHi, fromLo), (toHi, toLo)), in key order, until
// fn returns false; it reports whether fn never did. fn must not insert or delete. One descent,
// then an in-order walk: O(log n + k) for k calls.
func (t *Tree[V]) AscendRange(fromHi, fromLo, toHi, toLo uint64, fn func(*Node[V]) bool) bool {
	var buf [64]*Node[V]
	stack := buf[:0]
	for x := t.root; x != nil; {
		if less(x.hi, x.lo, fromHi, fromLo) {
			x = x.right
		} else {
			stack = append(stack, x)
			x = x.left
		}
	}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !less(n.hi, n.lo, toHi, toLo) {
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

// Reweigh gives the node of key (hi, lo) weight w in place and reports whether there was one: one
// descent, the subtree weights fixed on the way back up.
func (t *Tree[V]) Reweigh(hi, lo, w uint64) bool {
	t.weighted = t.weighted || w > 0
	return reweigh(t.root, hi, lo, w)
}

func reweigh[V any](n *Node[V], hi, lo, w uint64) bool {
	if n == nil {
		return false
	}
	var found bool
	switch {
	case less(hi, lo, n.hi, n.lo):
		found = reweigh(n.left, hi, lo, w)
	case less(n.hi, n.lo, hi, lo):
		found = reweigh(n.right, hi, lo, w)
	default:
		n.weight, found = w, true
	}
	if found {
		n.fix()
	}
	return found
}

// AscendHeavy calls fn, in key order from (fromHi, fromLo), on every node whose weight is at least
// atLeast(), until fn returns false; it reports whether fn never did. atLeast is asked again before
// each subtree and node, so fn may raise it as it goes (it must never lower it): a subtree whose
// largest weight is below it is passed over without a look. fn must not insert, delete or reweigh. O(log n) a node visited
// when the nodes passed over lie in a few subtrees.
func (t *Tree[V]) AscendHeavy(fromHi, fromLo uint64, atLeast func() uint64, fn func(*Node[V]) bool) bool {
	return ascendHeavy(t.root, fromHi, fromLo, atLeast, fn)
}

func ascendHeavy[V any](n *Node[V], fromHi, fromLo uint64, atLeast func() uint64, fn func(*Node[V]) bool) bool {
	for n != nil && n.maxWeight >= atLeast() {
		if less(n.hi, n.lo, fromHi, fromLo) {
			n = n.right // n and its left subtree come before the start
			continue
		}
		if !ascendHeavy(n.left, fromHi, fromLo, atLeast, fn) {
			return false
		}
		if n.weight >= atLeast() && !fn(n) {
			return false
		}
		n = n.right
	}
	return true
}

// Clear empties the tree, keeping its nodes for reuse.
func (t *Tree[V]) Clear() {
	var zero V
	var drop func(n *Node[V])
	drop = func(n *Node[V]) {
		if n == nil {
			return
		}
		l, r := n.left, n.right
		n.left, n.right, n.Value = nil, t.spare, zero
		t.spare = n
		drop(l)
		drop(r)
	}
	drop(t.root)
	t.root, t.len = nil, 0
}
