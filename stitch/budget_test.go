package stitch_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

// idleViews builds views stitched blocks of two chunks each, from one-chunk holes between live
// one-chunk blocks (the capacity is spent, so each request must stitch), frees them, and then
// asks for a three-chunk block: the cached stitched blocks are flushed, their views become idle,
// and a new stitch runs the budget's trim. It returns the harness after that.
func idleViews(t *testing.T, views int, opts ...stitch.Option) *harness {
	t.Helper()
	chunks := 4*views + 6
	h := newHarness(t, []sim.Option{sim.WithCapacity(uint64(chunks) * g)}, opts...)
	var ps []uintptr
	for range chunks {
		p, err := h.alloc(g, 0)
		require.NoError(t, err)
		ps = append(ps, p)
	}
	for i := 0; i < chunks; i += 2 {
		require.NoError(t, h.free(ps[i]))
	}
	var stitched []uintptr
	for range views {
		p, err := h.alloc(2*g, 0)
		require.NoError(t, err)
		stitched = append(stitched, p)
	}
	require.Equal(t, views, h.e.Stats().StitchedBlocks)
	for _, p := range stitched {
		require.NoError(t, h.free(p))
	}
	_, err := h.alloc(3*g, 0)
	require.NoError(t, err)
	h.check("after the trim")
	return h
}

// TestStitchBudgetKeepsWhatItAllows: idle views are released only beyond the budget, by count or
// by virtual bytes.
func TestStitchBudgetKeepsWhatItAllows(t *testing.T) {
	const views = 12
	for _, budget := range []int{0, 64, views + 1} { // 0: the default budget
		t.Run(fmt.Sprintf("count-%d", budget), func(t *testing.T) {
			h := idleViews(t, views, stitch.WithStitchBudget(budget, 0))
			assert.Equal(t, views+1, h.e.Stats().StitchedBlocks, "every view kept: the budget allows them")
			assert.Zero(t, h.d.Calls()[stitch.CallUnmap], "no view released under the budget")
			h.closeAndCheckLeaks()
		})
	}
	// Over the budget the idle views go (views of cached blocks stay: they are in use).
	for name, opt := range map[string]stitch.Option{
		"count-2":       stitch.WithStitchBudget(2, 0),
		"virtual-bytes": stitch.WithStitchBudget(0, 7*2*g),
	} {
		t.Run(name, func(t *testing.T) {
			h := idleViews(t, views, opt)
			assert.Less(t, h.e.Stats().StitchedBlocks, views+1, "idle views released beyond the budget")
			assert.Positive(t, h.d.Calls()[stitch.CallUnmap])
			h.closeAndCheckLeaks()
		})
	}
}
