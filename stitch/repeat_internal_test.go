package stitch

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestContextsTellLayersApart: the layers of one iteration ask for the same sizes in the same
// order, but the live bytes before each differ (the activations kept so far), so their requests
// have contexts of their own: the first iteration's 24 large requests leave 24 contexts; the
// second iteration, at the same live bytes, repeats the first's contexts, but for its first
// contextWindow-1 requests, whose windows reach back into the first iteration's end.
func TestContextsTellLayersApart(t *testing.T) {
	e, err := New(&nullDriver{}, WithCapacity(1<<30))
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	iteration := func() {
		var kept []uintptr
		for range 12 { // forward: each layer keeps an activation, with a temporary
			a, err := e.Alloc(8<<20, 0)
			require.NoError(t, err)
			tmp, err := e.Alloc(4<<20, 0)
			require.NoError(t, err)
			require.NoError(t, e.Free(tmp, 4<<20))
			kept = append(kept, a)
		}
		for i := len(kept) - 1; i >= 0; i-- {
			require.NoError(t, e.Free(kept[i], 8<<20))
		}
	}
	iteration()
	assert.Equal(t, 24, e.contexts.Len(), "a context per large request of the first iteration")
	iteration()
	assert.Equal(t, 24+contextWindow-1, e.contexts.Len(), "the second iteration repeats the first's contexts")
}
