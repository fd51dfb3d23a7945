package train

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/trace"
	"github.com/gmlake/gmlake/train/vm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRecordedTraceReplays records a short LoRA run with recomputation, offload and variable
// lengths, and checks the trace is valid, round-trips through the text format, has one marker per
// step, leaves only weights and optimizer state live, and replays through the baseline allocators.
func TestRecordedTraceReplays(t *testing.T) {
	const steps = 5
	inner := &vm.GoAllocator{}
	rec := NewRecorder(inner)
	tr, err := New(tinyWeights(t, "gpt2-tiny"), rec, WithLoRA(attentionLoRA), WithRecompute(true), WithOffload(true))
	require.NoError(t, err)
	rng := rand.New(rand.NewSource(1))
	for range steps {
		_, err := tr.Step(DefaultCounting.Batch(rng, 2, 8+8*rng.Intn(2)))
		require.NoError(t, err)
	}
	live := inner.LiveBytes()
	tt := rec.Trace("gpt2-tiny-lora-ckpt-off")
	require.NoError(t, tr.Close())

	require.NoError(t, tt.Validate())
	assert.Len(t, tt.Iterations(), steps)
	var buf bytes.Buffer
	require.NoError(t, trace.Write(&buf, tt))
	back, err := trace.Read(&buf)
	require.NoError(t, err)
	assert.Equal(t, tt.Events, back.Events)

	var liveAtEnd, setupAllocs int64
	sizes := map[int64]uint64{}
	for i, ev := range tt.Events {
		switch ev.Kind {
		case trace.Alloc:
			sizes[ev.ID] = ev.Size
			liveAtEnd += int64(ev.Size)
			if i < tt.Iterations()[0] {
				setupAllocs++
			}
		case trace.Free:
			liveAtEnd -= int64(sizes[ev.ID])
		}
	}
	assert.Equal(t, live, liveAtEnd, "what the trace leaves live is what the allocator held")
	assert.Positive(t, setupAllocs, "weights are allocated before the first step")

	p, err := bench.Prepare("recorded", tt)
	require.NoError(t, err)
	for _, name := range []string{"gorgonia", "caching"} {
		spec, err := bench.SimSpec(name)
		require.NoError(t, err)
		rep, err := bench.Measure(p, spec, bench.MeasureOptions{})
		require.NoError(t, err, name)
		assert.Positive(t, rep.PeakActive, name)
		assert.GreaterOrEqual(t, rep.PeakReserved, rep.PeakActive, name)
	}
}
