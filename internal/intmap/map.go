package intmap

import (
	"iter"
	"math/bits"
)

// Map is a hash map from uint64 keys to values of type V. The zero Map is empty and ready to use.
// A Map must not be copied after first use, and must not be changed during All.
type Map[V any] struct {
	slots   []slot[V] // a power of two long, at most half full; key 0 marks an empty slot
	shift   uint8     // 64 - log2 len(slots): a hash's top bits index the slots
	n       int       // keys held, the key 0 included
	hasZero bool      // whether the key 0 is held, its value in zero
	zero    V
}

type slot[V any] struct {
	key uint64
	val V
}

const (
	minSlots  = 8
	fibonacci = 0x9e3779b97f4a7c15 // 2^64 / the golden ratio: multiplying spreads aligned keys
)

// Len returns the number of keys held.
func (m *Map[V]) Len() int { return m.n }

// Get returns the value of key k and whether k is held.
func (m *Map[V]) Get(k uint64) (V, bool) {
	if k == 0 {
		return m.zero, m.hasZero
	}
	if m.slots != nil {
		mask := uint64(len(m.slots) - 1)
		for i := (k * fibonacci) >> m.shift; ; i = (i + 1) & mask {
			s := &m.slots[i]
			if s.key == k {
				return s.val, true
			}
			if s.key == 0 {
				break
			}
		}
	}
	var none V
	return none, false
}

// At returns the value of key k, or V's zero value if k is not held.
func (m *Map[V]) At(k uint64) V {
	v, _ := m.Get(k)
	return v
}

// Put makes v the value of key k.
func (m *Map[V]) Put(k uint64, v V) {
	if k == 0 {
		if !m.hasZero {
			m.hasZero = true
			m.n++
		}
		m.zero = v
		return
	}
	if 2*(m.n+1) > len(m.slots) {
		m.grow()
	}
	mask := uint64(len(m.slots) - 1)
	for i := (k * fibonacci) >> m.shift; ; i = (i + 1) & mask {
		s := &m.slots[i]
		if s.key == k {
			s.val = v
			return
		}
		if s.key == 0 {
			s.key, s.val = k, v
			m.n++
			return
		}
	}
}

// Delete removes key k, if held.
func (m *Map[V]) Delete(k uint64) {
	var none V
	if k == 0 {
		if m.hasZero {
			m.hasZero, m.zero = false, none
			m.n--
		}
		return
	}
	if m.slots == nil {
		return
	}
	mask := uint64(len(m.slots) - 1)
	i := (k * fibonacci) >> m.shift
	for m.slots[i].key != k {
		if m.slots[i].key == 0 {
			return
		}
		i = (i + 1) & mask
	}
	// Shift back every following slot of the run that the hole now separates from its home.
	for j := (i + 1) & mask; m.slots[j].key != 0; j = (j + 1) & mask {
		home := (m.slots[j].key * fibonacci) >> m.shift
		// The slot at j may move to the hole at i unless its home lies cyclically in (i, j].
		if (j-home)&mask >= (j-i)&mask {
			m.slots[i] = m.slots[j]
			i = j
		}
	}
	m.slots[i] = slot[V]{key: 0, val: none}
	m.n--
}

// Clear removes every key, keeping the slots for reuse.
func (m *Map[V]) Clear() {
	clear(m.slots)
	var none V
	m.hasZero, m.zero, m.n = false, none, 0
}

// All yields every key and its value, in slot order (the key 0 first).
func (m *Map[V]) All() iter.Seq2[uint64, V] {
	return func(yield func(uint64, V) bool) {
		if m.hasZero && !yield(0, m.zero) {
			return
		}
		for i := range m.slots {
			if s := &m.slots[i]; s.key != 0 && !yield(s.key, s.val) {
				return
			}
		}
	}
}

// grow doubles the slots (or makes the first ones) and puts every key back.
func (m *Map[V]) grow() {
	old := m.slots
	size := max(minSlots, 2*len(old))
	m.slots = make([]slot[V], size)
	m.shift = uint8(64 - bits.TrailingZeros(uint(size)))
	mask := uint64(size - 1)
	for _, s := range old {
		if s.key == 0 {
			continue
		}
		i := (s.key * fibonacci) >> m.shift
		for m.slots[i].key != 0 {
			i = (i + 1) & mask
		}
		m.slots[i] = s
	}
}
