package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/trace"
)

// --snapshot writes a PyTorch snapshot whose device trace holds the trace's allocations and frees.
func TestReplaySnapshot(t *testing.T) {
	path := writeTiny(t)
	file := filepath.Join(t.TempDir(), "tiny.pickle")
	_, err := runCLI(t, "replay", "--quiet", "--allocators", "gmlake", "--snapshot", file, path)
	require.NoError(t, err)
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	got, err := bench.ReadSnapshot(f, bench.WithMarkerSize(0))
	require.NoError(t, err)
	want, err := bench.Load(path)
	require.NoError(t, err)
	count := func(tr *trace.Trace) (allocs, frees int) {
		for _, e := range tr.Events {
			switch e.Kind {
			case trace.Alloc:
				allocs++
			case trace.Free:
				frees++
			}
		}
		return
	}
	wa, wf := count(want)
	ga, gf := count(got)
	assert.Positive(t, wa)
	assert.Equal(t, wa, ga, "allocations")
	assert.Equal(t, wf, gf, "frees")
}
