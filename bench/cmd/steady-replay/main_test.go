package main

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSplitCountsEveryAlloc: with -split, gmlake's steady allocations are told apart by outcome,
// the two kinds adding up to the pairs, and a multi-scale training trace has both (exact matches
// and re-carves); the pool's are counted as one kind.
func TestSplitCountsEveryAlloc(t *testing.T) {
	const trace = "../../../results/cnn/resnet18-multiscale-cpu.trace.gz"
	num := func(t *testing.T, out, pattern string) int {
		t.Helper()
		m := regexp.MustCompile(pattern).FindStringSubmatch(out)
		require.NotNil(t, m, "%q in %s", pattern, out)
		n, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		return n
	}
	out := captured(t, func() error { return run(trace, "gmlake", 0, 64, 2, false, true, true, "") })
	pairs := num(t, out, `steady pairs (\d+)`)
	exact := num(t, out, `alloc exact (\d+) x`)
	other := num(t, out, `other (\d+) x`)
	assert.Equal(t, pairs, exact+other)
	assert.Positive(t, exact)
	assert.Positive(t, other, "the steady iterations of a multi-scale trace re-carve")
	assert.Positive(t, num(t, out, `steady free (\d+) x`))

	profile := filepath.Join(t.TempDir(), "steady.prof")
	out = captured(t, func() error { return run(trace, "gorgonia", 0, 64, 2, false, true, true, profile) })
	assert.Equal(t, num(t, out, `steady pairs (\d+)`), num(t, out, `steady alloc (\d+) x`))
	prof, err := os.ReadFile(profile)
	require.NoError(t, err)
	require.Greater(t, len(prof), 2)
	assert.Equal(t, []byte{0x1f, 0x8b}, prof[:2], "a CPU profile is gzip'd protobuf")
}

// captured runs fn and returns what it printed on standard output.
func captured(t *testing.T, fn func() error) string {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	stdout := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	runErr := fn()
	os.Stdout = stdout
	require.NoError(t, w.Close())
	out := <-done
	require.NoError(t, runErr)
	return out
}
