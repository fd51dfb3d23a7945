package stitch

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestContextsTellLayersApart: the layers of one iteration ask for the same sizes in the same
// order, but the live bytes before each differ (the activations kept so far), so their requests
// have contexts of their own: no repeat is seen inside the first iteration; the second iteration,
// at the same live bytes, repeats the first's contexts.
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
	assert.False(t, e.repeatSeen, "a repeat seen inside the first iteration")
	iteration()
	assert.True(t, e.repeatSeen, "the second iteration repeats the first's contexts")
}
