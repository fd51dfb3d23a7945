package baseline

// treap is an ordered set of nodes keyed by a pair (hi, lo), compared hi first. Each node carries a
// value, and every subtree knows its largest value, so "the first node in key order whose value is
// at least v" takes O(log n). The caching allocator keys free blocks by (size, address) and asks
// for the smallest key at or above (size, 0): best fit. The first-fit arena keys free blocks by
// (offset, 0) with the block's size as value and asks for the first value >= size: first fit.
// Priorities come from a fixed-seed generator, so runs are reproducible.
type treap struct {
	root  *treapNode
	len   int
	rng   uint64     // xorshift state for priorities
	spare *treapNode // deleted nodes kept for reuse (linked through right), so churn allocates nothing
}

type treapNode struct {
	hi, lo      uint64 // key
	val         uint64 // payload; maxVal aggregates it
	maxVal      uint64 // largest val in this subtree
	prio        uint64
	left, right *treapNode
	ref         any // what the node stands for (a block), opaque to the tree
}

func keyLess(aHi, aLo, bHi, bLo uint64) bool {
	return aHi < bHi || (aHi == bHi && aLo < bLo)
}

func (n *treapNode) fix() {
	n.maxVal = n.val
	if n.left != nil && n.left.maxVal > n.maxVal {
		n.maxVal = n.left.maxVal
	}
	if n.right != nil && n.right.maxVal > n.maxVal {
		n.maxVal = n.right.maxVal
	}
}

func (t *treap) nextPrio() uint64 {
	if t.rng == 0 {
		t.rng = 0x9e3779b97f4a7c15
	}
	t.rng ^= t.rng << 13
	t.rng ^= t.rng >> 7
	t.rng ^= t.rng << 17
	return t.rng
}

// split divides n into the keys < (hi, lo) and the keys >= (hi, lo).
func split(n *treapNode, hi, lo uint64) (less, rest *treapNode) {
	if n == nil {
		return nil, nil
	}
	if keyLess(n.hi, n.lo, hi, lo) {
		n.right, rest = split(n.right, hi, lo)
		n.fix()
		return n, rest
	}
	less, n.left = split(n.left, hi, lo)
	n.fix()
	return less, n
}

// merge joins a and b, every key of a being less than every key of b.
func merge(a, b *treapNode) *treapNode {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	if a.prio > b.prio {
		a.right = merge(a.right, b)
		a.fix()
		return a
	}
	b.left = merge(a, b.left)
	b.fix()
	return b
}

// insert adds a node; the key must not be present.
func (t *treap) insert(hi, lo, val uint64, ref any) *treapNode {
	n := t.spare
	if n != nil {
		t.spare = n.right
	} else {
		n = new(treapNode)
	}
	*n = treapNode{hi: hi, lo: lo, val: val, maxVal: val, prio: t.nextPrio(), ref: ref}
	less, rest := split(t.root, hi, lo)
	t.root = merge(merge(less, n), rest)
	t.len++
	return n
}

// delete removes the node with key (hi, lo) and reports whether it was there.
func (t *treap) delete(hi, lo uint64) bool {
	var gone *treapNode
	t.root = deleteNode(t.root, hi, lo, &gone)
	if gone == nil {
		return false
	}
	t.len--
	*gone = treapNode{right: t.spare}
	t.spare = gone
	return true
}

// deleteNode removes key (hi, lo) from the subtree at n, setting *gone to the removed node.
func deleteNode(n *treapNode, hi, lo uint64, gone **treapNode) *treapNode {
	if n == nil {
		return nil
	}
	switch {
	case keyLess(hi, lo, n.hi, n.lo):
		n.left = deleteNode(n.left, hi, lo, gone)
	case keyLess(n.hi, n.lo, hi, lo):
		n.right = deleteNode(n.right, hi, lo, gone)
	default:
		*gone = n
		return merge(n.left, n.right)
	}
	n.fix()
	return n
}

// ceil returns the node with the smallest key >= (hi, lo), or nil.
func (t *treap) ceil(hi, lo uint64) *treapNode {
	var best *treapNode
	for n := t.root; n != nil; {
		if keyLess(n.hi, n.lo, hi, lo) {
			n = n.right
		} else {
			best, n = n, n.left
		}
	}
	return best
}

// floor returns the node with the largest key <= (hi, lo), or nil.
func (t *treap) floor(hi, lo uint64) *treapNode {
	var best *treapNode
	for n := t.root; n != nil; {
		if keyLess(hi, lo, n.hi, n.lo) {
			n = n.left
		} else {
			best, n = n, n.right
		}
	}
	return best
}

// firstValAtLeast returns the node with the smallest key whose val >= v, or nil.
func (t *treap) firstValAtLeast(v uint64) *treapNode {
	n := t.root
	if n == nil || n.maxVal < v {
		return nil
	}
	for {
		switch {
		case n.left != nil && n.left.maxVal >= v:
			n = n.left
		case n.val >= v:
			return n
		default:
			n = n.right // its maxVal >= v, or the parent's could not be
		}
	}
}

// each calls f on every node in key order until f returns false.
func (t *treap) each(f func(*treapNode) bool) {
	var walk func(n *treapNode) bool
	walk = func(n *treapNode) bool {
		return n == nil || (walk(n.left) && f(n) && walk(n.right))
	}
	walk(t.root)
}
