package stitch_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

// scatteredIteration is one iteration (marked if marked) of a loop that holds n pairs of 16 MiB blocks and
// frees every first one of a pair before its last request, so that the free memory then is n
// separate 16 MiB pieces, then asks for big bytes (0: none) and frees everything. It returns the
// outcomes of the big request.
func scatteredIteration(t *testing.T, e *stitch.Engine, marked bool, n int, big uint64) stitch.OutcomeCounts {
	t.Helper()
	const piece = 16 << 20
	if marked {
		e.MarkIteration()
	}
	var keep, drop []uintptr
	for range n {
		a, err := e.Alloc(piece, 0)
		require.NoError(t, err)
		b, err := e.Alloc(piece, 0)
		require.NoError(t, err)
		drop, keep = append(drop, a), append(keep, b)
	}
	for _, p := range drop {
		require.NoError(t, e.Free(p, piece))
	}
	var out stitch.OutcomeCounts
	if big > 0 {
		before := e.Stats().Outcomes
		p, err := e.Alloc(big, 0)
		require.NoError(t, err)
		require.NoError(t, e.Check())
		after := e.Stats().Outcomes
		out = stitch.OutcomeCounts{Stitch: after.Stitch - before.Stitch, NewChunks: after.NewChunks - before.NewChunks}
		require.NoError(t, e.Free(p, big))
	}
	for _, p := range keep {
		require.NoError(t, e.Free(p, piece))
	}
	require.NoError(t, e.Check())
	return out
}

// TestGrowInsteadOfStitch: once the caller's marks have shown iterations of two shapes, a request
// of a new shape that only a stitch of many handles could place is made as new memory in a few
// handles when the device has room for it, and the pieces stay free. After one shape, never
// marked, under a capacity that leaves no room, or when the driver refuses the memory, it is
// stitched.
func TestGrowInsteadOfStitch(t *testing.T) {
	const mib, gib = uint64(1 << 20), uint64(1 << 30)
	// 32 pairs of 16 MiB held, every first one freed: 32 free pieces, each two 8 MiB handles far
	// from a capacity of 64 GiB; a stitch of 256 MiB maps 32 handles, a growth makes 2.
	const n = 32
	for _, tc := range []struct {
		name                string
		driverCap, capacity uint64
		marked              bool
		plain               int    // iterations without the big request before the one with it
		weights             uint64 // bytes held from before the first iteration to the end
		big                 uint64 // the request of the new shape
		grows               bool
	}{
		{"two shapes remembered", 64 * gib, 64 * gib, true, 2, 0, 256 * mib, true},
		{"one shape remembered", 64 * gib, 64 * gib, true, 1, 0, 256 * mib, false},
		{"never marked", 64 * gib, 64 * gib, false, 6, 0, 256 * mib, false},
		{"within a quarter of the capacity", 64 * gib, 64 * gib, true, 2, 47 * gib, 256 * mib, false},
		{"a quarter of the capacity left", 64 * gib, 64 * gib, true, 2, 46 * gib, 256 * mib, true},
		{"held past half the peak beyond it", 64 * gib, 64 * gib, true, 2, 0, 512 * mib, false},
		{"the driver refuses", 1200 * mib, 64 * gib, true, 2, 0, 256 * mib, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := sim.New(sim.WithCapacity(tc.driverCap))
			e, err := stitch.New(d, stitch.WithCapacity(tc.capacity), stitch.WithExactGrowth())
			require.NoError(t, err)
			defer func() { require.NoError(t, e.Close()) }()
			if tc.weights > 0 {
				w, err := e.Alloc(tc.weights, 0)
				require.NoError(t, err)
				defer func() { require.NoError(t, e.Free(w, tc.weights)) }()
			}
			for i := range tc.plain { // iterations of different shapes: i fewer pairs each
				scatteredIteration(t, e, tc.marked, n-i, 0)
			}
			if !tc.marked {
				require.Greater(t, e.Stats().IterationsFound, uint64(2), "the finder found iterations of several shapes")
			}
			reserved := e.Stats().ReservedBytes
			out := scatteredIteration(t, e, tc.marked, n, tc.big)
			if tc.grows {
				assert.Equal(t, stitch.OutcomeCounts{NewChunks: 1}, out, "grown, not stitched")
				assert.GreaterOrEqual(t, e.Stats().ReservedBytes-reserved, tc.big)
			} else {
				assert.Equal(t, stitch.OutcomeCounts{Stitch: 1}, out, "stitched")
				assert.Equal(t, reserved, e.Stats().ReservedBytes, "no memory made")
			}
		})
	}
}
