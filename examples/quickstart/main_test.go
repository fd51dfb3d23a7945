package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQuickstartTrains runs the program: the loss falls, the classifier learns the task, and every
// buffer went back to the allocator.
func TestQuickstartTrains(t *testing.T) {
	var out bytes.Buffer
	res, err := run(&out, 300)
	require.NoError(t, err)
	t.Log("\n" + out.String())
	assert.Less(t, res.LastLoss, res.FirstLoss/4, "the loss falls")
	assert.GreaterOrEqual(t, res.Accuracy, 0.9)
	assert.Zero(t, res.LiveAfterClose)
	assert.Less(t, res.Fragmentation, 0.5)
	assert.Contains(t, out.String(), "step 300")
}
