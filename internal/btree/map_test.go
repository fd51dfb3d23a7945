package btree

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// model is the map a Map must agree with: its keys sorted, and their values.
type model struct {
	keys []uint64
	vals map[uint64]int
}

func (r *model) floor(k uint64) (uint64, bool) {
	i, found := slices.BinarySearch(r.keys, k)
	if found {
		return k, true
	}
	if i == 0 {
		return 0, false
	}
	return r.keys[i-1], true
}

func (r *model) ceil(k uint64) (uint64, bool) {
	i, _ := slices.BinarySearch(r.keys, k)
	if i == len(r.keys) {
		return 0, false
	}
	return r.keys[i], true
}

func (r *model) set(k uint64, v int) bool {
	i, found := slices.BinarySearch(r.keys, k)
	if !found {
		r.keys = slices.Insert(r.keys, i, k)
	}
	r.vals[k] = v
	return !found
}

func (r *model) del(k uint64) bool {
	i, found := slices.BinarySearch(r.keys, k)
	if found {
		r.keys = slices.Delete(r.keys, i, i+1)
		delete(r.vals, k)
	}
	return found
}

func agreeAt(t *testing.T, m *Map[int], r *model, k uint64) {
	t.Helper()
	want, ok := r.floor(k)
	c := m.Floor(k)
	require.Equal(t, ok, c.Valid(), "Floor(%d)", k)
	if ok {
		require.Equal(t, want, c.Key(), "Floor(%d)", k)
		require.Equal(t, r.vals[want], *c.Value(), "Floor(%d)'s value", k)
	}
	want, ok = r.ceil(k)
	c = m.Ceil(k)
	require.Equal(t, ok, c.Valid(), "Ceil(%d)", k)
	if ok {
		require.Equal(t, want, c.Key(), "Ceil(%d)", k)
	}
}

// TestMapAgreesWithASortedSlice runs random inserts, deletes and rekeys, in key ranges dense and
// sparse, and checks the structure and every kind of lookup after each.
func TestMapAgreesWithASortedSlice(t *testing.T) {
	for _, span := range []uint64{64, 2000, 1 << 40} {
		for seed := range uint64(4) {
			rng := rand.New(rand.NewPCG(seed, span))
			var m Map[int]
			r := &model{vals: map[uint64]int{}}
			for step := range 6000 {
				k := rng.Uint64N(span)
				switch op := rng.IntN(10); {
				case op < 5 && len(r.keys) < 3000 || len(r.keys) == 0:
					require.Equal(t, r.set(k, step), m.Insert(k, step))
				case op < 9:
					if rng.IntN(2) == 0 && len(r.keys) > 0 {
						k = r.keys[rng.IntN(len(r.keys))]
					}
					require.Equal(t, r.del(k), m.Delete(k))
				default:
					rekeyOne(t, &m, r, rng)
				}
				require.NoError(t, m.Check(), "seed %d step %d", seed, step)
				require.Equal(t, len(r.keys), m.Len())
				agreeAt(t, &m, r, k)
				agreeAt(t, &m, r, rng.Uint64N(span))
			}
			var got []uint64
			m.Ascend(func(k uint64, v *int) bool { got = append(got, k); return true })
			assert.Equal(t, r.keys, got)
		}
	}
}

// rekeyOne moves a random entry's key to a random place between its neighbours.
func rekeyOne(t *testing.T, m *Map[int], r *model, rng *rand.Rand) {
	if len(r.keys) == 0 {
		return
	}
	i := rng.IntN(len(r.keys))
	lo, hi := uint64(0), ^uint64(0)
	if i > 0 {
		lo = r.keys[i-1] + 1
	}
	if i+1 < len(r.keys) {
		hi = r.keys[i+1] - 1
	}
	old := r.keys[i]
	k := rng.Uint64() // the whole key range
	if hi-lo+1 != 0 {
		k = lo + rng.Uint64N(hi-lo+1)
	}
	c := m.Rekey(m.Get(old), k)
	require.True(t, c.Valid())
	require.Equal(t, k, c.Key())
	v := r.vals[old]
	require.Equal(t, v, *c.Value())
	delete(r.vals, old)
	r.keys[i], r.vals[k] = k, v
}

func TestCursorWalksBothWays(t *testing.T) {
	var m Map[int]
	for k := range uint64(500) {
		m.Insert(k*3, int(k))
	}
	n := 0
	for c := m.Min(); c.Valid(); c = c.Next() {
		require.Equal(t, uint64(n*3), c.Key())
		n++
	}
	assert.Equal(t, 500, n)
	for c := m.Max(); c.Valid(); c = c.Prev() {
		n--
		require.Equal(t, uint64(n*3), c.Key())
	}
	assert.Equal(t, 0, n)
	var from []uint64
	m.AscendFrom(m.Ceil(1480), func(k uint64, v *int) bool { from = append(from, k); return true })
	assert.Equal(t, []uint64{1482, 1485, 1488, 1491, 1494, 1497}, from)
}

func TestValueChangesInPlace(t *testing.T) {
	var m Map[int]
	for k := range uint64(100) {
		m.Insert(k, 0)
	}
	*m.Get(42).Value() = 7
	assert.Equal(t, 7, *m.Floor(42).Value())
	assert.False(t, m.Get(1000).Valid())
	assert.False(t, m.Insert(42, 8), "a key present is set, not added")
	assert.Equal(t, 8, *m.Get(42).Value())
}

func TestEmptiedMapIsEmpty(t *testing.T) {
	var m Map[int]
	assert.False(t, m.Floor(5).Valid())
	assert.False(t, m.Delete(5))
	for k := range uint64(1000) {
		m.Insert(k, int(k))
	}
	for k := range uint64(1000) {
		require.True(t, m.Delete(k))
		require.NoError(t, m.Check())
	}
	assert.Equal(t, 0, m.Len())
	assert.False(t, m.Min().Valid())
	assert.False(t, m.Ceil(0).Valid())
	m.Insert(3, 3)
	require.NoError(t, m.Check())
	assert.Equal(t, uint64(3), m.Min().Key())
	m.Clear()
	assert.Equal(t, 0, m.Len())
	require.NoError(t, m.Check())
}

// TestSteadyChurnAllocatesNothing: a run of keys deleted (leaves and inner nodes merge) and
// inserted again (they split) allocates nothing once done before: merged nodes are kept for the
// next split.
func TestSteadyChurnAllocatesNothing(t *testing.T) {
	var m Map[int]
	for k := range uint64(8192) {
		m.Insert(k, 0)
	}
	churn := func() {
		for k := uint64(1000); k < 5000; k++ {
			m.Delete(k)
		}
		for k := uint64(1000); k < 5000; k++ {
			m.Insert(k, 1)
		}
	}
	churn() // the spare nodes are made once
	require.NoError(t, m.Check())
	assert.Zero(t, testing.AllocsPerRun(20, churn))
	require.NoError(t, m.Check())
}

func TestCheckFindsBrokenOrder(t *testing.T) {
	var m Map[int]
	for k := range uint64(200) {
		m.Insert(k, 0)
	}
	c := m.Get(100)
	c.l.keys[c.i] = 500 // out of order, as a wrong Rekey would leave it
	assert.Error(t, m.Check())
}

// TestInsertAfterAgreesWithInsert inserts keys next to their floors, in leaves full and not, at
// the front of the map and past the end of a leaf, and checks the structure after each.
func TestInsertAfterAgreesWithInsert(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	var m Map[int]
	r := &model{vals: map[uint64]int{}}
	for step := range 5000 {
		k := rng.Uint64N(1 << 20)
		if _, found := slices.BinarySearch(r.keys, k); found || len(r.keys) > 200 && rng.IntN(2) == 0 {
			if !found { // a held key: deletes leave the leaves' bounds below their lowest keys
				k = r.keys[rng.IntN(len(r.keys))]
			}
			require.True(t, m.Delete(k))
			r.del(k)
		} else {
			c := m.InsertAfter(m.Floor(k), k, step)
			r.set(k, step)
			require.Equal(t, k, c.Key())
			require.Equal(t, step, *c.Value())
		}
		require.NoError(t, m.Check(), "step %d", step)
		require.Equal(t, len(r.keys), m.Len())
		agreeAt(t, &m, r, rng.Uint64N(1<<20))
	}
}
