package btree

// fanout is the most keys a node holds: 32 words, four cache lines.
const fanout = 32

// minFill: a node other than the root that falls below it after a delete takes entries from a
// sibling or merges with it. A quarter rather than the textbook half, so that a node at the
// boundary does not merge and split again at every other change.
const minFill = fanout / 4

// mergeFill: two siblings merge when they hold at most this many entries together, else share
// them evenly. Below fanout, so that a merged node takes some inserts before it splits.
const mergeFill = 3 * fanout / 4

// maxHeight bounds the inner levels: every inner node but the root has minFill children or more.
const maxHeight = 20

// leaf holds entries in key order. keys and n come first: a lookup reads them, then one value.
type leaf[V any] struct {
	keys       [fanout]uint64
	n          int
	next, prev *leaf[V] // the leaves before and after in key order; next links spare leaves
	vals       [fanout]V
}

// inner holds n children in key order. Its children are inner nodes (inners) except at the
// lowest inner level, whose children are leaves (leaves); the other array is all nil.
type inner[V any] struct {
	// keys[i], 1 <= i < n: every key under child i is at least keys[i], every key under child i-1
	// below it. keys[0] is not read. A key under child i may be above keys[i] (the key that was
	// the lowest there was deleted): separators are only bounds.
	keys   [fanout]uint64
	n      int
	inners [fanout]*inner[V]
	leaves [fanout]*leaf[V]
}

// child returns the index of in's child under which key k belongs.
func (in *inner[V]) child(k uint64) int {
	i := 1
	for i < in.n && in.keys[i] <= k {
		i++
	}
	return i - 1
}

// Map is an ordered map from uint64 keys to values of type V. The zero value is an empty map.
type Map[V any] struct {
	root     *inner[V] // the root while height > 0
	rootLeaf *leaf[V]  // the root while height == 0 (nil before the first insert)
	height   int       // inner levels above the leaves
	len      int
	first    *leaf[V] // the leaf of the lowest keys

	spareLeaf   *leaf[V] // leaves removed by merges, linked through next
	spareInners []*inner[V]
}

// Cursor is a place in a Map: an entry, or none (Valid is false). It is valid until the map
// next changes; its Value may be changed in place meanwhile.
type Cursor[V any] struct {
	l *leaf[V]
	i int
}

// Valid reports whether c is at an entry.
func (c Cursor[V]) Valid() bool { return c.l != nil }

// Key returns the key of c's entry.
func (c Cursor[V]) Key() uint64 { return c.l.keys[c.i] }

// Value returns the value of c's entry, to read or change in place.
func (c Cursor[V]) Value() *V { return &c.l.vals[c.i] }

// Next returns the cursor at the entry after c's, or an invalid one.
func (c Cursor[V]) Next() Cursor[V] {
	if c.i+1 < c.l.n {
		return Cursor[V]{c.l, c.i + 1}
	}
	if c.l.next != nil {
		return Cursor[V]{c.l.next, 0}
	}
	return Cursor[V]{}
}

// Prev returns the cursor at the entry before c's, or an invalid one.
func (c Cursor[V]) Prev() Cursor[V] {
	if c.i > 0 {
		return Cursor[V]{c.l, c.i - 1}
	}
	if c.l.prev != nil {
		return Cursor[V]{c.l.prev, c.l.prev.n - 1}
	}
	return Cursor[V]{}
}

// Len returns the number of entries.
func (m *Map[V]) Len() int { return m.len }

// leafFor returns the leaf under which key k belongs, nil in a map never inserted into.
func (m *Map[V]) leafFor(k uint64) *leaf[V] {
	if m.height == 0 {
		return m.rootLeaf
	}
	in := m.root
	for h := m.height; h > 1; h-- {
		in = in.inners[in.child(k)]
	}
	return in.leaves[in.child(k)]
}

// upper returns the index of the first key of l above k (l.n if none).
func (l *leaf[V]) upper(k uint64) int {
	i := 0
	for i < l.n && l.keys[i] <= k {
		i++
	}
	return i
}

// lower returns the index of the first key of l at least k (l.n if none).
func (l *leaf[V]) lower(k uint64) int {
	i := 0
	for i < l.n && l.keys[i] < k {
		i++
	}
	return i
}

// Floor returns the cursor at the entry of the largest key at most k, or an invalid one.
func (m *Map[V]) Floor(k uint64) Cursor[V] {
	l := m.leafFor(k)
	if l == nil {
		return Cursor[V]{}
	}
	if i := l.upper(k); i > 0 {
		return Cursor[V]{l, i - 1}
	}
	// Every key of l is above k (a separator is only a bound): the floor is the last key before l.
	if l.prev != nil {
		return Cursor[V]{l.prev, l.prev.n - 1}
	}
	return Cursor[V]{}
}

// Ceil returns the cursor at the entry of the smallest key at least k, or an invalid one.
func (m *Map[V]) Ceil(k uint64) Cursor[V] {
	l := m.leafFor(k)
	if l == nil {
		return Cursor[V]{}
	}
	if i := l.lower(k); i < l.n {
		return Cursor[V]{l, i}
	}
	if l.next != nil {
		return Cursor[V]{l.next, 0}
	}
	return Cursor[V]{}
}

// Get returns the cursor at the entry of key k, or an invalid one.
func (m *Map[V]) Get(k uint64) Cursor[V] {
	if c := m.Floor(k); c.Valid() && c.Key() == k {
		return c
	}
	return Cursor[V]{}
}

// Min returns the cursor at the entry of the smallest key, or an invalid one.
func (m *Map[V]) Min() Cursor[V] {
	if m.len == 0 {
		return Cursor[V]{}
	}
	return Cursor[V]{m.first, 0}
}

// Max returns the cursor at the entry of the largest key, or an invalid one.
func (m *Map[V]) Max() Cursor[V] { return m.Floor(^uint64(0)) }

// Ascend calls fn on every entry in key order until fn returns false; it reports whether fn never
// did. fn must not change the map (it may change the values in place).
func (m *Map[V]) Ascend(fn func(k uint64, v *V) bool) bool {
	return m.AscendFrom(m.Min(), fn)
}

// AscendFrom is Ascend from c's entry on.
func (m *Map[V]) AscendFrom(c Cursor[V], fn func(k uint64, v *V) bool) bool {
	for l, i := c.l, c.i; l != nil; l, i = l.next, 0 {
		for ; i < l.n; i++ {
			if !fn(l.keys[i], &l.vals[i]) {
				return false
			}
		}
	}
	return true
}

// Clear empties the map.
func (m *Map[V]) Clear() { *m = Map[V]{} }

// Rekey gives c's entry the key k in place and returns the cursor at it. No other key of the map
// may lie between c's key and k: a free range whose start moves within the range it covers, for
// one. Where the entry is at the edge of its leaf, so that the leaf's bounds may not hold k, it is
// deleted and inserted again.
func (m *Map[V]) Rekey(c Cursor[V], k uint64) Cursor[V] {
	old := c.Key()
	if (k >= old || c.i > 0) && (k <= old || c.i < c.l.n-1) {
		c.l.keys[c.i] = k
		return c
	}
	v := *c.Value()
	m.Delete(old)
	m.Insert(k, v)
	return m.Get(k)
}

// path is the inner nodes a descent went through, root first, and the child taken in each.
type path[V any] struct {
	nodes [maxHeight]*inner[V]
	idx   [maxHeight]int
}

// descend returns the leaf under which k belongs, recording the way in p.
func (m *Map[V]) descend(k uint64, p *path[V]) *leaf[V] {
	if m.height == 0 {
		return m.rootLeaf
	}
	in := m.root
	for d := 0; ; d++ {
		i := in.child(k)
		p.nodes[d], p.idx[d] = in, i
		if d == m.height-1 {
			return in.leaves[i]
		}
		in = in.inners[i]
	}
}

func (m *Map[V]) newLeaf() *leaf[V] {
	l := m.spareLeaf
	if l == nil {
		return new(leaf[V])
	}
	m.spareLeaf = l.next
	l.next, l.prev, l.n = nil, nil, 0
	return l
}

func (m *Map[V]) newInner() *inner[V] {
	if k := len(m.spareInners); k > 0 {
		in := m.spareInners[k-1]
		m.spareInners = m.spareInners[:k-1]
		return in
	}
	return new(inner[V])
}

// freeLeaf keeps l, taken out of the map and its values cleared, for reuse.
func (m *Map[V]) freeLeaf(l *leaf[V]) {
	l.prev, l.next, l.n = nil, m.spareLeaf, 0
	m.spareLeaf = l
}

// freeInner keeps in, taken out of the map, for reuse; its children are cleared.
func (m *Map[V]) freeInner(in *inner[V]) {
	clear(in.inners[:])
	clear(in.leaves[:])
	in.n = 0
	m.spareInners = append(m.spareInners, in)
}
