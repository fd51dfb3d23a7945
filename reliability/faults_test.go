package reliability

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gmlake/gmlake/trace/tracetest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

const simG = sim.DefaultGranularity

// faultWorkload is a named workload for the fault sweep.
type faultWorkload struct {
	name string
	cfg  Config
	ops  []Op
	// markAfterFault: the engine is told an iteration begins right after the request that met
	// the fault (before its retry).
	markAfterFault bool
}

func faultWorkloads(t *testing.T) []faultWorkload {
	ws := []faultWorkload{
		{"stitch-heavy", Config{Capacity: 256 * simG, SimOptions: []sim.Option{sim.WithEventDelay(1)}}, StitchHeavy(simG), false},
		{"stitch-heavy/budget-2", Config{Capacity: 256 * simG, EngineOptions: []stitch.Option{stitch.WithStitchBudget(2, 0)}}, StitchHeavy(simG), false},
		// Closed with live blocks, cached blocks, views and pending events: Close does all the work.
		{"stitch-heavy/close-busy", Config{Capacity: 256 * simG, SimOptions: []sim.Option{sim.WithEventDelay(3)}}, untilReset(StitchHeavy(simG)), false},
		// MarkIteration: at arbitrary places, and in a run of recurring shapes whose memos are followed.
		{"stitch-heavy/marked", Config{Capacity: 256 * simG, SimOptions: []sim.Option{sim.WithEventDelay(1)}}, WithMarks(StitchHeavy(simG), 5), true},
	}
	// The sweeps over shaped iterations and a trace prefix are the longest (minutes under -race,
	// which finds nothing in this one goroutine): -short leaves them out (make test runs them
	// again without -race).
	if testing.Short() {
		return ws
	}
	ws = append(ws, faultWorkload{"shaped-iterations/marked", Config{Capacity: 256 * simG, SimOptions: []sim.Option{sim.WithEventDelay(1)}}, ShapedIterations(simG), true})
	if tracetest.DirOrEmpty() != "" || tracetest.InCI() { // in CI, absent traces fail the test
		// 150 events: weights and the first activations, all new chunks. 2000 (GMLAKE_LONG=1) reach
		// into the first iterations: exact reuse, splits and 25 stitches, 440 maps.
		n := envInt(t, "GMLAKE_FAULT_PREFIX", 150)
		if long() {
			n = envInt(t, "GMLAKE_FAULT_PREFIX", 2000)
		}
		tr := tracetest.Load(t, "opt1.3b-lora-ckpt.trace.gz")
		ws = append(ws, faultWorkload{fmt.Sprintf("opt1.3b-lora-ckpt/prefix-%d", n), Config{}, TracePrefix(tr, n), false})
		if long() { // the same with marks every 100 operations and after each fault
			ws = append(ws, faultWorkload{fmt.Sprintf("opt1.3b-lora-ckpt/prefix-%d/marked", n), Config{}, WithMarks(TracePrefix(tr, n), 100), true})
		}
	}
	return ws
}

// TestFaultAtEveryDriverCall is SQLite's out-of-memory test for every driver call: for each kind
// of call and each position N over a workload, a run where the N-th call of that kind fails. The
// request that met the fault may fail (with the driver's error, nothing else); every operation is
// followed by Check and the accounting cross-check; the same request succeeds when retried; and
// after Close the driver holds nothing.
func TestFaultAtEveryDriverCall(t *testing.T) {
	var synthCalls [stitch.NumCallKinds]uint64 // over the synthetic workloads
	synthMet := map[string]int{}
	defer func() {
		// The synthetic workloads must keep reaching every kind of call and every path.
		for kind := range stitch.NumCallKinds {
			assert.NotZero(t, synthCalls[kind], "the synthetic workloads make no %s call", kind)
		}
		for _, path := range []string{"new", "alloc", "free", "empty-cache", "reset", "close"} {
			assert.NotZero(t, synthMet[path], "no fault was met during %s", path)
		}
	}()
	for _, w := range faultWorkloads(t) {
		t.Run(w.name, func(t *testing.T) {
			calls := cleanRunCalls(t, w)
			met := map[string]int{} // faults met, by where
			for kind := range stitch.NumCallKinds {
				if calls[kind] == 0 {
					continue
				}
				t.Run(kind.String(), func(t *testing.T) {
					where := map[string]int{}
					for n := 1; n <= int(calls[kind]); n++ {
						if at := runWithFault(t, w, kind, n); at != "" {
							where[at]++
							met[at]++
						}
					}
					t.Logf("%d faults, met during: %v", calls[kind], where)
				})
			}
			t.Logf("calls by kind %v; faults met during: %v", calls, met)
			if strings.HasPrefix(w.name, "stitch-heavy") {
				for kind := range stitch.NumCallKinds {
					synthCalls[kind] += calls[kind]
				}
				for path, n := range met {
					synthMet[path] += n
				}
			}
		})
	}
}

// cleanRunCalls runs w without faults and returns the driver calls it made, Close included.
func cleanRunCalls(t *testing.T, w faultWorkload) [stitch.NumCallKinds]uint64 {
	h, err := NewHarness(w.cfg)
	require.NoError(t, err)
	for i, op := range w.ops {
		require.NoError(t, h.Apply(op), "op %d: %s", i, op)
		require.NoError(t, h.Verify(), "op %d: %s", i, op)
	}
	require.NoError(t, h.Close())
	require.NoError(t, h.Leaks())
	return h.Driver.Calls()
}

// runWithFault runs w with the n-th call of kind failing and returns where the fault was met
// ("new", an op kind, or "close"; "" if it never fired).
func runWithFault(t *testing.T, w faultWorkload, kind stitch.CallKind, n int) string {
	t.Helper()
	cfg := w.cfg
	cfg.SimOptions = append(append([]sim.Option{}, cfg.SimOptions...), sim.WithFault(kind, n, nil))
	h, err := NewHarness(cfg)
	fired := func() bool { return h.Driver.Calls()[kind] >= uint64(n) }
	where := ""
	if err != nil {
		assert.ErrorIs(t, err, sim.ErrInjected, "%s #%d: New failed with something else", kind, n)
		tally.faults.Add(1)
		if err := h.Leaks(); err != nil {
			tally.leaks.Add(1)
			t.Errorf("%s #%d in New: %v", kind, n, err)
		}
		return "new"
	}
	for i, op := range w.ops {
		before := fired()
		err := h.Apply(op)
		if !before && fired() {
			where = op.Kind.String()
			tally.faults.Add(1)
		}
		if !fired() {
			// Until the fault fires the run is the clean run, verified op by op in cleanRunCalls.
			require.NoError(t, err, "%s #%d: op %d (%s) before the fault", kind, n, i, op)
			continue
		}
		if err != nil {
			if !assert.True(t, !before && fired() && errors.Is(err, sim.ErrInjected),
				"%s #%d: op %d (%s) failed with an error other than the injected fault: %v", kind, n, i, op, err) {
				tally.violations.Add(1)
				break
			}
			if !verified(t, h, "%s #%d: op %d (%s) after its failure", kind, n, i, op) {
				break
			}
			if w.markAfterFault {
				require.NoError(t, h.Apply(Op{Kind: OpMark}))
				if !verified(t, h, "%s #%d: op %d (%s): mark after its failure", kind, n, i, op) {
					break
				}
			}
			if op.Kind == OpReset {
				op = Op{Kind: OpEmptyCache} // Reset freed every block before the failing call
			}
			if !assert.NoError(t, h.Apply(op), "%s #%d: op %d (%s) retried", kind, n, i, op) {
				tally.violations.Add(1)
				break
			}
		}
		if !verified(t, h, "%s #%d: op %d (%s)", kind, n, i, op) {
			break
		}
	}
	before := fired()
	err = h.Close()
	if !before && fired() {
		where = "close"
		tally.faults.Add(1)
	}
	if err != nil {
		assert.True(t, !before && fired(), "%s #%d: Close failed without the fault: %v", kind, n, err)
		assert.ErrorIs(t, err, sim.ErrInjected, "%s #%d: Close", kind, n)
		// The engine's contract: what a failed Close could not give back, the next Close does (and
		// says ErrClosed when there was nothing left).
		if err := h.Engine.Close(); err != nil {
			assert.ErrorIs(t, err, stitch.ErrClosed, "%s #%d: second Close", kind, n)
		}
	}
	if err := h.Leaks(); err != nil {
		tally.leaks.Add(1)
		t.Errorf("%s #%d (met during %q): %v", kind, n, where, err)
	}
	return where
}

// verified runs h.Verify and counts the operation; a violation fails the test.
func verified(t *testing.T, h *Harness, format string, args ...any) bool {
	t.Helper()
	tally.ops.Add(1)
	if err := h.Verify(); err != nil {
		tally.violations.Add(1)
		t.Errorf("%s: %v", fmt.Sprintf(format, args...), err)
		return false
	}
	return true
}

// TestStitchFailureRollsBackWhole builds eight one-chunk holes in eight driver allocations, so that
// an eight-chunk request is stitched with one Reserve, eight Maps and one SetAccess. Each of those
// ten calls fails in turn: the request gets the driver's error, the driver holds exactly what it
// held before (no range, no mapping left from the half-built view), the engine's accounting is
// unchanged, and the same request then succeeds with a fresh stitch.
func TestStitchFailureRollsBackWhole(t *testing.T) {
	type step struct {
		kind stitch.CallKind
		n    int
	}
	steps := []step{{stitch.CallReserve, 1}, {stitch.CallSetAccess, 1}}
	for n := 1; n <= 8; n++ {
		steps = append(steps, step{stitch.CallMap, n})
	}
	for _, s := range steps {
		t.Run(fmt.Sprintf("%s-%d", s.kind, s.n), func(t *testing.T) {
			h, err := NewHarness(Config{Capacity: 64 * simG})
			require.NoError(t, err)
			for i := range int64(16) {
				require.NoError(t, h.Apply(Op{Kind: OpAlloc, ID: i, Size: simG}))
			}
			for i := int64(0); i < 16; i += 2 {
				require.NoError(t, h.Apply(Op{Kind: OpFree, ID: i}))
			}
			// Flush the cached holes into the free set first, so that "before" and "after" compare
			// the same engine state.
			require.NoError(t, h.Apply(Op{Kind: OpAlloc, ID: 99, Size: simG / 2}))
			require.NoError(t, h.Apply(Op{Kind: OpFree, ID: 99}))
			driverBefore, statsBefore, mapsBefore := h.Driver.Live(), h.Engine.Stats(), h.Driver.Calls()[stitch.CallMap]

			h.Driver.FailNth(s.kind, s.n, nil)
			err = h.Apply(Op{Kind: OpAlloc, ID: 100, Size: 8 * simG})
			require.ErrorIs(t, err, sim.ErrInjected)
			tally.faults.Add(1)
			assert.Equal(t, driverBefore, h.Driver.Live(), "the half-built view is gone")
			statsAfter := h.Engine.Stats()
			assert.Equal(t, statsBefore.ReservedBytes, statsAfter.ReservedBytes)
			assert.Equal(t, statsBefore.VirtualBytes, statsAfter.VirtualBytes)
			assert.Equal(t, statsBefore.StitchedBlocks, statsAfter.StitchedBlocks)
			assert.Equal(t, statsBefore.LiveBytes, statsAfter.LiveBytes)
			assert.True(t, verified(t, h, "after the failed stitch"))

			mapsFailed := h.Driver.Calls()[stitch.CallMap] - mapsBefore
			require.NoError(t, h.Apply(Op{Kind: OpAlloc, ID: 100, Size: 8 * simG}), "the retry succeeds")
			assert.True(t, verified(t, h, "after the retry"))
			assert.Equal(t, uint64(8), h.Driver.Calls()[stitch.CallMap]-mapsBefore-mapsFailed, "the retry stitched eight pieces")
			assert.Equal(t, 1, h.Engine.Stats().StitchedBlocks)
			require.NoError(t, h.Close())
			assert.NoError(t, h.Leaks())
		})
	}
}

// untilReset is ops up to its first Reset.
func untilReset(ops []Op) []Op {
	for i, op := range ops {
		if op.Kind == OpReset {
			return ops[:i]
		}
	}
	return ops
}
