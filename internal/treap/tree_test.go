package treap

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// entry is a node of the reference model: a sorted slice.
type entry struct{ hi, lo, w uint64 }

func compareEntry(a, b entry) int { return cmp.Or(cmp.Compare(a.hi, b.hi), cmp.Compare(a.lo, b.lo)) }

// checkTree returns the first broken invariant of t: key order, heap order of priorities, subtree
// weights, the length.
func checkTree[V any](t *Tree[V]) error {
	n := 0
	var walk func(x *Node[V], lo, hi *Node[V]) error
	walk = func(x *Node[V], lo, hi *Node[V]) error {
		if x == nil {
			return nil
		}
		n++
		if lo != nil && !less(lo.hi, lo.lo, x.hi, x.lo) || hi != nil && !less(x.hi, x.lo, hi.hi, hi.lo) {
			return fmt.Errorf("key (%d, %d) out of order", x.hi, x.lo)
		}
		m := x.weight
		for _, c := range []*Node[V]{x.left, x.right} {
			if c != nil {
				if c.prio > x.prio {
					return fmt.Errorf("key (%d, %d): a child has the larger priority", x.hi, x.lo)
				}
				m = max(m, c.maxWeight)
			}
		}
		if x.maxWeight != m {
			return fmt.Errorf("key (%d, %d): subtree weight %d, want %d", x.hi, x.lo, x.maxWeight, m)
		}
		if err := walk(x.left, lo, x); err != nil {
			return err
		}
		return walk(x.right, x, hi)
	}
	if err := walk(t.root, nil, nil); err != nil {
		return err
	}
	if n != t.len {
		return fmt.Errorf("%d nodes, Len %d", n, t.len)
	}
	return nil
}

// The tree against a sorted slice under random inserts and deletes, every query checked after every
// step; the seed is in the messages.
func TestTreeMatchesSortedSlice(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		rng := rand.New(rand.NewPCG(seed, 0))
		var tr Tree[uint64]
		var ref []entry
		key := func() (uint64, uint64) { return rng.Uint64N(64), rng.Uint64N(16) }
		for step := range 3000 {
			at := fmt.Sprintf("seed %d step %d", seed, step)
			hi, lo := key()
			j, found := slices.BinarySearchFunc(ref, entry{hi: hi, lo: lo}, compareEntry)
			switch {
			case found && rng.IntN(3) > 0:
				require.True(t, tr.Delete(hi, lo), at)
				ref = slices.Delete(ref, j, j+1)
			case found:
				require.False(t, tr.Delete(hi+64, lo), at)
			default:
				w := rng.Uint64N(1000)
				n := tr.Insert(hi, lo, w, hi*100+lo)
				gotHi, gotLo := n.Key()
				require.Equal(t, [3]uint64{hi, lo, w}, [3]uint64{gotHi, gotLo, n.Weight()}, at)
				ref = slices.Insert(ref, j, entry{hi, lo, w})
			}
			require.NoError(t, checkTree(&tr), at)
			require.Equal(t, len(ref), tr.Len(), at)

			qHi, qLo := key()
			j, found = slices.BinarySearchFunc(ref, entry{hi: qHi, lo: qLo}, compareEntry)
			assertNode(t, &tr, tr.Ceil(qHi, qLo), ref, j, at+" ceil")
			if !found {
				j--
			}
			assertNode(t, &tr, tr.Floor(qHi, qLo), ref, j, at+" floor")
			assertNode(t, &tr, tr.Max(), ref, len(ref)-1, at+" max")

			w := rng.Uint64N(1100)
			first := slices.IndexFunc(ref, func(e entry) bool { return e.w >= w })
			assertNode(t, &tr, tr.FirstWeightAtLeast(w), ref, first, fmt.Sprintf("%s first weight >= %d", at, w))
			var maxW uint64
			for _, e := range ref {
				maxW = max(maxW, e.w)
			}
			assert.Equal(t, maxW, tr.MaxWeight(), at)
		}
	}
}

// assertNode checks that n is the node of ref[i], or nil where i is out of ref.
func assertNode(t *testing.T, tr *Tree[uint64], n *Node[uint64], ref []entry, i int, at string) {
	t.Helper()
	if i < 0 || i >= len(ref) {
		assert.Nil(t, n, at)
		return
	}
	if assert.NotNil(t, n, at) {
		hi, lo := n.Key()
		assert.Equal(t, ref[i], entry{hi, lo, n.Weight()}, at)
		assert.Equal(t, hi*100+lo, n.Value, at)
	}
}

// Ascend and AscendRange visit keys in order and stop where fn says.
func TestTreeAscend(t *testing.T) {
	var tr Tree[int]
	rng := rand.New(rand.NewPCG(4, 0))
	var keys []uint64
	for _, k := range rng.Perm(200) {
		tr.Insert(uint64(k)*2, 0, 0, k) // even keys 0..398
	}
	require.True(t, tr.Ascend(func(n *Node[int]) bool { hi, _ := n.Key(); keys = append(keys, hi); return true }))
	require.Len(t, keys, 200)
	assert.True(t, slices.IsSorted(keys))

	for _, r := range [][2]uint64{{0, 400}, {1, 2}, {1, 3}, {2, 3}, {151, 171}, {398, 1000}, {399, 1000}, {10, 5}} {
		from, to := r[0], r[1]
		var got []uint64
		assert.True(t, tr.AscendRange(from, 0, to, 0, func(n *Node[int]) bool {
			hi, _ := n.Key()
			got = append(got, hi)
			return true
		}), "[%d, %d)", from, to)
		var want []uint64
		for k := (from + 1) / 2 * 2; k < min(to, 400); k += 2 {
			want = append(want, k)
		}
		assert.Equal(t, want, got, "[%d, %d)", from, to)
	}
	seen := 0
	assert.False(t, tr.AscendRange(100, 0, 200, 0, func(*Node[int]) bool { seen++; return seen < 3 }))
	assert.Equal(t, 3, seen, "AscendRange stops where fn says")
	seen = 0
	assert.False(t, tr.Ascend(func(*Node[int]) bool { seen++; return seen < 5 }))
	assert.Equal(t, 5, seen)
}

// Deleted nodes are reused: steady churn allocates nothing.
func TestTreeChurnAllocatesNothing(t *testing.T) {
	var tr Tree[*int]
	for k := range uint64(100) {
		tr.Insert(k, 0, k, nil)
	}
	k := uint64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		require.True(t, tr.Delete(k%100, 0))
		tr.Insert(k%100, 0, k, nil)
		k++
	})
	assert.Zero(t, allocs)
	require.NoError(t, checkTree(&tr))
}

// Rekey moves a key between its neighbours in place: the tree stays ordered and finds the node by
// its new key only.
func TestRekeyBetweenNeighbours(t *testing.T) {
	var tr Tree[int]
	for k := range uint64(50) {
		tr.Insert(10*k, 0, 0, int(k))
	}
	n := tr.Floor(200, 0)
	require.NotNil(t, n)
	n.Rekey(205, 0) // between 190 and 210
	require.NoError(t, checkTree(&tr))
	assert.Same(t, n, tr.Floor(209, 0))
	assert.Same(t, n, tr.Ceil(191, 0))
	assert.Equal(t, 19, tr.Floor(204, 0).Value)
	assert.False(t, tr.Delete(200, 0), "the old key is gone")
	assert.True(t, tr.Delete(205, 0))
	assert.Equal(t, 49, tr.Len())
	require.NoError(t, checkTree(&tr))
}

// AscendHeavy against a filtered walk of a sorted slice, with a bound that rises as nodes are
// visited, and Reweigh keeping the subtree weights; the seed is in the messages.
func TestAscendHeavyAndReweigh(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 3))
		var tr Tree[int]
		var ref []entry
		for range 300 {
			e := entry{hi: rng.Uint64N(64), lo: rng.Uint64N(64), w: rng.Uint64N(1000)}
			if i, found := slices.BinarySearchFunc(ref, e, compareEntry); !found {
				ref = slices.Insert(ref, i, e)
				tr.Insert(e.hi, e.lo, e.w, 0)
			}
		}
		for i := range ref {
			if rng.IntN(3) == 0 {
				ref[i].w = rng.Uint64N(1000)
				require.True(t, tr.Reweigh(ref[i].hi, ref[i].lo, ref[i].w), "seed %d", seed)
			}
		}
		require.False(t, tr.Reweigh(64, 0, 1), "seed %d: a key not in the tree", seed)
		require.NoError(t, checkTree(&tr), "seed %d", seed)
		for range 50 {
			from := entry{hi: rng.Uint64N(64), lo: rng.Uint64N(64)}
			step, stop := rng.Uint64N(200), rng.IntN(len(ref)+1)
			var want []entry
			bound := uint64(0)
			for _, e := range ref {
				if compareEntry(e, from) < 0 || e.w < bound {
					continue
				}
				if len(want) == stop {
					break
				}
				want = append(want, e)
				bound = max(bound, e.w/2+step) // never lowered
			}
			var got []entry
			bound = 0
			tr.AscendHeavy(from.hi, from.lo, func() uint64 { return bound }, func(n *Node[int]) bool {
				if len(got) == stop {
					return false
				}
				got = append(got, entry{hi: n.hi, lo: n.lo, w: n.weight})
				bound = max(bound, n.weight/2+step)
				return true
			})
			require.Equal(t, want, got, "seed %d, from %v", seed, from)
		}
	}
}

// TestReweighedTreeKeepsLargestWeights: a tree whose nodes are all inserted with weight 0 and
// weighted later by Reweigh keeps every subtree's largest weight through the inserts and deletes
// that follow, and its first-fit search by weight agrees with a sorted slice's.
func TestReweighedTreeKeepsLargestWeights(t *testing.T) {
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 5))
		var tr Tree[int]
		var ref []entry
		for range 200 {
			e := entry{hi: rng.Uint64N(512)}
			if i, found := slices.BinarySearchFunc(ref, e, compareEntry); !found {
				ref = slices.Insert(ref, i, e)
				tr.Insert(e.hi, 0, 0, 0)
			}
		}
		for i := range ref {
			ref[i].w = rng.Uint64N(1000)
			require.True(t, tr.Reweigh(ref[i].hi, 0, ref[i].w))
		}
		for step := range 400 {
			e := entry{hi: rng.Uint64N(512)}
			i, found := slices.BinarySearchFunc(ref, e, compareEntry)
			if found {
				require.True(t, tr.Delete(e.hi, 0))
				ref = slices.Delete(ref, i, i+1)
			} else {
				ref = slices.Insert(ref, i, e)
				tr.Insert(e.hi, 0, 0, 0)
			}
			require.NoError(t, checkTree(&tr), "seed %d, step %d", seed, step)
			w := rng.Uint64N(1000)
			want := slices.IndexFunc(ref, func(e entry) bool { return e.w >= w })
			got := tr.FirstWeightAtLeast(w)
			if want < 0 {
				require.Nil(t, got, "seed %d, step %d, weight %d", seed, step, w)
			} else {
				require.NotNil(t, got, "seed %d, step %d, weight %d", seed, step, w)
				require.Equal(t, ref[want].hi, got.hi, "seed %d, step %d, weight %d", seed, step, w)
			}
		}
	}
}

// TestClearEmptiesAndReuses clears a tree of many nodes: it reads empty, keeps its nodes for the
// inserts that follow (no new node for as many as it held), and orders those as any tree does.
func TestClearEmptiesAndReuses(t *testing.T) {
	var tr Tree[int]
	for k := range 500 {
		tr.Insert(uint64(k*7%500), 0, uint64(k), k)
	}
	tr.Clear()
	require.Equal(t, 0, tr.Len())
	require.Nil(t, tr.Max())
	require.Equal(t, uint64(0), tr.MaxWeight())
	allocs := testing.AllocsPerRun(1, func() {
		for k := range 500 {
			tr.Insert(uint64(k), 1, 0, -k)
		}
		tr.Clear()
	})
	require.Zero(t, allocs)
	for k := range 20 {
		tr.Insert(uint64(20-k), 0, 0, k)
	}
	var keys []uint64
	tr.Ascend(func(n *Node[int]) bool { h, _ := n.Key(); keys = append(keys, h); return true })
	require.Len(t, keys, 20)
	require.IsIncreasing(t, keys)
}
