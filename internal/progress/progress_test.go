package progress

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOnTerminal(t *testing.T) {
	assert.False(t, OnTerminal(&bytes.Buffer{}), "a buffer")
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	assert.False(t, OnTerminal(w), "a pipe")
	f, err := os.Create(t.TempDir() + "/log")
	require.NoError(t, err)
	defer f.Close()
	assert.False(t, OnTerminal(f), "a file")
}
