package stitch_test

import (
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

// TestStitchTakesFewerPieces: a view maps each of its pieces with its own call, so a new view
// is made of idle runs (flushing the cached blocks in them) when they need fewer than half the
// pieces the loose ranges alone would: two cached 8 MiB blocks rather than eight 2 MiB holes.
func TestStitchTakesFewerPieces(t *testing.T) {
	h := newHarness(t, nil)
	defer h.closeAndCheckLeaks()
	big, err := h.alloc(52*MiB, 0) // one physical allocation, carved below
	require.NoError(t, err)
	require.NoError(t, h.free(big))
	var kept []uintptr
	// keptThen allocates a 2 MiB block that stays live, then one of size bytes, which it returns.
	keptThen := func(size uint64) uintptr {
		s, err := h.alloc(2*MiB, 0)
		require.NoError(t, err)
		kept = append(kept, s)
		p, err := h.alloc(size, 0)
		require.NoError(t, err)
		return p
	}
	var holes, places []uintptr
	for range 8 {
		holes = append(holes, keptThen(2*MiB))
	}
	for range 2 {
		places = append(places, keptThen(8*MiB))
	}
	for _, p := range append(holes, places...) {
		require.NoError(t, h.free(p))
	}
	require.NoError(t, h.e.EmptyCache()) // the holes and the places loose; the allocation stays
	var again []uintptr
	for range places {
		c, err := h.alloc(8*MiB, 0)
		require.NoError(t, err)
		again = append(again, c)
	}
	require.ElementsMatch(t, places, again, "the 8 MiB places fit exactly")
	for _, c := range again {
		require.NoError(t, h.free(c)) // cached again
	}
	before := h.d.Calls()[stitch.CallMap]
	p, err := h.alloc(16*MiB, 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), h.d.Calls()[stitch.CallMap]-before, "two pieces, one map call each")
	assert.Zero(t, h.e.Stats().CachedBlocks, "the two cached blocks flushed into the view")
	h.check("after the stitch")
	require.NoError(t, h.free(p))
	for _, s := range kept {
		require.NoError(t, h.free(s))
	}
}
