package treap

// Node is one entry of a Tree. Its key and weight are set by Tree.Insert and read through Key and
// Weight; Value is the caller's and may be changed in place. A node belongs to its tree until it is
// deleted, after which the tree reuses it: keep no pointer to a deleted node.
type Node[V any] struct {
	hi, lo      uint64   // the key, ordered by hi, then lo
	weight      uint64   // the caller's weight; see FirstWeightAtLeast
	maxWeight   uint64   // the largest weight in this subtree
	prio        uint64   // heap priority: a parent's is larger than its children's
	left, right *Node[V] // smaller and larger keys; right links the spare list of deleted nodes
	Value       V        // what the node stands for, opaque to the tree
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

// insert adds x below n and returns the subtree's new root, rotating x up while its priority is
// the larger.
func insert[V any](n, x *Node[V]) *Node[V] {
	if n == nil {
		return x
	}
	if less(x.hi, x.lo, n.hi, n.lo) {
		n.left = insert(n.left, x)
		if l := n.left; l.prio > n.prio {
			n.left, l.right = l.right, n
			n.fix()
			l.fix()
			return l
		}
	} else {
		n.right = insert(n.right, x)
		if r := n.right; r.prio > n.prio {
			n.right, r.left = r.left, n
			n.fix()
			r.fix()
			return r
		}
	}
	n.maxWeight = max(n.maxWeight, x.weight) // x is below n now
	return n
}

// remove takes the node of key (hi, lo) out of the subtree at n, sets *gone to it, and returns the
// subtree's new root.
func remove[V any](n *Node[V], hi, lo uint64, gone **Node[V]) *Node[V] {
	if n == nil {
		return nil
	}
	switch {
	case less(hi, lo, n.hi, n.lo):
		n.left = remove(n.left, hi, lo, gone)
	case less(n.hi, n.lo, hi, lo):
		n.right = remove(n.right, hi, lo, gone)
	default:
		*gone = n
		return merge(n.left, n.right)
	}
	if g := *gone; g != nil && g.weight == n.maxWeight && g.weight > 0 {
		n.fix() // the largest weight may have left this subtree
	}
	return n
}

// merge joins a and b, every key of a being less than every key of b.
func merge[V any](a, b *Node[V]) *Node[V] {
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
