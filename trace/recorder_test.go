package trace

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRecorder(t *testing.T) {
	var r Recorder
	r.Iteration(0)
	r.Alloc(0x1000, 100, 0)
	r.Alloc(0x2000, 200, 1)
	require.NoError(t, r.Free(0x1000))
	r.Alloc(0x1000, 300, 0) // the address is reused: a new ID
	require.NoError(t, r.Free(0x1000))
	assert.Error(t, r.Free(0x3000), "a block never recorded")
	assert.Error(t, r.Free(0x1000), "a block already freed")

	tr := r.Trace("w", "more")
	assert.Equal(t, []string{"workload w events 6", "more"}, tr.Header)
	assert.Equal(t, []Event{
		{Kind: Iter, ID: 0},
		{Kind: Alloc, ID: 0, Size: 100}, {Kind: Alloc, ID: 1, Size: 200, Stream: 1},
		{Kind: Free, ID: 0}, {Kind: Alloc, ID: 2, Size: 300}, {Kind: Free, ID: 2},
	}, tr.Events)
	require.NoError(t, tr.Validate())
	r.Iteration(1)
	assert.Len(t, tr.Events, 6, "Trace returns a copy")
}
