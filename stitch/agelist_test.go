package stitch

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAgeListOrderAndCompaction: an age list yields its blocks oldest first, whatever leaves and
// joins again, and a push leaves no more entries than twice its blocks and ageSlack.
func TestAgeListOrderAndCompaction(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 7))
	var a ageList
	var stamp uint64
	blocks := make([]*block, 300)
	for i := range blocks {
		blocks[i] = &block{size: alignment}
	}
	var want []*block // oldest first
	for step := range 50000 {
		b := blocks[rng.IntN(len(blocks))]
		if i := slices.Index(want, b); i >= 0 {
			a.unlink(b)
			want = slices.Delete(want, i, i+1)
			assert.Zero(t, b.aged, "a block that left keeps its stamp")
		} else {
			stamp++
			a.pushNewest(b, stamp)
			want = append(want, b)
			// A push compacts first once the entries reach twice the blocks and ageSlack.
			require.LessOrEqual(t, len(a.entries), 2*(a.n-1)+ageSlack+1, "step %d: stale entries pile up", step)
		}
		require.Equal(t, len(want), a.n, "step %d", step)
		if step%101 == 0 {
			got := slices.Collect(a.all)
			require.Equal(t, want, got, "step %d", step)
		}
	}
	a.compact()
	assert.Len(t, a.entries, a.n, "compact leaves only current entries")
}
