package trace_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gmlake/gmlake/trace"
	"github.com/gmlake/gmlake/trace/tracetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readTrace parses lines of the text format.
func readTrace(t testing.TB, lines ...string) *trace.Trace {
	t.Helper()
	tr, err := trace.Read(strings.NewReader(strings.Join(lines, "\n")))
	require.NoError(t, err)
	return tr
}

// eventLines writes events back in the text format, one string each.
func eventLines(evs []trace.Event) []string {
	out := make([]string, 0, len(evs))
	for _, ev := range evs {
		switch ev.Kind {
		case trace.Alloc:
			out = append(out, fmt.Sprintf("a %d %d %d", ev.ID, ev.Size, ev.Stream))
		case trace.Free:
			out = append(out, fmt.Sprintf("f %d", ev.ID))
		case trace.Iter:
			out = append(out, fmt.Sprintf("i %d", ev.ID))
		}
	}
	return out
}

// A setup with weights (0) and a load buffer that iteration 0 frees (1); optimizer state made in
// iteration 0 and never freed (2); an activation live across a marker (3); a temporary (4).
var repeatSample = []string{
	"a 0 100 0", "a 1 50 0",
	"i 0", "f 1", "a 2 30 0", "a 3 10 1",
	"i 1", "f 3", "a 4 20 0", "f 4",
}

func TestRepeatIterationsEventStream(t *testing.T) {
	tests := []struct {
		name       string
		lines      []string
		times      int
		want       []string
		iterations int
		stride     int64
	}{
		{
			name: "once is the trace, renamed", lines: repeatSample, times: 1,
			want:       repeatSample,
			iterations: 2, stride: 2,
		},
		{
			name: "resident allocations and setup frees are not repeated", lines: repeatSample, times: 3,
			want: append(append([]string(nil), repeatSample...),
				"i 2", "a 5 10 1", "i 3", "f 5", "a 6 20 0", "f 6",
				"i 4", "a 7 10 1", "i 5", "f 7", "a 8 20 0", "f 8"),
			iterations: 2, stride: 2,
		},
		{
			name:  "ids are renamed in order; iterations keep their gaps",
			lines: []string{"i 1", "a 70 5 0", "i 4", "f 70", "a 9 6 0", "f 9"},
			times: 2,
			want: []string{"i 1", "a 0 5 0", "i 4", "f 0", "a 1 6 0", "f 1",
				"i 6", "a 2 5 0", "i 9", "f 2", "a 3 6 0", "f 3"},
			iterations: 2, stride: 5,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := readTrace(t, tt.lines...)
			rep, err := trace.RepeatIterations(tr, tt.times)
			require.NoError(t, err)
			assert.Equal(t, tt.want, eventLines(rep.Trace.Events))
			assert.Equal(t, tt.times, rep.Times)
			assert.Equal(t, tt.iterations, rep.Iterations)
			assert.Equal(t, tt.stride, rep.IterStride)
			checkRepetition(t, tr, rep)
		})
	}
}

// checkRepetition checks what holds of any repetition of a valid trace: the stream is valid (ids
// unique, every free of a live allocation), each repetition has the trace's markers, each numbered
// within its own repetition, and the same bytes are live at the end of every repetition as at the
// end of the trace.
func checkRepetition(t *testing.T, tr *trace.Trace, rep *trace.Repetition) {
	t.Helper()
	require.NoError(t, rep.Trace.Validate())
	endLive := liveBytes(tr.Events)
	var live, markers int
	sizes := make(map[int64]uint64)
	var active uint64
	var atRepetitionEnd []uint64
	for _, ev := range rep.Trace.Events {
		switch ev.Kind {
		case trace.Alloc:
			sizes[ev.ID] = ev.Size
			active += ev.Size
			live++
		case trace.Free:
			active -= sizes[ev.ID]
			live--
		case trace.Iter:
			if markers > 0 && markers%rep.Iterations == 0 {
				atRepetitionEnd = append(atRepetitionEnd, active)
			}
			assert.Equal(t, markers/rep.Iterations, rep.RepetitionOf(int(ev.ID)), "marker %d", ev.ID)
			markers++
		}
	}
	atRepetitionEnd = append(atRepetitionEnd, active)
	assert.Equal(t, rep.Times*rep.Iterations, markers)
	require.Len(t, atRepetitionEnd, rep.Times)
	for r, b := range atRepetitionEnd {
		assert.Equal(t, endLive, b, "live bytes at the end of repetition %d", r)
	}
}

func liveBytes(evs []trace.Event) uint64 {
	sizes := make(map[int64]uint64)
	var active uint64
	for _, ev := range evs {
		switch ev.Kind {
		case trace.Alloc:
			sizes[ev.ID] = ev.Size
			active += ev.Size
		case trace.Free:
			active -= sizes[ev.ID]
		}
	}
	return active
}

func TestRepeatIterationsErrors(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		times int
		want  error
	}{
		{"no markers", []string{"a 0 1 0", "f 0"}, 2, trace.ErrNoIterations},
		{"zero times", repeatSample, 0, trace.ErrRepeatCount},
		{"invalid trace", []string{"i 0", "f 3"}, 2, trace.ErrFormat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := trace.RepeatIterations(readTrace(t, tt.lines...), tt.times)
			assert.ErrorIs(t, err, tt.want)
		})
	}
}

// Real traces keep the same invariants: the hand-made one from a snapshot, and a shared training
// trace (setup with weights, optimizer state made in iteration 0).
func TestRepeatIterationsRealTraces(t *testing.T) {
	// made from a PyTorch snapshot by bench.Load
	sentinels, err := trace.ReadFile("../bench/testdata/sentinels.trace")
	require.NoError(t, err)
	traces := map[string]func(t *testing.T) *trace.Trace{
		"sentinels": func(*testing.T) *trace.Trace { return sentinels },
		"opt1.3b-lora-ckpt": func(t *testing.T) *trace.Trace {
			return tracetest.Load(t, "opt1.3b-lora-ckpt.trace.gz")
		},
	}
	for name, load := range traces {
		t.Run(name, func(t *testing.T) {
			tr := load(t)
			rep, err := trace.RepeatIterations(tr, 3)
			require.NoError(t, err)
			checkRepetition(t, tr, rep)
		})
	}
}
