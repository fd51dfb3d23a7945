package stitch_test

import (
	"fmt"
	"testing"

	"github.com/gmlake/gmlake/stitch"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scriptPointers runs marked iterations, each a list of sizes allocated in order and then freed
// in reverse, and returns each iteration's pointers and driver calls.
func scriptPointers(t *testing.T, iterations ...[]uint64) (ptrs [][]uintptr, calls []uint64) {
	return scriptPointersWith(t, nil, iterations...)
}

// scriptPointersWith is scriptPointers on an engine made with opts.
func scriptPointersWith(t *testing.T, opts []stitch.Option, iterations ...[]uint64) (ptrs [][]uintptr, calls []uint64) {
	h := newHarness(t, nil, opts...)
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

// TestDominatingMemoNearCapacity: a dominating memo's places strand their tails (here 32 MiB in
// all), and it is followed only while what they strand stays within the memory the capacity still
// allows to grow. With 1 GiB of capacity the shorter iteration takes the longer one's places; with
// 170 MiB, of which the longer iteration reserved nearly all, it leaves them and is laid out by
// the rules, in the memory already reserved.
func TestDominatingMemoNearCapacity(t *testing.T) {
	long := []uint64{30 * MiB, 50 * MiB, 10 * MiB, 70 * MiB}
	short := []uint64{20 * MiB, 40 * MiB, 8 * MiB, 60 * MiB}
	ptrs, calls := scriptPointersWith(t, []stitch.Option{stitch.WithCapacity(1 << 30)}, long, short)
	assert.Equal(t, ptrs[0], ptrs[1], "far from the capacity: the longer iteration's places")
	assert.Zero(t, calls[1])

	ptrs, calls = scriptPointersWith(t, []stitch.Option{stitch.WithCapacity(170 * MiB)}, long, short)
	assert.NotEqual(t, ptrs[0], ptrs[1], "near the capacity: laid out by the rules")
	assert.Zero(t, calls[1], "in the memory already reserved")
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

// TestDominatingMemoLeftAtOccupiedPlace: a place of the dominating memo that a live block holds
// (here one allocated at the end of the iteration before, and kept) shows that the memo's layout
// does not hold this iteration: the memo is left there and the iteration is a new shape, which,
// after an iteration laid out from a dominating memo, starts by flushing the cache.
func TestDominatingMemoLeftAtOccupiedPlace(t *testing.T) {
	h := newHarness(t, nil)
	defer h.closeAndCheckLeaks()
	run := func(sizes ...uint64) []uintptr {
		var got []uintptr
		for _, s := range sizes {
			p, err := h.alloc(s, 0)
			require.NoError(t, err)
			got = append(got, p)
		}
		return got
	}
	freeAll := func(ptrs []uintptr) {
		for k := len(ptrs) - 1; k >= 0; k-- {
			require.NoError(t, h.free(ptrs[k]))
		}
		h.check("after an iteration")
	}
	h.e.MarkIteration()
	long := run(30*MiB, 50*MiB, 10*MiB, 70*MiB)
	freeAll(long)
	h.e.MarkIteration()
	short := run(20*MiB, 40*MiB, 8*MiB, 60*MiB)
	freeAll(short)
	require.Equal(t, long, short, "dominated: the longer iteration's places")
	kept, err := h.alloc(8*MiB, 0) // the cached 8 MiB block, in the longer iteration's third place
	require.NoError(t, err)
	require.Equal(t, long[2], kept)

	h.e.MarkIteration()
	next := run(25*MiB, 45*MiB)
	assert.Equal(t, long[:2], next, "dominated by the longer iteration")
	require.Equal(t, 1, h.e.Stats().CachedBlocks, "the shorter iteration's 60 MiB block")
	next = append(next, run(9*MiB)...) // the memo's place for it is taken
	assert.Zero(t, h.e.Stats().CachedBlocks, "a new shape, from coalesced memory")
	next = append(next, run(65*MiB)...)
	freeAll(next)
	require.NoError(t, h.free(kept))
}

// TestDominatingMemoHandsOverWhereItsScriptEnds: a dominating memo with no large request at an
// ordinal where the iteration makes one (its script had a small request there: a longer script,
// like GPT-2 XL's iterations of 7309 requests against those of 7295) hands the iteration over to
// another memo that dominates it, rather than leaving it a new shape, laid out by the rules.
func TestDominatingMemoHandsOverWhereItsScriptEnds(t *testing.T) {
	// Each iteration's first request makes or reuses the small pool's page, which then has room
	// for the longer script's small request.
	short := []uint64{4 * KiB, 36 * MiB, 56 * MiB, 16 * MiB, 30 * MiB}
	longer := []uint64{4 * KiB, 36 * MiB, 56 * MiB, 16 * MiB, 4 * KiB, 30 * MiB}
	shorter := []uint64{4 * KiB, 35 * MiB, 55 * MiB, 15 * MiB, 25 * MiB}
	ptrs, calls := scriptPointers(t, short, longer, shorter)
	require.Equal(t, ptrs[0][:4], ptrs[1][:4])
	assert.Equal(t, ptrs[1][:4], ptrs[2][:4], "dominated by the most recent memo")
	// The rules would carve the 25 MiB right after the 15 MiB block, from the 16 MiB place's tail.
	assert.Equal(t, ptrs[0][4], ptrs[2][4], "then by the other, where the first has a small request")
	assert.Zero(t, calls[2])
}

// TestPageKeptAwayFromRememberedPlaces: a page the small pool needs after an iteration is
// remembered does not go into the place that iteration gave a large block (there, the next
// iteration of its shape would find it taken), but into new memory; the large block's place stays
// for it.
func TestPageKeptAwayFromRememberedPlaces(t *testing.T) {
	h := newHarness(t, nil)
	defer h.closeAndCheckLeaks()
	h.e.MarkIteration()
	large, err := h.alloc(8*MiB, 0)
	require.NoError(t, err)
	require.NoError(t, h.free(large))
	h.e.MarkIteration() // the iteration is remembered
	small, err := h.alloc(4*KiB, 0)
	require.NoError(t, err)
	assert.False(t, small >= large && small < large+8*MiB, "the page lies outside the remembered place")
	again, err := h.alloc(8*MiB, 0)
	require.NoError(t, err)
	assert.Equal(t, large, again, "the place is still the large block's")
	h.check("after the page")
	require.NoError(t, h.free(again))
	require.NoError(t, h.free(small))
}
