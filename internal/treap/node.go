package treap

// Node is one entry of a Tree. Its key and weight are set by Tree.Insert and read through Key and
// Weight; Value is the caller's and may be changed in place. A node belongs to its tree until it is
// deleted, after which the tree reuses it: keep no pointer to a deleted node.
//
// The fields a descent reads come first: hi, prio and the two links are the node's first 32
// bytes, which lie in one cache line whenever the node's size is a multiple of 32 (Go places an
// object of such a size class at a multiple of 32), and Value follows them, in that line too for
// half the nodes. A descent of an evicted tree then misses one line per level rather than two for
// half of them. lo is read only when two keys tie on hi, and the weights only in trees that have a
// weight (Tree.weighted).
type Node[V any] struct {
	hi          uint64   // the key's first part
	prio        uint64   // heap priority: a parent's is larger than its children's
	left, right *Node[V] // smaller and larger keys; right links the spare list of deleted nodes
	Value       V        // what the node stands for, opaque to the tree
	lo          uint64   // the key's second part: keys are ordered by hi, then lo
	weight      uint64   // the caller's weight; see FirstWeightAtLeast
	maxWeight   uint64   // the largest weight in this subtree
}

// Key returns the node's key.
func (n *Node[V]) Key() (hi, lo uint64) { return n.hi, n.lo }

// Weight returns the node's weight.
func (n *Node[V]) Weight() uint64 { return n.weight }

// Rekey gives the node the key (hi, lo) in place, without a delete and an insert. The caller
// guarantees that the new key sits between the keys of the node's neighbours in key order (no
// other key of the tree lies between the old key and the new one), so that the tree's order holds:
// a free range whose start moves within the range it covers, for one.
func (n *Node[V]) Rekey(hi, lo uint64) { n.hi, n.lo = hi, lo }

// less reports whether (aHi, aLo) comes before (bHi, bLo).
func less(aHi, aLo, bHi, bLo uint64) bool { return aHi < bHi || (aHi == bHi && aLo < bLo) }

// fix recomputes n's subtree weight from its own and its children's.
func (n *Node[V]) fix() {
	m := n.weight
	if n.left != nil && n.left.maxWeight > m {
		m = n.left.maxWeight
	}
	if n.right != nil && n.right.maxWeight > m {
		m = n.right.maxWeight
	}
	n.maxWeight = m
}

// insert adds x to the tree whose root is at *link: x takes the place of the first node on its
// search path whose priority is below its own, and the subtree there is split around x's key into
// x's children. The shape is the one that inserting x at a leaf and rotating it up gives, but the
// nodes above x are only read (their largest weight written where x raises it), and no call
// frame is pushed per level.
func insert[V any](link **Node[V], x *Node[V], weighted bool) {
	for n := *link; n != nil && n.prio >= x.prio; n = *link {
		if weighted && x.weight > n.maxWeight {
			n.maxWeight = x.weight // x is below n now
		}
		if less(x.hi, x.lo, n.hi, n.lo) {
			link = &n.left
		} else {
			link = &n.right
		}
	}
	x.left, x.right = split(*link, x.hi, x.lo, weighted)
	if weighted {
		x.fix()
	}
	*link = x
}

// split divides the subtree at n, which holds no key (hi, lo), into the keys before (hi, lo) and
// those after. Its path is expected O(1) long below an insertion point: the rotations an insert
// at a leaf would make. The largest weights are fixed only in a weighted tree: in another every
// weight is 0.
func split[V any](n *Node[V], hi, lo uint64, weighted bool) (before, after *Node[V]) {
	if n == nil {
		return nil, nil
	}
	if less(n.hi, n.lo, hi, lo) {
		n.right, after = split(n.right, hi, lo, weighted)
		if weighted {
			n.fix()
		}
		return n, after
	}
	before, n.left = split(n.left, hi, lo, weighted)
	if weighted {
		n.fix()
	}
	return before, n
}

// remove takes the node of key (hi, lo) out of the tree whose root is at *link and returns it, or
// nil: one descent, the node replaced by the merge of its children, and the largest weights of the
// nodes above it fixed from the bottom up where it held them. *path is scratch for the nodes
// above it, kept by the tree so that a removal allocates nothing.
func remove[V any](link **Node[V], hi, lo uint64, path *[]*Node[V], weighted bool) *Node[V] {
	above := (*path)[:0]
	for n := *link; n != nil; n = *link {
		switch {
		case less(hi, lo, n.hi, n.lo):
			link = &n.left
		case less(n.hi, n.lo, hi, lo):
			link = &n.right
		default:
			*link = merge(n.left, n.right, weighted)
			for i := len(above) - 1; i >= 0 && weighted && n.weight > 0 && n.weight == above[i].maxWeight; i-- {
				above[i].fix() // the largest weight may have left this subtree
			}
			*path = above
			return n
		}
		above = append(above, n)
	}
	*path = above
	return nil
}

// merge joins a and b, every key of a being less than every key of b, fixing the largest weights
// on its path in a weighted tree.
func merge[V any](a, b *Node[V], weighted bool) *Node[V] {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	if a.prio > b.prio {
		a.right = merge(a.right, b, weighted)
		if weighted {
			a.fix()
		}
		return a
	}
	b.left = merge(a, b.left, weighted)
	if weighted {
		b.fix()
	}
	return b
}

// ascend calls fn on every node of the subtree at n in key order until fn returns false; it
// reports whether fn never did.
func ascend[V any](n *Node[V], fn func(*Node[V]) bool) bool {
	for n != nil {
		if !ascend(n.left, fn) || !fn(n) {
			return false
		}
		n = n.right
	}
	return true
}
