package btree

import "fmt"

// Check returns an error naming the first broken invariant of m, nil if none: keys strictly
// increasing in every node and within the bounds of the separators above, every leaf at the same
// depth, every node but the root at least minFill full, the leaves linked in key order both ways
// from the first, and Len the number of entries.
func (m *Map[V]) Check() error {
	var leaves []*leaf[V]
	if m.height == 0 {
		if m.root != nil {
			return fmt.Errorf("btree: height 0 with an inner root")
		}
		if m.rootLeaf != nil {
			if err := m.checkLeaf(m.rootLeaf, 0, ^uint64(0), false, true); err != nil {
				return err
			}
			leaves = append(leaves, m.rootLeaf)
		}
	} else {
		if m.rootLeaf != nil || m.root == nil {
			return fmt.Errorf("btree: height %d with a root leaf or no inner root", m.height)
		}
		if err := m.checkInner(m.root, m.height, 0, ^uint64(0), false, true, &leaves); err != nil {
			return err
		}
	}
	n := 0
	for i, l := range leaves {
		n += l.n
		var prev, next *leaf[V]
		if i > 0 {
			prev = leaves[i-1]
		}
		if i+1 < len(leaves) {
			next = leaves[i+1]
		}
		if l.prev != prev || l.next != next {
			return fmt.Errorf("btree: leaf %d of %d is not linked to its neighbours", i, len(leaves))
		}
		if i > 0 && prev.n > 0 && l.n > 0 && prev.keys[prev.n-1] >= l.keys[0] {
			return fmt.Errorf("btree: leaf %d begins at key %d, not above %d", i, l.keys[0], prev.keys[prev.n-1])
		}
	}
	if len(leaves) > 0 && m.first != leaves[0] || len(leaves) == 0 && m.first != nil {
		return fmt.Errorf("btree: the first leaf is not the lowest")
	}
	if n != m.len {
		return fmt.Errorf("btree: %d entries, Len %d", n, m.len)
	}
	return nil
}

// checkLeaf checks that l's keys increase and lie in [lo, hi] (hi excluded if hiOpen).
func (m *Map[V]) checkLeaf(l *leaf[V], lo, hi uint64, hiOpen, root bool) error {
	if !root && l.n < minFill {
		return fmt.Errorf("btree: a leaf holds %d entries, below %d", l.n, minFill)
	}
	for i := range l.n {
		k := l.keys[i]
		if k < lo || k > hi || hiOpen && k == hi || i > 0 && k <= l.keys[i-1] {
			return fmt.Errorf("btree: leaf key %d out of order or outside [%d, %d]", k, lo, hi)
		}
	}
	return nil
}

// checkInner checks the subtree of in, h levels of inner nodes high, whose keys lie in [lo, hi]
// (hi excluded if hiOpen), appending its leaves in order.
func (m *Map[V]) checkInner(in *inner[V], h int, lo, hi uint64, hiOpen, root bool, leaves *[]*leaf[V]) error {
	if root && in.n < 2 || !root && in.n < minFill {
		return fmt.Errorf("btree: an inner node holds %d children", in.n)
	}
	for i := range in.n {
		clo, chi, open := lo, hi, hiOpen
		if i > 0 {
			clo = in.keys[i]
			if clo < lo || clo > hi || hiOpen && clo == hi || i > 1 && clo <= in.keys[i-1] {
				return fmt.Errorf("btree: bound %d out of order or outside [%d, %d]", clo, lo, hi)
			}
		}
		if i+1 < in.n {
			chi, open = in.keys[i+1], true
		}
		if h == 1 {
			if in.leaves[i] == nil || in.inners[i] != nil {
				return fmt.Errorf("btree: the lowest inner level has a child that is not a leaf")
			}
			if err := m.checkLeaf(in.leaves[i], clo, chi, open, false); err != nil {
				return err
			}
			*leaves = append(*leaves, in.leaves[i])
			continue
		}
		if in.inners[i] == nil || in.leaves[i] != nil {
			return fmt.Errorf("btree: an inner level above the lowest has a leaf child")
		}
		if err := m.checkInner(in.inners[i], h-1, clo, chi, open, false, leaves); err != nil {
			return err
		}
	}
	for i := in.n; i < fanout; i++ {
		if in.inners[i] != nil || in.leaves[i] != nil {
			return fmt.Errorf("btree: an inner node keeps a child past its count")
		}
	}
	return nil
}
