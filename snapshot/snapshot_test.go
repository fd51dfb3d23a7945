package snapshot_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/baseline"
	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/snapshot"
	"github.com/gmlake/gmlake/stitch"
	"github.com/gmlake/gmlake/trace"
)

// Traces the snapshot tests replay. The GPT-2-XL one is long under -race, which finds nothing in
// this one goroutine: -short replays the two-stream one only (make test runs the package again
// without -race).
var (
	gpuTrainTrace   = filepath.Join("..", "stitch", "testdata", "gpt2xl-lora-h200-gpu-train.trace.gz")
	twoStreamsTrace = filepath.Join("..", "stitch", "testdata", "two-streams.trace.gz")
)

func snapshotTraces() []string {
	if testing.Short() {
		return []string{twoStreamsTrace}
	}
	return []string{gpuTrainTrace, twoStreamsTrace}
}

// recordedRun is a trace replayed through the engine over a Recorder.
type recordedRun struct {
	rec *snapshot.Recorder
	g   *baseline.GMLake
	tr  *trace.Trace
}

// recordedRuns keeps the replays by path: the tests that share one only read it.
var recordedRuns = map[string]recordedRun{}

// replayRecorded replays a trace through the engine over a Recorder (once per path for all tests)
// and returns both.
func replayRecorded(t *testing.T, path string) (*snapshot.Recorder, *baseline.GMLake, *trace.Trace) {
	t.Helper()
	if r, ok := recordedRuns[path]; ok {
		return r.rec, r.g, r.tr
	}
	tr, err := bench.Load(path)
	require.NoError(t, err)
	p, err := bench.Prepare(filepath.Base(path), tr)
	require.NoError(t, err)
	rec := snapshot.NewRecorder(sim.New(sim.WithGranularity(2 << 20)))
	g, err := baseline.NewGMLake(rec)
	require.NoError(t, err)
	run, err := bench.Replay(p, rec.Record(g), 0)
	require.NoError(t, err)
	require.Nil(t, run.OOM)
	recordedRuns[path] = recordedRun{rec, g, tr}
	return rec, g, tr
}

// The snapshot's figures are the engine's: the arena segments add up to the reserved bytes, the
// active blocks' requested sizes to the live bytes, and stitched views appear as segments.
func TestSnapshotAgreesWithStats(t *testing.T) {
	for _, path := range snapshotTraces() {
		t.Run(filepath.Base(path), func(t *testing.T) {
			rec, g, _ := replayRecorded(t, path)
			st := g.Engine().Stats()
			s := rec.Snapshot()
			assert.Equal(t, st.ReservedBytes, s.Reserved(), "arena segments = reserved bytes")
			assert.Equal(t, st.LiveBytes, s.Requested(), "active blocks = live bytes")
			var views int
			for _, seg := range s.Segments {
				if seg.Type == snapshot.SegmentStitched {
					views++
				}
				var sum uint64
				for _, b := range seg.Blocks {
					sum += b.Size
				}
				assert.Equal(t, seg.Size, sum, "blocks cover segment %#x exactly", seg.Address)
			}
			assert.Equal(t, st.StitchedBlocks, views, "one segment per view")
		})
	}
}

// Write, then read back: PyTorch's pickle layout as the project's reader (bench.ReadSnapshot) and a
// generic unpickler see it.
func TestSnapshotRoundTrip(t *testing.T) {
	traces := snapshotTraces()
	rec, g, tr := replayRecorded(t, traces[0])
	var buf bytes.Buffer
	require.NoError(t, snapshot.Write(&buf, rec.Snapshot()))

	back, err := bench.ReadSnapshot(bytes.NewReader(buf.Bytes()), bench.WithMarkerSize(0))
	require.NoError(t, err)
	var allocs, frees, backAllocs, backFrees int
	for _, e := range tr.Events {
		switch e.Kind {
		case trace.Alloc:
			allocs++
		case trace.Free:
			frees++
		}
	}
	for _, e := range back.Events {
		switch e.Kind {
		case trace.Alloc:
			backAllocs++
		case trace.Free:
			backFrees++
		}
	}
	assert.Equal(t, allocs, backAllocs, "every allocation in the device trace")
	assert.Equal(t, frees, backFrees, "every free in the device trace")

	u := pickle.NewUnpickler(bytes.NewReader(buf.Bytes()))
	root, err := u.Load()
	require.NoError(t, err)
	top, ok := root.(*types.Dict)
	require.True(t, ok)
	segsV, ok := top.Get("segments")
	require.True(t, ok)
	segs := segsV.(*types.List)
	var reserved, requested uint64
	for i := range segs.Len() {
		seg := segs.Get(i).(*types.Dict)
		typ, _ := seg.Get("segment_type")
		size, _ := seg.Get("total_size")
		if typ == snapshot.SegmentArena {
			reserved += toUint(t, size)
		}
		req, _ := seg.Get("requested_size")
		requested += toUint(t, req)
	}
	st := g.Engine().Stats()
	assert.Equal(t, st.ReservedBytes, reserved)
	assert.Equal(t, st.LiveBytes, requested)
}

func toUint(t *testing.T, v any) uint64 {
	switch n := v.(type) {
	case int:
		return uint64(n)
	case int64:
		return uint64(n)
	}
	t.Fatalf("%T is not an int", v)
	return 0
}

// A live stitched block: its view is a segment holding it, and the two arena pieces under it are
// active, named after the view, with no requested bytes of their own.
func TestSnapshotLiveView(t *testing.T) {
	const mib = 1 << 20
	rec := snapshot.NewRecorder(sim.New(sim.WithGranularity(2*mib), sim.WithCapacity(24*mib)))
	g, err := baseline.NewGMLake(rec, stitch.WithCapacity(24*mib))
	require.NoError(t, err)
	a := rec.Record(g)
	var p [3]uintptr
	for i := range p {
		p[i], err = a.Alloc(8*mib, 0)
		require.NoError(t, err)
	}
	require.NoError(t, a.Free(p[0], 8*mib))
	require.NoError(t, a.Free(p[2], 8*mib))
	big, err := a.Alloc(16*mib, 0) // only the two free pieces, apart: stitched
	require.NoError(t, err)
	st := g.Engine().Stats()
	require.Equal(t, uint64(1), st.Outcomes.Stitch)

	s := rec.Snapshot()
	assert.Equal(t, st.ReservedBytes, s.Reserved())
	assert.Equal(t, st.LiveBytes, s.Requested())
	var view *snapshot.Segment
	var under uint64
	for i, seg := range s.Segments {
		if seg.Type == snapshot.SegmentStitched {
			view = &s.Segments[i]
		}
		for _, b := range seg.Blocks {
			if b.Frame != "" {
				assert.Equal(t, snapshot.StateActive, b.State)
				assert.Zero(t, b.Requested)
				under += b.Size
			}
		}
	}
	require.NotNil(t, view, "the view is a segment")
	assert.Equal(t, big, view.Blocks[0].Address)
	assert.Equal(t, uint64(16*mib), under, "the arena pieces under the view")
	require.NoError(t, a.Free(big, 16*mib))
	require.NoError(t, a.Free(p[1], 8*mib))
	require.NoError(t, a.Close())
}
