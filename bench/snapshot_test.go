package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gmlake/gmlake/trace"
	"github.com/gmlake/gmlake/trace/tracetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sharedTraces is ../shared/traces seen from this package's directory.
const sharedTraces = "../../shared/traces"

func TestReadSnapshotSentinelsMatchText(t *testing.T) {
	snap, err := Load("testdata/sentinels.snapshot.pickle")
	require.NoError(t, err)
	text, err := Load("testdata/sentinels.trace")
	require.NoError(t, err)
	assert.Equal(t, text.Events, snap.Events)
	assert.Equal(t, "sentinels.snapshot.pickle", snap.Name, "a snapshot is named after its file")
	assert.Equal(t, "sentinels", text.Name, "a text trace keeps its workload name")
}

func TestReadSnapshotOptimizerStepMarkers(t *testing.T) {
	got, err := Load("testdata/annotated.snapshot.pickle.gz")
	require.NoError(t, err)
	a := func(id int64, size uint64) trace.Event { return trace.Event{Kind: trace.Alloc, ID: id, Size: size} }
	f := func(id int64) trace.Event { return trace.Event{Kind: trace.Free, ID: id} }
	i := func(n int64) trace.Event { return trace.Event{Kind: trace.Iter, ID: n} }
	assert.Equal(t, []trace.Event{i(0), a(0, 4096), a(1, 8192), f(1), i(1), a(2, 8192), f(2), i(2), a(3, 8192)}, got.Events)
}

func TestReadSnapshotOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    []SnapshotOption
		iters   int
		allocs  int
		wantErr bool
	}{
		{name: "default sentinel", iters: 2, allocs: 4},
		{name: "sentinels off", opts: []SnapshotOption{WithMarkerSize(0)}, iters: 0, allocs: 6},
		{name: "device 0", opts: []SnapshotOption{WithSnapshotDevice(0)}, iters: 2, allocs: 4},
		{name: "no such device", opts: []SnapshotOption{WithSnapshotDevice(3)}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Load("testdata/sentinels.snapshot.pickle", tc.opts...)
			if tc.wantErr {
				assert.ErrorIs(t, err, trace.ErrFormat)
				return
			}
			require.NoError(t, err)
			allocs := 0
			for _, ev := range got.Events {
				if ev.Kind == trace.Alloc {
					allocs++
				}
			}
			assert.Len(t, got.Iterations(), tc.iters)
			assert.Equal(t, tc.allocs, allocs)
		})
	}
}

func TestReadSnapshotRejectsNonSnapshots(t *testing.T) {
	path := filepath.Join(t.TempDir(), "list.pickle")
	// pickle protocol 2 of the empty list: PROTO 2, EMPTY_LIST, STOP.
	require.NoError(t, os.WriteFile(path, []byte{0x80, 0x02, ']', '.'}, 0o644))
	_, err := Load(path)
	assert.ErrorIs(t, err, trace.ErrFormat)
}

// The snapshot and the text trace of the same real run read as the same events, so every figure
// every allocator gives is the same.
func TestSnapshotAndTextTraceGiveSameFigures(t *testing.T) {
	snapPath := filepath.Join(sharedTraces, "opt1.3b-lora-ckpt.snapshot.pickle.gz")
	textPath := filepath.Join(sharedTraces, "opt1.3b-lora-ckpt.trace.gz")
	if _, err := os.Stat(snapPath); err != nil {
		tracetest.Missing(t, "../shared/traces not present")
	}
	snap, err := Load(snapPath)
	require.NoError(t, err)
	text, err := Load(textPath)
	require.NoError(t, err)
	require.Equal(t, text.Events, snap.Events)
	if testing.Short() {
		return
	}
	ps, err := Prepare("run", snap)
	require.NoError(t, err)
	pt, err := Prepare("run", text)
	require.NoError(t, err)
	for _, name := range AllocatorNames {
		spec, err := SimSpec(name)
		require.NoError(t, err)
		fromSnap, err := Measure(ps, spec, MeasureOptions{})
		require.NoError(t, err)
		fromText, err := Measure(pt, spec, MeasureOptions{})
		require.NoError(t, err)
		// Times measured on this machine differ between any two runs; every other figure must not.
		for _, r := range []*Report{&fromSnap, &fromText} {
			r.NsPerPair, r.SteadyNsPerPair, r.CPUMsPerIter, r.Workload = 0, nil, nil, ""
		}
		assert.Equal(t, fromText, fromSnap, name)
	}
}
