package stitch_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scriptPointers runs marked iterations, each a list of sizes allocated in order and then freed
// in reverse, and returns each iteration's pointers and driver calls.
func scriptPointers(t *testing.T, iterations ...[]uint64) (ptrs [][]uintptr, calls []uint64) {
	h := newHarness(t, nil)
	defer h.closeAndCheckLeaks()
	for i, sizes := range iterations {
		h.e.MarkIteration()
		before := h.d.TotalCalls()
		var got []uintptr
		for _, s := range sizes {
			p, err := h.alloc(s, 0)
			require.NoError(t, err)
			got = append(got, p)
		}
		for k := len(got) - 1; k >= 0; k-- {
			require.NoError(t, h.free(got[k]))
			h.check(fmt.Sprintf("iteration %d", i))
		}
		ptrs = append(ptrs, got)
		calls = append(calls, h.d.TotalCalls()-before)
	}
	return ptrs, calls
}

// TestDominatingMemoGivesPlaces: the first iteration of a shorter shape takes, request by
// request, the places the longer iteration's requests had (the first bytes of each), and makes no
// driver call; laid out by the rules instead it would pack its blocks from the lowest address.
func TestDominatingMemoGivesPlaces(t *testing.T) {
	long := []uint64{30 * MiB, 50 * MiB, 10 * MiB, 70 * MiB}
	short := []uint64{20 * MiB, 40 * MiB, 8 * MiB, 60 * MiB}
	ptrs, calls := scriptPointers(t, long, short)
	assert.Equal(t, ptrs[0], ptrs[1])
	assert.Zero(t, calls[1])

	// A request larger than the memo's at its ordinal ends the domination: from there the
	// iteration is a new shape, laid out by the rules.
	longer := []uint64{20 * MiB, 40 * MiB, 80 * MiB, 60 * MiB}
	ptrs, _ = scriptPointers(t, long, longer)
	assert.Equal(t, ptrs[0][:2], ptrs[1][:2])
	assert.NotEqual(t, ptrs[0][2], ptrs[1][2])
}

// TestDominatingMemoLeftWhenScriptsShift: a request whose size the memo has at another ordinal
// means the scripts have shifted (an iteration with one request fewer), and the places ahead
// belong to other requests: the memo is left rather than followed into them.
func TestDominatingMemoLeftWhenScriptsShift(t *testing.T) {
	long := []uint64{30 * MiB, 50 * MiB, 16 * MiB, 8 * MiB}
	shifted := []uint64{20 * MiB, 16 * MiB, 8 * MiB} // the 50 MiB activation is gone
	ptrs, _ := scriptPointers(t, long, shifted)
	assert.Equal(t, ptrs[0][0], ptrs[1][0], "dominated until the shift shows")
	assert.NotEqual(t, ptrs[0][1], ptrs[1][1], "the 16 MiB request does not take the 50 MiB place")
}
