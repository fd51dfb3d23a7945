package stitch

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMemoIdentityComparesPlaces: an iteration with the requests of a remembered one at the same
// ordinals and sizes, whose requests went elsewhere, is remembered as a memo of its own, the most
// recent, with its own places; it does not pass for the remembered one, whose places it did not
// take.
func TestMemoIdentityComparesPlaces(t *testing.T) {
	const r = 8 << 20
	e, err := New(&nullDriver{}, WithCapacity(256<<20))
	require.NoError(t, err)
	e.MarkIteration()
	x, err := e.Alloc(r, 0) // kept live: the next iteration cannot take its place
	require.NoError(t, err)
	e.MarkIteration()
	y, err := e.Alloc(r, 0)
	require.NoError(t, err)
	require.NotEqual(t, x, y)
	e.MarkIteration()
	require.Len(t, e.memos, 2, "two iterations of one script, placed apart: two memos")
	last := e.memos[len(e.memos)-1]
	require.Len(t, last, 1)
	assert.Equal(t, e.blocks.At(uint64(y)).place(), last[0].at, "the most recent memo has the place the last iteration took")
	require.NoError(t, e.Free(x, r))
	require.NoError(t, e.Free(y, r))
	require.NoError(t, e.Check())
	require.NoError(t, e.Close())
}
