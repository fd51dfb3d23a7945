package stitch_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

// TestMissFlushesOnlyWhatItNeeds: with the capacity all cached, a request of a new size flushes the
// cached blocks under the cheapest window (a and b, 6 MiB) and not the 10 MiB one, which the next
// request of its size still finds.
func TestMissFlushesOnlyWhatItNeeds(t *testing.T) {
	h := newHarness(t, []sim.Option{sim.WithCapacity(16 * MiB)}, stitch.WithCapacity(16*MiB))
	var ptrs []uintptr
	for _, size := range []uint64{4 * MiB, 2 * MiB, 10 * MiB} {
		p, err := h.alloc(size, 0)
		require.NoError(t, err)
		ptrs = append(ptrs, p)
	}
	for _, p := range ptrs {
		require.NoError(t, h.free(p))
	}
	_, err := h.alloc(5*MiB, 0)
	require.NoError(t, err)
	exact := h.e.Stats().Outcomes.Exact
	p, err := h.alloc(10*MiB, 0)
	require.NoError(t, err)
	assert.Equal(t, ptrs[2], p)
	assert.Equal(t, exact+1, h.e.Stats().Outcomes.Exact, "the 10 MiB block survived the miss")
	h.check("after the miss")
	h.closeAndCheckLeaks()
}

// TestEmptyPagesKeptUntilCapacityNeedsThem: a large request that could take an empty small page's
// bytes creates memory instead while the capacity allows, so the page's cached small block is
// still found; at the capacity the page is given back.
func TestEmptyPagesKeptUntilCapacityNeedsThem(t *testing.T) {
	tests := []struct {
		name      string
		capacity  uint64
		pageKept  bool
		largeSize uint64
	}{
		{"room to grow", 64 * MiB, true, 8 * MiB},
		{"at the capacity", 8 * MiB, false, 8 * MiB},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, []sim.Option{sim.WithCapacity(tt.capacity)}, stitch.WithCapacity(tt.capacity))
			s, err := h.alloc(4096, 0)
			require.NoError(t, err)
			big, err := h.alloc(6*MiB, 0)
			require.NoError(t, err)
			require.NoError(t, h.free(s))
			require.NoError(t, h.free(big))
			l, err := h.alloc(tt.largeSize, 0)
			require.NoError(t, err)
			assert.Equal(t, tt.pageKept, h.e.Stats().SmallPages == 1)
			require.NoError(t, h.free(l))
			exact := h.e.Stats().Outcomes.Exact
			s2, err := h.alloc(4096, 0)
			require.NoError(t, err)
			if tt.pageKept {
				assert.Equal(t, s, s2)
				assert.Equal(t, exact+1, h.e.Stats().Outcomes.Exact)
			}
			h.check("after the large request")
			h.closeAndCheckLeaks()
		})
	}
}

// TestViewMapsWholeHandles: a view maps each handle its pieces lie in whole, from its offset 0,
// with one Map per handle (the simulated driver refuses anything else, as cuMemMap does).
func TestViewMapsWholeHandles(t *testing.T) {
	h := newHarness(t, nil, stitch.WithHandleSize(8*MiB))
	defer h.closeAndCheckLeaks()
	var ps []uintptr
	for range 3 {
		p, err := h.alloc(8*MiB, 0) // a handle each
		require.NoError(t, err)
		ps = append(ps, p)
	}
	require.Equal(t, uint64(3), h.d.Calls()[stitch.CallCreate])
	require.NoError(t, h.free(ps[0]))
	require.NoError(t, h.free(ps[2]))
	before := h.d.Calls()
	p, err := h.alloc(16*MiB, 0) // the first and the last handle, under one view
	require.NoError(t, err)
	after := h.d.Calls()
	assert.Equal(t, uint64(2), after[stitch.CallMap]-before[stitch.CallMap], "one Map per handle")
	assert.Equal(t, uint64(1), after[stitch.CallSetAccess]-before[stitch.CallSetAccess])
	assert.Zero(t, after[stitch.CallCreate]-before[stitch.CallCreate])
	assert.Equal(t, uint64(24*MiB), h.e.Stats().ReservedBytes)
	h.check("after the stitch")
	require.NoError(t, h.free(p))
	require.NoError(t, h.free(ps[1]))
}

// TestFreeBytesInsideAHandleAreNotStitched: free bytes in the middle of a handle cannot join a
// view (it maps handles whole), so a request they would complete grows instead.
func TestFreeBytesInsideAHandleAreNotStitched(t *testing.T) {
	h := newHarness(t, nil, stitch.WithHandleSize(16*MiB))
	defer h.closeAndCheckLeaks()
	x, err := h.alloc(16*MiB, 0) // one handle
	require.NoError(t, err)
	require.NoError(t, h.free(x))
	var ps []uintptr
	for range 4 {
		p, err := h.alloc(4*MiB, 0) // carved from it
		require.NoError(t, err)
		ps = append(ps, p)
	}
	require.Equal(t, uint64(1), h.d.Calls()[stitch.CallCreate])
	slices.Sort(ps)
	require.NoError(t, h.free(ps[1]))
	require.NoError(t, h.free(ps[3]))
	require.NoError(t, h.e.EmptyCache())
	reserved := h.e.Stats().ReservedBytes
	before := h.d.Calls()
	p, err := h.alloc(8*MiB, 0)
	require.NoError(t, err)
	after := h.d.Calls()
	assert.Zero(t, after[stitch.CallReserve]-before[stitch.CallReserve], "no view: the hole inside the handle cannot join one")
	assert.Equal(t, uint64(1), after[stitch.CallCreate]-before[stitch.CallCreate])
	assert.Equal(t, reserved+4*MiB, h.e.Stats().ReservedBytes, "the handle's free tail and 4 MiB more, side by side")
	h.check("after the growth")
	require.NoError(t, h.free(p))
	require.NoError(t, h.free(ps[0]))
	require.NoError(t, h.free(ps[2]))
}

// TestViewMapsOneHandleTwice: when the free tail of a handle is a view's first piece and its free
// head the last, the view maps that handle twice, once for each.
func TestViewMapsOneHandleTwice(t *testing.T) {
	h := newHarness(t, nil, stitch.WithSmallThreshold(64*KiB))
	defer h.closeAndCheckLeaks()
	x, err := h.alloc(2*MiB, 0) // one handle
	require.NoError(t, err)
	require.NoError(t, h.free(x))
	sizes := map[uintptr]uint64{}
	var ps []uintptr
	for _, s := range []uint64{MiB / 2, MiB, MiB / 2} {
		p, err := h.alloc(s, 0)
		require.NoError(t, err)
		ps, sizes[p] = append(ps, p), s
	}
	require.Equal(t, uint64(1), h.d.Calls()[stitch.CallCreate])
	slices.Sort(ps)
	require.NoError(t, h.free(ps[0]))
	require.NoError(t, h.free(ps[2]))
	require.NoError(t, h.e.EmptyCache())
	before := h.d.Calls()
	p, err := h.alloc(sizes[ps[0]]+sizes[ps[2]], 0)
	require.NoError(t, err)
	after := h.d.Calls()
	assert.Zero(t, after[stitch.CallCreate]-before[stitch.CallCreate])
	assert.Equal(t, uint64(2), after[stitch.CallMap]-before[stitch.CallMap], "the handle mapped twice")
	h.check("after the stitch")
	require.NoError(t, h.free(p))
	require.NoError(t, h.free(ps[1]))
}
