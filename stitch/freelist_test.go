package stitch

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFreeListOrder pushes blocks in random, ascending, descending and run-like orders, unlinking
// random members in between, and checks after each change that the list holds exactly its blocks,
// lowest first, linked both ways.
func TestFreeListOrder(t *testing.T) {
	orders := map[string]func(rng *rand.Rand, n int) []int{
		"random":     func(rng *rand.Rand, n int) []int { return rng.Perm(n) },
		"ascending":  func(_ *rand.Rand, n int) []int { return seq(n) },
		"descending": func(_ *rand.Rand, n int) []int { s := seq(n); slices.Reverse(s); return s },
		"runs": func(rng *rand.Rand, n int) []int { // runs of neighbours, the runs in random order
			var out []int
			for _, r := range rng.Perm(n / 8) {
				out = append(out, seq(8)...)
				for i := range 8 {
					out[len(out)-8+i] += r * 8
				}
			}
			return out
		},
	}
	for name, order := range orders {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(len(name))))
			const n = 256
			blocks := make([]*block, n)
			for i := range blocks {
				blocks[i] = &block{first: uint64(i) * 4096}
			}
			var l freeList
			in := map[*block]bool{}
			var members []*block // in the order pushed, for a choice that is the same every run
			for _, i := range order(rng, n) {
				b := blocks[i]
				l.push(b)
				in[b] = true
				members = append(members, b)
				if k := rng.IntN(4); k < 2 { // take a member out, as a reuse or a flush does
					j := len(members) - 1 // the block just pushed: the list's last
					if k == 1 {
						j = rng.IntN(len(members))
					}
					l.unlink(members[j])
					delete(in, members[j])
					members = slices.Delete(members, j, j+1)
				}
				checkFreeList(t, &l, in)
			}
		})
	}
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func checkFreeList(t *testing.T, l *freeList, in map[*block]bool) {
	t.Helper()
	var prev *block
	n := 0
	for b := l.head; b != nil; prev, b = b, b.next {
		require.True(t, in[b], "a block in the list that was not pushed or was unlinked")
		require.Equal(t, prev, b.prev, "a block's prev is not the block before it")
		if prev != nil {
			require.Less(t, prev.first, b.first, "the list is out of address order")
		}
		n++
	}
	require.Equal(t, prev, l.tail)
	require.Equal(t, len(in), n)
	require.Equal(t, len(in), l.n)
}
