package stitch_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
	"github.com/gmlake/gmlake/trace"
	"github.com/gmlake/gmlake/trace/tracetest"
)

// shapedIteration is the allocation script of one training iteration whose activations scale with
// length n: resident weights are not part of it. Blocks are freed out of order, so that memory
// fragments and stitching is needed.
func shapedIteration(n uint64) []op {
	var ops []op
	for i := range uint64(6) {
		ops = append(ops, op{kind: opAlloc, size: (3 + i%3) * n * MiB / 2}) // saved activations
		ops = append(ops, op{kind: opAlloc, size: 2*n*MiB + 4096})          // a temporary
		ops = append(ops, op{kind: opFree, pick: -1})
	}
	ops = append(ops, op{kind: opAlloc, size: 7 * n * MiB}) // the logits: larger than any hole
	for range 7 {
		ops = append(ops, op{kind: opFree, pick: 0}) // every other activation first, then the rest
		ops = append(ops, op{kind: opAlloc, size: n*MiB + 512})
		ops = append(ops, op{kind: opFree, pick: -1})
	}
	return ops
}

// cycleCalls runs the shapes' iterations cycles times in a row, marking each iteration when mark
// is set, and returns the driver calls of each iteration and the pointers of the last cycle.
func cycleCalls(t *testing.T, shapes []uint64, cycles int, mark bool) (calls []uint64, ptrs [][]uintptr) {
	h := newHarness(t, nil)
	defer h.closeAndCheckLeaks()
	weights, err := h.alloc(40*MiB, 0)
	require.NoError(t, err)
	for c := range cycles {
		for _, n := range shapes {
			if mark {
				h.e.MarkIteration()
			}
			before := h.d.TotalCalls()
			var got []uintptr
			for i, o := range shapedIteration(n) {
				switch o.kind {
				case opAlloc:
					p, err := h.alloc(o.size, 0)
					require.NoError(t, err)
					got = append(got, p)
				case opFree:
					k := o.pick
					if k < 0 {
						k += len(h.ptrs)
					}
					if h.ptrs[k] == weights {
						k++
					}
					require.NoError(t, h.free(h.ptrs[k]))
				}
				h.check(fmt.Sprintf("cycle %d, shape %d, op %d", c, n, i))
			}
			for len(h.ptrs) > 1 {
				require.NoError(t, h.free(h.ptrs[len(h.ptrs)-1]))
			}
			calls = append(calls, h.d.TotalCalls()-before)
			if c == cycles-1 {
				ptrs = append(ptrs, got)
			}
		}
	}
	return calls, ptrs
}

// TestMemoReplaysShapes cycles through iterations of three shapes: with marks, once each shape has
// been seen, its iterations make no driver call and get the same pointers as the last time.
func TestMemoReplaysShapes(t *testing.T) {
	shapes := []uint64{5, 2, 4}
	calls, last := cycleCalls(t, shapes, 4, true)
	t.Logf("driver calls per iteration, marked: %v", calls)
	for i := 2 * len(shapes); i < len(calls); i++ {
		assert.Zero(t, calls[i], "iteration %d", i)
	}
	_, again := cycleCalls(t, shapes, 5, true)
	assert.Equal(t, last, again[:len(last)], "a fifth cycle places every block where the fourth did")

	unmarked, _ := cycleCalls(t, shapes, 4, false)
	t.Logf("driver calls per iteration, unmarked: %v", unmarked)
}

// TestMemoLeavesForNewShape follows a memo and then asks for sizes it never saw at those points:
// the engine leaves the memo, serves everything, and stays consistent.
func TestMemoLeavesForNewShape(t *testing.T) {
	calls, _ := cycleCalls(t, []uint64{3, 3, 6, 3, 1, 7}, 1, true)
	assert.Len(t, calls, 6)
	assert.Zero(t, calls[1], "the second iteration of a shape replays the first")
}

// TestMarkIterationAfterClose is a no-op, not a panic.
func TestMarkIterationAfterClose(t *testing.T) {
	e, err := stitch.New(sim.New())
	require.NoError(t, err)
	require.NoError(t, e.Close())
	e.MarkIteration()
	require.ErrorIs(t, e.Check(), stitch.ErrClosed)
}

// cycled repeats a trace's iterations n times in a row, as a long run whose shapes recur
// (trace.RepeatIterations: the setup once, allocations the trace never frees made in the first
// repetition only).
func cycled(t *testing.T, tr *trace.Trace, n int) *trace.Trace {
	t.Helper()
	rep, err := trace.RepeatIterations(tr, n)
	require.NoError(t, err)
	return rep.Trace
}

// TestMemoConvergesOnTraces repeats every shared trace four times with iteration marks: each
// iteration's shape recurs once per repetition, and the fourth repetition makes no driver call.
func TestMemoConvergesOnTraces(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	names, _ := filepath.Glob(filepath.Join(tracetest.Dir(t), "*.trace.gz"))
	require.NotEmpty(t, names)
	for _, path := range names {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) { assertFourthRepetitionQuiet(t, tracetest.Load(t, name)) })
	}
}

// TestMemoConvergesOnHeldOutTraces repeats each held-out trace (testdata/heldout: families the
// engine was not written for) four times with iteration marks: the fourth repetition makes no
// driver call, with handles sized to the headroom and with handles of one chunk. With marks a
// request no memo places takes the best-fitting loose range, and new pages keep away from the
// memos' places (pageaway.go).
func TestMemoConvergesOnHeldOutTraces(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	names, _ := filepath.Glob(filepath.Join("..", "testdata", "heldout", "*.trace.gz"))
	require.Len(t, names, 20)
	for _, path := range names {
		t.Run(filepath.Base(path), func(t *testing.T) {
			tr, err := trace.ReadFile(path)
			require.NoError(t, err)
			forHandleSizes(t, func(t *testing.T, opts ...stitch.Option) { assertQuietFrom(t, tr, 4, 4, true, opts...) })
		})
	}
}

// assertFourthRepetitionQuiet replays tr's iterations four times in a row with marks and checks that
// the fourth repetition makes no driver call.
func assertFourthRepetitionQuiet(t *testing.T, tr *trace.Trace) { assertQuietFrom(t, tr, 4, 4, true) }

// assertQuietFrom replays tr's iterations reps times in a row, with marks or not, and checks that no
// repetition from the from-th on (1-based) makes a driver call.
func assertQuietFrom(t *testing.T, tr *trace.Trace, reps, from int, marks bool, opts ...stitch.Option) {
	per := len(tr.Iterations())
	res := replayMarked(t, cycled(t, tr, reps), 0, 0, marks, opts...)
	require.NoError(t, res.oom)
	calls := res.callsPerIter
	require.Len(t, calls, reps*per)
	t.Logf("driver calls per iteration %v", calls)
	for i := (from - 1) * per; i < len(calls); i++ {
		assert.Zero(t, calls[i], "iteration %d (repetition %d)", i, i/per+1)
	}
}

// TestMemoConvergesOnGPUTrainTraces replays allocation traces gpu-train recorded on an H200 six
// times in a row with marks: GPT-2-XL shapes, LoRA, no recomputation, four sequence lengths in
// random order (testdata), and the two traces of results/gpu-train/2026-11-29-40GiB, whose runs end with
// a batch search (steps at other batches, some cut short by out-of-memory): each step's shape
// recurs after different predecessors, and from some repetition on no driver call is made: the
// fourth for all three ([2663 27 3 0 0 0 0 0], [4496 50 3 0 0 0 0 0], [2065 16 0 0 0 0 0 0]
// over eight repetitions, with pages kept away from remembered places, pageaway.go; before it the
// GPT-2-XL batch-search trace needed a fifth, and with the memos of exact shapes alone it made 11
// calls again in the sixth). Without marks every
// repetition makes hundreds. The batch-search traces need the hand-over between memos: a step
// whose script begins like one remembered shape and goes on like another. Run with handles sized to
// the headroom and with handles of one chunk (forHandleSizes): the figures above are the latter's.
func TestMemoConvergesOnGPUTrainTraces(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	results := filepath.Join("..", "results", "gpu-train", "2026-11-29-40GiB", "traces")
	for _, tc := range []struct {
		path      string
		quietFrom int // first repetition that must make no driver call, of six
	}{
		{filepath.Join("testdata", "gpt2xl-lora-h200-gpu-train.trace.gz"), 4},
		{filepath.Join(results, "gpt2-xl-gmlake.trace.gz"), 4},
		{filepath.Join(results, "opt-1.3b-gmlake.trace.gz"), 4},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			tr, err := trace.ReadFile(tc.path)
			require.NoError(t, err)
			forHandleSizes(t, func(t *testing.T, opts ...stitch.Option) { assertQuietFrom(t, tr, 6, tc.quietFrom, true, opts...) })
		})
	}
}
