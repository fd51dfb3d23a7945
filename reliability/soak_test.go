package reliability

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gmlake/gmlake/trace/tracetest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/stitch"
	"github.com/gmlake/gmlake/trace"
)

// soakFrom is the iteration marker soaks repeat from: the first iterations warm the job up
// (optimizer state appears in the first step).
const soakFrom = 3

// soakWarmupReps is the number of repetitions of the segment that count as warm-up: the driver
// calls and reserved bytes after them are the soak's steady-state figures.
const soakWarmupReps = 2

// TestSoak replays every shared trace for many iterations (20 here; GMLAKE_LONG=1 or
// GMLAKE_SOAK_ITERS=n for 1000): stitched blocks within the default budget at every iteration;
// every block's physical bytes claimed in the shadow map; Check and the
// accounting cross-check at every repetition's end; nothing left in the driver after Close. And
// the engine settles, marked or not: after the warm-up repetitions, no driver call and reserved
// bytes flat (a training job that repeats itself must stop paying the driver). Under -race only
// the three shortest traces: the soak is sequential, so the race detector adds nothing to it but
// time (`make test` and `make reliability` soak every trace without it).
func TestSoak(t *testing.T) {
	iterations := envInt(t, "GMLAKE_SOAK_ITERS", 20)
	if long() {
		iterations = envInt(t, "GMLAKE_SOAK_ITERS", 1000)
	}
	names, err := filepath.Glob(filepath.Join(tracetest.Dir(t), "*.trace.gz"))
	require.NoError(t, err)
	require.NotEmpty(t, names)
	if raceEnabled && !long() {
		names = raceSoakTraces(t, names)
	}
	modes := soakModes(t)
	for _, path := range names {
		t.Run(filepath.Base(path), func(t *testing.T) {
			tr := tracetest.Load(t, filepath.Base(path))
			for _, marked := range modes {
				t.Run(soakMode(marked), func(t *testing.T) {
					r := soak(t, tr, iterations, 0, marked)
					assert.Zero(t, r.steadyCalls, "driver calls in %d steady-state iterations", r.steadyIters)
					assert.Equal(t, [2]uint64{r.reservedAfterWarmup, r.reservedAfterWarmup}, r.reservedSteady,
						"reserved bytes after warm-up, then least and most in the steady iterations")
				})
			}
		})
	}
}

// soakModes are the modes TestSoak runs each trace in: GMLAKE_SOAK_MARKS=0 only unmarked, =1 only
// marked (MarkIteration at every iteration marker), unset both, for comparison.
func soakModes(t *testing.T) []bool {
	switch envInt(t, "GMLAKE_SOAK_MARKS", -1) {
	case 0:
		return []bool{false}
	case 1:
		return []bool{true}
	}
	return []bool{false, true}
}

func soakMode(marked bool) string {
	if marked {
		return "marked"
	}
	return "unmarked"
}

// raceSoakTraces keeps the traces of the -race soak, those present of the three shortest.
func raceSoakTraces(t *testing.T, names []string) []string {
	short := map[string]bool{"opt1.3b-lora-ckpt.trace.gz": true, "neox20b-lora-ckpt.trace.gz": true,
		"opt1.3b-lora-ckpt-off.noweights.trace.gz": true}
	var kept []string
	for _, n := range names {
		if short[filepath.Base(n)] {
			kept = append(kept, n)
		}
	}
	if len(kept) == 0 {
		tracetest.Missing(t, "none of the -race soak traces is present")
	}
	return kept
}

// TestSoakOneChunkHandles is TestSoak on two traces with handles fixed at one 2 MiB chunk, the size
// the engine makes near its capacity (without one, a simulated device of 1 TiB leaves a headroom
// that makes its handles 128 MiB): there the small pool's layout must follow the contexts of
// small requests (small.go) for the steady iterations to make no driver call.
func TestSoakOneChunkHandles(t *testing.T) {
	iterations := envInt(t, "GMLAKE_SOAK_ITERS", 20)
	for _, name := range []string{"opt1.3b-full.noweights.trace.gz", "opt1.3b-lora-ckpt-off.noweights.trace.gz"} {
		t.Run(name, func(t *testing.T) {
			tr := tracetest.Load(t, name)
			for _, marked := range soakModes(t) {
				t.Run(soakMode(marked), func(t *testing.T) {
					r := soak(t, tr, iterations, 0, marked, stitch.WithHandleSize(2<<20))
					assert.Zero(t, r.steadyCalls, "driver calls in %d steady-state iterations", r.steadyIters)
					assert.Equal(t, [2]uint64{r.reservedAfterWarmup, r.reservedAfterWarmup}, r.reservedSteady,
						"reserved bytes after warm-up, then least and most in the steady iterations")
				})
			}
		})
	}
}

// TestSoakTightBudget soaks one trace with room for only 16 stitched blocks: the budget must hold
// at every iteration, whatever it costs in driver calls.
func TestSoakTightBudget(t *testing.T) {
	iterations := envInt(t, "GMLAKE_SOAK_ITERS", 20)
	if long() {
		iterations = envInt(t, "GMLAKE_SOAK_ITERS", 1000)
	}
	tr := tracetest.Load(t, "opt1.3b-lora-ckpt.trace.gz")
	for _, marked := range soakModes(t) {
		t.Run(soakMode(marked), func(t *testing.T) { soak(t, tr, iterations, 16, marked) })
	}
}

// iterationRecord is what one iteration of a soak measured.
type iterationRecord struct {
	rep            int // repetition of the segment (-1: an iteration of the prefix)
	calls          uint64
	reserved       uint64
	stitched       int
	virtual        uint64
	steady, warmup bool
}

// soak replays tr's soak with a budget of maxViews stitched blocks (0: the default) and returns its
// steady-state figures. Marked: MarkIteration at every iteration marker, as a
// training loop calls it (the engine's memos replay the placements of an iteration of the same
// shape); else the engine is never told where iterations begin.
func soak(t *testing.T, tr *trace.Trace, iterations, maxViews int, marked bool, opts ...stitch.Option) soakResult {
	s, err := NewSoak(tr, soakFrom, iterations)
	require.NoError(t, err)
	require.NoError(t, s.Trace.Validate())
	cfg := Config{EngineOptions: slices.Clone(opts)}
	budget := stitch.DefaultMaxViews
	if maxViews > 0 {
		budget = maxViews
		cfg.EngineOptions = append(cfg.EngineOptions, stitch.WithStitchBudget(maxViews, 0))
	}
	h, err := NewHarness(cfg)
	require.NoError(t, err)
	arena := h.Engine.Stats().VirtualBytes

	start := time.Now()
	var recs []iterationRecord
	mark := h.Driver.TotalCalls()
	markers := 0
	endIteration := func() {
		st := h.Engine.Stats()
		rep := -1 // repetition of the iteration that ends (-1: the prefix)
		if markers > s.PrefixIters {
			rep = (markers - s.PrefixIters - 1) / s.SegmentIters
		}
		recs = append(recs, iterationRecord{rep: rep, calls: h.Driver.TotalCalls() - mark, reserved: st.ReservedBytes,
			stitched: st.StitchedBlocks, virtual: st.VirtualBytes - arena,
			warmup: rep >= 0 && rep < soakWarmupReps, steady: rep >= soakWarmupReps})
		mark = h.Driver.TotalCalls()
		if len(recs)%100 == 0 {
			fmt.Printf("soak progress: %s iteration %d after %s: %d stitched blocks, %d reserved bytes, %d driver calls in all\n",
				tr.Name, len(recs), time.Since(start).Round(time.Millisecond), st.StitchedBlocks, st.ReservedBytes, h.Driver.TotalCalls())
		}
		if markers > s.PrefixIters && (markers-s.PrefixIters)%s.SegmentIters == 0 {
			require.True(t, verified(t, h, "end of repetition %d", rep))
		}
	}
	var shadowed uint64
	for i, ev := range s.Trace.Events {
		if ev.Kind == trace.Iter {
			if markers > 0 {
				endIteration()
			}
			markers++
		}
		var err error
		if op, ok := eventOp(ev, marked); ok {
			err = h.Apply(op)
			if ev.Kind != trace.Iter {
				shadowed++
			}
		}
		if err != nil {
			tally.violations.Add(1)
			require.NoError(t, err, "event %d", i)
		}
	}
	endIteration()
	elapsed := time.Since(start)
	tally.shadowed.Add(shadowed)
	end := h.Engine.Stats()
	totalCalls := h.Driver.TotalCalls()
	require.NoError(t, h.Close())
	leaked := "none"
	if err := h.Leaks(); err != nil {
		tally.leaks.Add(1)
		leaked = err.Error()
		t.Error(err)
	}

	if testing.Verbose() && envInt(t, "GMLAKE_SOAK_DUMP", 0) != 0 {
		for i, r := range recs {
			t.Logf("iteration %d: calls %d reserved %d stitched %d steady %v", i, r.calls, r.reserved, r.stitched, r.steady)
		}
	}
	var flat uint64
	var steadyCalls, steadyIters uint64
	minRes, maxRes, maxStitched := ^uint64(0), uint64(0), 0
	lastCall, lastGrowth := -1, -1 // the last iterations that made a driver call, that changed reserved bytes
	for i, r := range recs {
		if r.calls > 0 {
			lastCall = i
		}
		if i > 0 && r.reserved != recs[i-1].reserved {
			lastGrowth = i
		}
		if r.warmup {
			flat = r.reserved // reserved at the end of warm-up
		}
		maxStitched = max(maxStitched, r.stitched)
		assert.LessOrEqual(t, r.stitched, budget, "stitched blocks beyond the budget")
		if !r.steady {
			continue
		}
		steadyIters++
		steadyCalls += r.calls
		minRes, maxRes = min(minRes, r.reserved), max(maxRes, r.reserved)
	}
	require.NotZero(t, steadyIters, "no steady-state iteration: ask for more than %d", soakWarmupReps*s.SegmentIters)
	repCalls := make([]uint64, s.Repetitions) // driver calls of each repetition
	for _, r := range recs {
		if r.rep >= 0 {
			repCalls[r.rep] += r.calls
		}
	}
	settled := len(repCalls) // repetitions up to the last one that made a driver call
	for settled > 0 && repCalls[settled-1] == 0 {
		settled--
	}
	settledAfter := fmt.Sprint(settled)
	if settled == len(repCalls) {
		settledAfter = "never"
	}
	line := fmt.Sprintf("soak: %s mode=%s budget=%d iterations=%d (prefix %d + %d×%d) events=%d time=%s settled-after-rep=%s last-rep-calls=%d total-driver-calls=%d steady-iterations=%d steady-driver-calls=%d last-call-iteration=%d reserved-after-warmup=%d reserved-steady=[%d,%d] reserved-end=%d peak-reserved=%d last-reserved-change=%d max-stitched=%d stitched-end=%d leaks=%s",
		tr.Name, soakMode(marked), budget, len(recs), s.PrefixIters, s.Repetitions, s.SegmentIters, len(s.Trace.Events), elapsed.Round(time.Millisecond),
		settledAfter, repCalls[len(repCalls)-1], totalCalls, steadyIters, steadyCalls, lastCall, flat, minRes, maxRes, end.ReservedBytes, end.PeakReservedBytes,
		lastGrowth, maxStitched, end.StitchedBlocks, leaked)
	t.Log(line)
	fmt.Println(line)
	return soakResult{reservedAfterWarmup: flat, reservedSteady: [2]uint64{minRes, maxRes}, steadyCalls: steadyCalls, steadyIters: steadyIters}
}

// soakResult is what a soak measured after warm-up.
type soakResult struct {
	reservedAfterWarmup uint64
	reservedSteady      [2]uint64 // least and most reserved bytes at the end of a steady iteration
	steadyCalls         uint64    // driver calls in the steady iterations
	steadyIters         uint64
}

// TestSoakMarksNeedNoMoreMemory: MarkIteration is a hint that may move blocks but must not cost a
// request its memory. Each trace's soak (the three shortest; every trace with GMLAKE_LONG=1) runs
// unmarked without a limit, then marked with the physical capacity set to the unmarked run's peak
// reserved bytes: the marked run must serve every request, and end consistent and leak-free.
func TestSoakMarksNeedNoMoreMemory(t *testing.T) {
	iterations := envInt(t, "GMLAKE_SOAK_ITERS", 20)
	if long() {
		iterations = envInt(t, "GMLAKE_SOAK_ITERS", 200)
	}
	names, err := filepath.Glob(filepath.Join(tracetest.Dir(t), "*.trace.gz"))
	require.NoError(t, err)
	require.NotEmpty(t, names)
	if !long() {
		names = raceSoakTraces(t, names)
	}
	for _, path := range names {
		t.Run(filepath.Base(path), func(t *testing.T) {
			s, err := NewSoak(tracetest.Load(t, filepath.Base(path)), soakFrom, iterations)
			require.NoError(t, err)
			peak, err := replaySoak(s, Config{}, false)
			require.NoError(t, err, "unmarked, no capacity limit")
			marked, err := replaySoak(s, Config{Capacity: peak}, true)
			if err != nil {
				tally.violations.Add(1)
			}
			require.NoError(t, err, "marked, at the unmarked peak of %d bytes", peak)
			t.Logf("peak reserved: unmarked %d, marked at that capacity %d", peak, marked)
		})
	}
}

// replaySoak runs s on a fresh harness of cfg, marking iterations when marked, and returns the
// peak reserved bytes; the first refused request, a failed verification at the end or a leak is
// the error.
func replaySoak(s *Soak, cfg Config, marked bool) (uint64, error) {
	h, err := NewHarness(cfg)
	if err != nil {
		return 0, err
	}
	var shadowed uint64
	defer func() { tally.shadowed.Add(shadowed) }()
	for i, ev := range s.Trace.Events {
		var err error
		if op, ok := eventOp(ev, marked); ok {
			err = h.Apply(op)
			if ev.Kind != trace.Iter {
				shadowed++
			}
		}
		if err != nil {
			_ = h.Close()
			return 0, fmt.Errorf("event %d (%v %d bytes): %w", i, ev.Kind, ev.Size, err)
		}
	}
	tally.ops.Add(1)
	if err := h.Verify(); err != nil {
		_ = h.Close()
		return 0, err
	}
	peak := h.Engine.Stats().PeakReservedBytes
	if err := h.Close(); err != nil {
		return 0, err
	}
	return peak, h.Leaks()
}

// eventOp is the harness operation of one soak event: an allocation, a free, or at an iteration
// marker a mark when the soak is marked (ok is false for an unmarked marker).
func eventOp(ev trace.Event, marked bool) (op Op, ok bool) {
	switch ev.Kind {
	case trace.Alloc:
		return Op{Kind: OpAlloc, ID: ev.ID, Size: ev.Size, Stream: stitch.Stream(ev.Stream)}, true
	case trace.Free:
		return Op{Kind: OpFree, ID: ev.ID}, true
	}
	return Op{Kind: OpMark}, marked
}
