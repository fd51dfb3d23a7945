package btree

// Delete removes the entry of key k and reports whether there was one.
func (m *Map[V]) Delete(k uint64) bool {
	var p path[V]
	l := m.descend(k, &p)
	if l == nil {
		return false
	}
	i := l.lower(k)
	if i == l.n || l.keys[i] != k {
		return false
	}
	copy(l.keys[i:l.n-1], l.keys[i+1:l.n])
	copy(l.vals[i:l.n-1], l.vals[i+1:l.n])
	var zero V
	l.vals[l.n-1] = zero
	l.n--
	m.len--
	if m.height > 0 && l.n < minFill {
		m.refillLeaf(&p, l)
	}
	return true
}

// refillLeaf gives leaf l, below minFill and the child p took in its parent, entries from a
// sibling, or merges the two.
func (m *Map[V]) refillLeaf(p *path[V], l *leaf[V]) {
	d := m.height - 1
	parent, ci := p.nodes[d], p.idx[d]
	a, b, bi := l, parent.leaves[1], 1 // the pair, left and right, and the right one's index
	if ci > 0 {
		a, b, bi = parent.leaves[ci-1], l, ci
	}
	if a.n+b.n <= mergeFill {
		copy(a.keys[a.n:], b.keys[:b.n])
		copy(a.vals[a.n:], b.vals[:b.n])
		clear(b.vals[:b.n])
		a.n += b.n
		a.next = b.next
		if b.next != nil {
			b.next.prev = a
		}
		parent.removeChild(bi)
		m.freeLeaf(b)
		m.refillInner(p, d)
		return
	}
	half := (a.n + b.n) / 2
	if a.n < half { // move b's first entries to a's end
		move := half - a.n
		copy(a.keys[a.n:], b.keys[:move])
		copy(a.vals[a.n:], b.vals[:move])
		copy(b.keys[:], b.keys[move:b.n])
		copy(b.vals[:], b.vals[move:b.n])
		clear(b.vals[b.n-move : b.n])
		a.n, b.n = half, b.n-move
	} else { // move a's last entries to b's front
		move := a.n - half
		copy(b.keys[move:], b.keys[:b.n])
		copy(b.vals[move:], b.vals[:b.n])
		copy(b.keys[:], a.keys[half:a.n])
		copy(b.vals[:], a.vals[half:a.n])
		clear(a.vals[half:a.n])
		a.n, b.n = half, b.n+move
	}
	parent.keys[bi] = b.keys[0]
}

// removeChild takes child i (and its bound) out of in.
func (in *inner[V]) removeChild(i int) {
	copy(in.keys[i:in.n-1], in.keys[i+1:in.n])
	copy(in.inners[i:in.n-1], in.inners[i+1:in.n])
	copy(in.leaves[i:in.n-1], in.leaves[i+1:in.n])
	in.n--
	in.inners[in.n], in.leaves[in.n] = nil, nil
}

// refillInner is refillLeaf for the inner node at depth d of p, which lost a child: the root
// gives way to its only child; another node below minFill takes children from a sibling or merges
// with it, which may leave its parent below in turn.
func (m *Map[V]) refillInner(p *path[V], d int) {
	in := p.nodes[d]
	if d == 0 {
		if in.n > 1 {
			return
		}
		if m.height == 1 {
			m.rootLeaf = in.leaves[0]
		} else {
			m.root = in.inners[0]
		}
		if m.height--; m.height == 0 {
			m.root = nil
		}
		m.freeInner(in)
		return
	}
	if in.n >= minFill {
		return
	}
	parent, ci := p.nodes[d-1], p.idx[d-1]
	a, b, bi := in, parent.inners[1], 1
	if ci > 0 {
		a, b, bi = parent.inners[ci-1], in, ci
	}
	if a.n+b.n <= mergeFill {
		a.keys[a.n] = parent.keys[bi]
		copy(a.keys[a.n+1:], b.keys[1:b.n])
		copy(a.inners[a.n:], b.inners[:b.n])
		copy(a.leaves[a.n:], b.leaves[:b.n])
		a.n += b.n
		parent.removeChild(bi)
		m.freeInner(b)
		m.refillInner(p, d-1)
		return
	}
	var keys [2 * fanout]uint64
	var inners [2 * fanout]*inner[V]
	var leaves [2 * fanout]*leaf[V]
	n := copy(keys[:], a.keys[:a.n])
	copy(inners[:], a.inners[:a.n])
	copy(leaves[:], a.leaves[:a.n])
	keys[n] = parent.keys[bi] // the bound of b's first child
	copy(keys[n+1:], b.keys[1:b.n])
	copy(inners[n:], b.inners[:b.n])
	copy(leaves[n:], b.leaves[:b.n])
	total := a.n + b.n
	half := total / 2
	a.fill(keys[:half], inners[:half], leaves[:half])
	b.fill(keys[half:total], inners[half:total], leaves[half:total])
	parent.keys[bi] = keys[half]
}
