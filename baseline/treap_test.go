package baseline

import (
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The treap against a sorted slice under random inserts and deletes; the seed is in the name.
func TestTreapMatchesSortedSlice(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		rng := rand.New(rand.NewPCG(seed, 0))
		var tr treap
		type kv struct{ key, val uint64 }
		var ref []kv
		find := func(k uint64) int { return sort.Search(len(ref), func(i int) bool { return ref[i].key >= k }) }
		for step := range 3000 {
			k := rng.Uint64N(500)
			i := find(k)
			if i < len(ref) && ref[i].key == k {
				require.True(t, tr.delete(k, 0), "seed %d step %d", seed, step)
				ref = append(ref[:i], ref[i+1:]...)
			} else {
				v := rng.Uint64N(1000)
				tr.insert(k, 0, v, nil)
				ref = append(ref[:i], append([]kv{{k, v}}, ref[i:]...)...)
			}
			require.Equal(t, len(ref), tr.len)
			q := rng.Uint64N(520)
			j := find(q)
			if c := tr.ceil(q, 0); j < len(ref) {
				require.NotNil(t, c, "seed %d step %d", seed, step)
				assert.Equal(t, ref[j].key, c.hi)
			} else {
				assert.Nil(t, c)
			}
			if f := tr.floor(q, 0); j < len(ref) && ref[j].key == q {
				assert.Equal(t, q, f.hi)
			} else if j > 0 {
				assert.Equal(t, ref[j-1].key, f.hi)
			} else {
				assert.Nil(t, f)
			}
			v := rng.Uint64N(1100)
			want := -1
			for idx, e := range ref {
				if e.val >= v {
					want = idx
					break
				}
			}
			if got := tr.firstValAtLeast(v); want < 0 {
				assert.Nil(t, got, "seed %d step %d", seed, step)
			} else {
				require.NotNil(t, got, "seed %d step %d", seed, step)
				assert.Equal(t, ref[want].key, got.hi, "seed %d step %d", seed, step)
			}
		}
		assert.False(t, tr.delete(10_000, 0))
	}
}
