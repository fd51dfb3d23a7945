package traincmd

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/stitch"
	"github.com/gmlake/gmlake/trace"
)

// bumpPool hands out increasing addresses and counts the iteration marks it is passed.
type bumpPool struct {
	next  uintptr
	marks int
}

func (p *bumpPool) Name() string               { return "bump" }
func (p *bumpPool) Reserved() uint64           { return 0 }
func (p *bumpPool) DriverCalls() uint64        { return 0 }
func (p *bumpPool) Close() error               { return nil }
func (p *bumpPool) PeakReserved() uint64       { return 0 }
func (p *bumpPool) Trim() error                { return nil }
func (p *bumpPool) MarkIteration()             { p.marks++ }
func (p *bumpPool) Free(uintptr, uint64) error { return nil }
func (p *bumpPool) Alloc(size uint64, _ stitch.Stream) (uintptr, error) {
	p.next += 1 << 20
	return p.next, nil
}

// TestRecorderWritesTheRequests: the trace written holds every request in order, streams numbered
// by first appearance, a marker at each MarkIteration (passed on to the pool), and reads back.
func TestRecorderWritesTheRequests(t *testing.T) {
	p := &bumpPool{}
	r := NewRecorder(p, "tool")
	r.MarkIteration()
	a, err := r.Alloc(100, stitch.Stream(7))
	require.NoError(t, err)
	b, err := r.Alloc(200, stitch.Stream(3))
	require.NoError(t, err)
	require.NoError(t, r.Free(a, 100))
	r.MarkIteration()
	_, err = r.Alloc(300, stitch.Stream(7))
	require.NoError(t, err)
	require.NoError(t, r.Free(b, 200))
	assert.Equal(t, uint64(3), r.Allocs())
	assert.Equal(t, 2, p.marks)

	err = r.Free(a, 100)
	require.Error(t, err, "a second free of a block is not in the trace")
	assert.Contains(t, err.Error(), "tool: ")

	path := filepath.Join(t.TempDir(), "run.trace.gz")
	require.NoError(t, r.Write(path, "work", "tool --flag"))
	tr, err := trace.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, tr.Validate())
	assert.Equal(t, "work", tr.Name)
	kinds := make([]trace.Kind, len(tr.Events))
	var sizes, streams []uint64
	for i, ev := range tr.Events {
		kinds[i] = ev.Kind
		if ev.Kind == trace.Alloc {
			sizes, streams = append(sizes, ev.Size), append(streams, ev.Stream)
		}
	}
	assert.Equal(t, []trace.Kind{trace.Iter, trace.Alloc, trace.Alloc, trace.Free, trace.Iter, trace.Alloc, trace.Free}, kinds)
	assert.Equal(t, []uint64{100, 200, 300}, sizes)
	assert.Equal(t, []uint64{0, 1, 0}, streams)
}
