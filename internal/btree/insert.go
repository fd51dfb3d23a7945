package btree

// Insert sets the value of key k, adding an entry if k has none; it reports whether it added one.
func (m *Map[V]) Insert(k uint64, v V) bool {
	if m.height == 0 && m.rootLeaf == nil {
		m.rootLeaf = m.newLeaf()
		m.first = m.rootLeaf
	}
	var p path[V]
	l := m.descend(k, &p)
	i := l.lower(k)
	if i < l.n && l.keys[i] == k {
		l.vals[i] = v
		return false
	}
	m.len++
	if l.n < fanout {
		l.insertAt(i, k, v)
		return true
	}
	r := m.splitLeaf(l, i, k, v)
	m.addChild(&p, m.height-1, r.keys[0], nil, r)
	return true
}

// InsertAfter is Insert of a key k that the map does not hold, told c, the cursor at the entry of
// the largest key below k (invalid if none): where c's leaf holds the entry after c's and has
// room, k goes between them without a descent. It returns the cursor at k's entry.
func (m *Map[V]) InsertAfter(c Cursor[V], k uint64, v V) Cursor[V] {
	l, i := c.l, c.i+1
	if l == nil { // below every key: the first leaf's lower bound is open
		l, i = m.first, 0
	}
	if l != nil && i < l.n && l.n < fanout && (i == 0 || l.keys[i-1] < k) && k < l.keys[i] {
		l.insertAt(i, k, v)
		m.len++
		return Cursor[V]{l, i}
	}
	m.Insert(k, v)
	return m.Get(k)
}

// insertAt puts (k, v) at index i of l, which has room.
func (l *leaf[V]) insertAt(i int, k uint64, v V) {
	copy(l.keys[i+1:l.n+1], l.keys[i:l.n])
	copy(l.vals[i+1:l.n+1], l.vals[i:l.n])
	l.keys[i], l.vals[i] = k, v
	l.n++
}

// splitLeaf inserts (k, v) at index i of full leaf l, moving the upper half of the entries to a
// new leaf linked after l, which it returns.
func (m *Map[V]) splitLeaf(l *leaf[V], i int, k uint64, v V) *leaf[V] {
	r := m.newLeaf()
	keep := (fanout + 1) / 2 // the entries l keeps, of fanout+1
	if i < keep {
		keep-- // the new entry is one of them
	}
	r.n = copy(r.keys[:], l.keys[keep:fanout])
	copy(r.vals[:], l.vals[keep:fanout])
	clear(l.vals[keep:fanout])
	l.n = keep
	if i <= keep {
		l.insertAt(i, k, v)
	} else {
		r.insertAt(i-keep, k, v)
	}
	r.next, r.prev = l.next, l
	if l.next != nil {
		l.next.prev = r
	}
	l.next = r
	return r
}

// addChild adds a child (ci, or leaf cl), whose keys are at least sep, after the child the descent
// p took in its inner node at depth d, splitting full nodes up the path and adding a root when the
// root splits (or when d is -1: the root leaf split).
func (m *Map[V]) addChild(p *path[V], d int, sep uint64, ci *inner[V], cl *leaf[V]) {
	for ; d >= 0; d-- {
		in := p.nodes[d]
		at := p.idx[d] + 1
		if in.n < fanout {
			in.insertChild(at, sep, ci, cl)
			return
		}
		r := m.newInner()
		sep = in.split(r, at, sep, ci, cl)
		ci, cl = r, nil
	}
	root := m.newInner()
	if m.height == 0 {
		root.leaves[0], root.leaves[1] = m.rootLeaf, cl
		m.rootLeaf = nil
	} else {
		root.inners[0], root.inners[1] = m.root, ci
	}
	root.keys[1], root.n = sep, 2
	m.root = root
	m.height++
}

// insertChild puts the child (ci or cl) whose keys are at least sep at index at of in, which has
// room.
func (in *inner[V]) insertChild(at int, sep uint64, ci *inner[V], cl *leaf[V]) {
	copy(in.keys[at+1:in.n+1], in.keys[at:in.n])
	copy(in.inners[at+1:in.n+1], in.inners[at:in.n])
	copy(in.leaves[at+1:in.n+1], in.leaves[at:in.n])
	in.keys[at], in.inners[at], in.leaves[at] = sep, ci, cl
	in.n++
}

// split inserts the child (ci or cl, keys at least sep) at index at of full node in and moves the
// upper half of its children to r; it returns the bound between in's keys and r's.
func (in *inner[V]) split(r *inner[V], at int, sep uint64, ci *inner[V], cl *leaf[V]) uint64 {
	var keys [fanout + 1]uint64
	var inners [fanout + 1]*inner[V]
	var leaves [fanout + 1]*leaf[V]
	copy(keys[:], in.keys[:at])
	copy(inners[:], in.inners[:at])
	copy(leaves[:], in.leaves[:at])
	keys[at], inners[at], leaves[at] = sep, ci, cl
	copy(keys[at+1:], in.keys[at:fanout])
	copy(inners[at+1:], in.inners[at:fanout])
	copy(leaves[at+1:], in.leaves[at:fanout])
	keep := (fanout + 1) / 2
	in.fill(keys[:keep], inners[:keep], leaves[:keep])
	r.fill(keys[keep:], inners[keep:], leaves[keep:])
	return keys[keep]
}

// fill makes keys and children in's, its other slots cleared.
func (in *inner[V]) fill(keys []uint64, inners []*inner[V], leaves []*leaf[V]) {
	in.n = copy(in.keys[:], keys)
	copy(in.inners[:], inners)
	copy(in.leaves[:], leaves)
	clear(in.inners[in.n:])
	clear(in.leaves[in.n:])
}
