package stitch

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/trace"
	"github.com/gmlake/gmlake/trace/tracetest"
)

// findIterations runs the finder over tr's requests as the engine feeds it (loopScript) and
// returns the request ordinals of the beginnings it found and of the trace's markers.
func findIterations(tr *trace.Trace) (found, markers []uint64) {
	s := &loopScript{}
	sizes := map[int64]uint64{}
	for _, ev := range tr.Events {
		switch ev.Kind {
		case trace.Alloc:
			sizes[ev.ID] = ev.Size
			s.alloc(ev.Size)
		case trace.Free:
			s.free(sizes[ev.ID])
			delete(sizes, ev.ID)
		case trace.Iter:
			markers = append(markers, s.n)
		}
	}
	return s.found, markers
}

// TestIterFinderOnRecordedTraces: over every PyTorch training trace the project has (the shared
// ones, the held-out families, and those recorded to judge the finder and releases 0.5.1, 0.5.8
// and 0.5.9: testdata/heldout-finder, testdata/heldout-0.5.1, testdata/heldout-0.5.8,
// testdata/heldout-0.5.9), the finder finds the beginning of every iteration from the fourth on, where the trace marks it,
// and takes no request inside an iteration from the second on for one.
func TestIterFinderOnRecordedTraces(t *testing.T) {
	var paths []string
	for _, dir := range []string{"heldout", "heldout-finder", "heldout-0.5.1", "heldout-0.5.8", "heldout-0.5.9"} {
		p, _ := filepath.Glob(filepath.Join("..", "testdata", dir, "*.trace.gz"))
		paths = append(paths, p...)
	}
	require.Len(t, paths, 32)
	if dir := tracetest.DirOrEmpty(); dir != "" {
		p, _ := filepath.Glob(filepath.Join(dir, "*.trace.gz"))
		paths = append(paths, p...)
	} else {
		tracetest.Missing(t, "no shared traces ($GMLAKE_TRACES or ../shared/traces)")
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			tr, err := trace.ReadFile(path)
			require.NoError(t, err)
			found, markers := findIterations(tr)
			require.Greater(t, len(markers), 4)
			for i, m := range markers[3:] {
				assert.True(t, slices.Contains(found, m), "iteration %d (request %d) not found", i+3, m)
			}
			for _, n := range found {
				if n > markers[1] {
					assert.True(t, slices.Contains(markers, n), "request %d inside an iteration taken for a beginning", n)
				}
			}
		})
	}
}
