package stitch

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRoomQueueBounded: misses that go home (no idle-window search) leave the room index behind,
// but the queue of blocks it has yet to see stays within its bound, and the index catches up at
// the next search. Handles follow the blocks, so that each miss carves a new block rather than
// re-cutting the cached one in place (recarve), which the queue would hold once.
func TestRoomQueueBounded(t *testing.T) {
	const mib = 1 << 20
	e, err := New(&nullDriver{}, WithCapacity(4*mib), WithHandlesFollowBlocks())
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	// Two sizes that fit the arena only one at a time: each request flushes the other's cached
	// block at the place both call home, and carves its own there.
	sizes := []uint64{3 * mib, 3*mib + mib/2}
	homeMisses := 0
	for i := range 4 * roomQueueBound {
		size := sizes[i%2]
		before := e.Stats().Outcomes.Split
		ptr, err := e.Alloc(size, 0)
		require.NoError(t, err)
		if e.Stats().Outcomes.Split > before {
			homeMisses++
		}
		require.LessOrEqual(t, len(e.roomQueue), roomQueueBound+2*e.blocks.Len()+2, "request %d", i)
		require.NoError(t, e.Free(ptr, size))
	}
	require.Greater(t, homeMisses, 3*roomQueueBound, "the requests did not miss the exact path")
	require.NoError(t, e.Check())
	indexed, walked := arenaRuns(e, mib)
	require.Equal(t, walked, indexed)
}
