package stitch

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRoomQueueBounded: misses that go home (no idle-window search) leave the room index behind,
// but the queue of blocks it has yet to see stays within its bound, and the index catches up at
// the next search. Each step takes the arena as one block or as two: one block's miss flushes the
// two cached halves (the lower re-cut in place, recarve; the upper's struct recycled), and the two
// halves' misses re-cut the whole block for the lower and carve a new block for the upper, so the
// queue keeps seeing new blocks.
func TestRoomQueueBounded(t *testing.T) {
	const mib = 1 << 20
	e, err := New(&nullDriver{}, WithCapacity(4*mib))
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	steps := [][]uint64{{3 * mib}, {3 * mib / 2, 3 * mib / 2}}
	homeMisses := 0
	for i := range 4 * roomQueueBound {
		var ptrs []uintptr
		for _, size := range steps[i%2] {
			before := e.Stats().Outcomes.Split
			ptr, err := e.Alloc(size, 0)
			require.NoError(t, err)
			if e.Stats().Outcomes.Split > before {
				homeMisses++
			}
			ptrs = append(ptrs, ptr)
			require.LessOrEqual(t, len(e.roomQueue), roomQueueBound+2*e.blocks.Len()+2, "step %d", i)
		}
		for j, size := range steps[i%2] {
			require.NoError(t, e.Free(ptrs[j], size))
		}
	}
	require.Greater(t, homeMisses, 3*roomQueueBound, "the requests did not miss the exact path")
	require.NoError(t, e.Check())
	indexed, walked := arenaRuns(e, mib)
	require.Equal(t, walked, indexed)
}
