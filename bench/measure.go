package bench

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/gmlake/gmlake/internal/units"
)

// MeasureOptions says what Measure computes beyond the uncapped replay.
type MeasureOptions struct {
	MinCapacity bool   // bisect the smallest capacity that replays without out-of-memory
	Step        uint64 // bisection resolution in bytes; default 2 MiB
	// MaxProbes > 0 stops the bisection after this many halving replays (the upper bound found by
	// then is reported, marked not exact); 0 bisects to Step. A count, not a time, so that what is
	// reported does not depend on the machine's speed or load.
	MaxProbes int
	Capacity  uint64 // also replay under this capacity and report whether and where it ran out
	Series    int    // sample about this many points of active/reserved bytes for plots
	Repeat    int    // > 0: also measure Convergence over this many repetitions of the iterations
}

// SteadyFrom is the first iteration counted as steady state; iterations before it are warm-up.
const SteadyFrom = 3

// Report is what Measure finds for one (trace, allocator); it is also the JSON line the command
// prints. Optional figures are pointers, absent when not computed.
type Report struct {
	Trace     string `json:"trace"`
	Workload  string `json:"workload,omitempty"`
	Allocator string `json:"allocator"`
	Events    int    `json:"events"`
	Allocs    int    `json:"allocs"`

	// Uncapped replay. PeakActive is the peak of requested live bytes, the same denominator for
	// every allocator; Fragmentation = 1 - PeakActive/PeakReserved.
	PeakActive    uint64  `json:"peak_active"`
	PeakReserved  uint64  `json:"peak_reserved"`
	Fragmentation float64 `json:"fragmentation"`

	// Bisection (with MinCapacity). MinCapacityExact is false when MaxProbes stopped it before it
	// reached the step: then MinCapacity is an upper bound.
	MinCapacity        *uint64  `json:"min_capacity,omitempty"`
	CapacityOverActive *float64 `json:"capacity_over_active,omitempty"`
	MinCapacityExact   *bool    `json:"min_capacity_exact,omitempty"`
	// MinCapacityBinding: why the largest capacity below MinCapacity that was tried failed (the
	// out-of-memory there); see Bisection.Binding.
	MinCapacityBinding *OOMEvent `json:"min_capacity_binding,omitempty"`
	// MinCapacityFirstFit: the first bisection's answer, where a capacity above it then failed
	// (fitting not monotone in capacity: Bisection.FirstFit); absent where none did.
	MinCapacityFirstFit *uint64 `json:"min_capacity_first_fit,omitempty"`
	Replays             int     `json:"replays"`

	// Driver calls: before the first iteration, mean per warm-up iteration (0..SteadyFrom-1) and
	// per steady iteration (SteadyFrom on); absent when the trace has no such iterations.
	SetupDriverCalls         uint64   `json:"setup_driver_calls"`
	WarmupDriverCallsPerIter *float64 `json:"warmup_driver_calls_per_iter"`
	SteadyDriverCallsPerIter *float64 `json:"steady_driver_calls_per_iter"`
	// Calls in each iteration, in marker order.
	DriverCallsPerIter []uint64 `json:"driver_calls_per_iter,omitempty"`
	// Steady calls per iteration by kind, for allocators that count kinds (gmlake); kinds with
	// none are left out.
	SteadyCallsByKind map[string]float64 `json:"steady_calls_by_kind,omitempty"`
	// Novelty (IterationNeeds, from the trace alone): the numbers of the novel iterations, how many
	// steady iterations there are and how many of them are novel, and the mean steady calls per
	// iteration over the novel ones and over the others (repeat iterations); a mean is absent when
	// there are no such iterations.
	NovelIterations          []int    `json:"novel_iterations,omitempty"`
	SteadyIters              *int     `json:"steady_iters,omitempty"`
	SteadyNovelIters         *int     `json:"steady_novel_iters,omitempty"`
	SteadyNovelCallsPerIter  *float64 `json:"steady_novel_calls_per_iter,omitempty"`
	SteadyRepeatCallsPerIter *float64 `json:"steady_repeat_calls_per_iter,omitempty"`
	// Forcing (IterationNeeds.Forced, from the trace alone): the numbers of the iterations in which
	// every online allocator that meets the fragmentation target must call the driver, how many of
	// the steady iterations are forced, and the mean steady calls per iteration over the forced ones
	// and over the others (where a call is never unavoidable); a mean is absent when there are no
	// such iterations.
	ForcedIterations           []int    `json:"forced_iterations,omitempty"`
	SteadyForcedIters          *int     `json:"steady_forced_iters,omitempty"`
	SteadyForcedCallsPerIter   *float64 `json:"steady_forced_calls_per_iter,omitempty"`
	SteadyUnforcedCallsPerIter *float64 `json:"steady_unforced_calls_per_iter,omitempty"`
	// Estimated device time of the driver calls in milliseconds, for allocators that keep a
	// DriverLedger (every SimSpec allocator, at the H200's costs): before the first iteration, per
	// warm-up and per steady iteration, per steady iteration over novel, repeat, forced and unforced
	// iterations, and per steady iteration of each call kind (kinds that cost nothing left out).
	SetupDriverMs                 *float64           `json:"setup_driver_ms,omitempty"`
	WarmupDriverMsPerIter         *float64           `json:"warmup_driver_ms_per_iter,omitempty"`
	SteadyDriverMsPerIter         *float64           `json:"steady_driver_ms_per_iter,omitempty"`
	SteadyNovelDriverMsPerIter    *float64           `json:"steady_novel_driver_ms_per_iter,omitempty"`
	SteadyRepeatDriverMsPerIter   *float64           `json:"steady_repeat_driver_ms_per_iter,omitempty"`
	SteadyForcedDriverMsPerIter   *float64           `json:"steady_forced_driver_ms_per_iter,omitempty"`
	SteadyUnforcedDriverMsPerIter *float64           `json:"steady_unforced_driver_ms_per_iter,omitempty"`
	SteadyDriverMsByKind          map[string]float64 `json:"steady_driver_ms_by_kind,omitempty"`
	// The largest estimated driver time of any one iteration, in milliseconds: over the steady
	// iterations (SteadyFrom on) and over the warm-up ones (0..SteadyFrom-1), of the single
	// uncapped pass (no repetition); and the estimated time of each iteration, in marker order.
	SteadyDriverMsMax *float64  `json:"steady_driver_ms_max,omitempty"`
	WarmupDriverMsMax *float64  `json:"warmup_driver_ms_max,omitempty"`
	DriverMsPerIter   []float64 `json:"driver_ms_per_iter,omitempty"`
	// Physical handles the steady iterations' driver calls touched, per iteration (see CostModel:
	// the driver time is, to first order, these).
	SteadyHandlesPerIter *float64 `json:"steady_handles_per_iter,omitempty"`
	// The allocator's own CPU time (Run.IterCPU: the replay's wall time less the time inside
	// metered driver calls) per alloc+free pair over the steady iterations of the single pass, and
	// its time in each iteration in milliseconds, in marker order.
	SteadyNsPerPair *float64  `json:"steady_ns_per_pair,omitempty"`
	CPUMsPerIter    []float64 `json:"cpu_ms_per_iter,omitempty"`
	// Convergence under repetition (MeasureOptions.Repeat > 0); its fields are absent otherwise.
	*Convergence

	NsPerPair float64 `json:"ns_per_pair"` // wall time of the uncapped replay per alloc+free pair

	// Under Capacity (when set): whether the replay ran out, and where.
	Capacity uint64    `json:"capacity,omitempty"`
	OOM      bool      `json:"oom"`
	OOMAt    *OOMEvent `json:"oom_at,omitempty"`

	Error  string  `json:"error,omitempty"` // the allocator failed (not out-of-memory): what happened
	Series []Point `json:"-"`
}

// Measure replays p through fresh instances of spec: once without a limit, then as o asks. An
// allocator failure other than out-of-memory ends the measurement; it is returned and also
// recorded in the report's Error.
func Measure(p *Prepared, spec Spec, o MeasureOptions) (Report, error) {
	rep := Report{Trace: p.Name, Workload: p.Trace.Name, Allocator: spec.Name, Events: len(p.ops), Allocs: p.allocs}
	fail := func(err error) (Report, error) {
		rep.Error = err.Error()
		return rep, err
	}
	run, err := replayFresh(p, spec, 0, o.Series)
	rep.Replays++
	if err != nil {
		return fail(err)
	}
	if run.OOM != nil {
		return fail(fmt.Errorf("%s: %s ran out of memory without a limit: %s", p.Name, spec.Name, run.OOM.Message))
	}
	rep.setUncapped(p, run)
	if o.Capacity > 0 {
		rep.Capacity = o.Capacity
		capped, err := replayFresh(p, spec, o.Capacity, 0)
		rep.Replays++
		if err != nil {
			return fail(err)
		}
		rep.OOM, rep.OOMAt = capped.OOM != nil, capped.OOM
	}
	if o.Repeat > 0 && len(p.iterations()) > 0 { // a trace without markers has nothing to repeat
		if rep.Convergence, err = MeasureConvergence(p, spec, o.Repeat); err != nil {
			return fail(err)
		}
		rep.Replays++
	}
	if o.MinCapacity {
		b, err := MinCapacity(p, spec, run.PeakActive, run.PeakReserved, o.Step, o.MaxProbes)
		rep.Replays += b.Replays
		if err != nil {
			return fail(err)
		}
		ratio := float64(b.Capacity) / float64(max(run.PeakActive, 1))
		rep.MinCapacity, rep.CapacityOverActive, rep.MinCapacityExact = &b.Capacity, &ratio, &b.Exact
		rep.MinCapacityBinding = b.Binding
		if b.Rescans > 0 {
			rep.MinCapacityFirstFit = &b.FirstFit
		}
	}
	return rep, nil
}

// Fragmentation is the share of the peak reserved memory that the peak of live bytes left unused,
// 1 - peakActive/peakReserved (the paper's measure, as stitch.Stats.Fragmentation); 0 when nothing
// was reserved.
func Fragmentation(peakActive, peakReserved uint64) float64 {
	if peakReserved == 0 {
		return 0
	}
	return 1 - float64(peakActive)/float64(peakReserved)
}

// setUncapped fills the figures of the uncapped replay.
func (rep *Report) setUncapped(p *Prepared, run *Run) {
	rep.PeakActive, rep.PeakReserved, rep.Series = run.PeakActive, run.PeakReserved, run.Series
	rep.Fragmentation = Fragmentation(run.PeakActive, run.PeakReserved)
	rep.SetupDriverCalls, rep.SteadyCallsByKind = run.SetupCalls, run.SteadyCallsByKind
	rep.setNovelty(p, run)
	for _, it := range p.iterations() {
		rep.DriverCallsPerIter = append(rep.DriverCallsPerIter, run.IterCalls[it])
		rep.CPUMsPerIter = append(rep.CPUMsPerIter, float64(run.IterCPU[it])/float64(time.Millisecond))
	}
	if v, ok := run.NsPerPair(SteadyFrom, math.MaxInt); ok {
		rep.SteadyNsPerPair = &v
	}
	if v, ok := run.CallsPerIteration(0, SteadyFrom); ok {
		rep.WarmupDriverCallsPerIter = &v
	}
	if v, ok := run.CallsPerIteration(SteadyFrom, math.MaxInt); ok {
		rep.SteadyDriverCallsPerIter = &v
	}
	if run.Timed {
		rep.setDriverTime(run)
		for _, it := range p.iterations() {
			rep.DriverMsPerIter = append(rep.DriverMsPerIter, float64(run.IterTime[it])/float64(time.Millisecond))
		}
	}
	if run.Pairs > 0 {
		rep.NsPerPair = float64(run.Elapsed.Nanoseconds()) / float64(run.Pairs)
	}
}

// setDriverTime fills the estimated driver time figures that do not depend on novelty.
func (rep *Report) setDriverTime(run *Run) {
	rep.SetupDriverMs, rep.SteadyDriverMsByKind = msMean(run.SetupTime, 1), run.SteadyMsByKind
	if v, ok := run.MsPerIteration(0, SteadyFrom); ok {
		rep.WarmupDriverMsPerIter = &v
	}
	if v, ok := run.MsPerIteration(SteadyFrom, math.MaxInt); ok {
		rep.SteadyDriverMsPerIter = &v
		handles := run.SteadyHandles
		rep.SteadyHandlesPerIter = &handles
	}
	if v, ok := run.MsMax(0, SteadyFrom); ok {
		rep.WarmupDriverMsMax = &v
	}
	if v, ok := run.MsMax(SteadyFrom, math.MaxInt); ok {
		rep.SteadyDriverMsMax = &v
	}
}

// replayFresh replays p through a new instance of spec under capacity and closes it.
func replayFresh(p *Prepared, spec Spec, capacity uint64, series int) (*Run, error) {
	a, err := spec.New(capacity)
	if err != nil {
		return nil, fmt.Errorf("%s: new %s: %w", p.Name, spec.Name, err)
	}
	run, err := Replay(p, a, series)
	return run, errors.Join(err, a.Close())
}

// Bisection is the result of MinCapacity.
type Bisection struct {
	Capacity uint64 // smallest capacity found that replays without out-of-memory, as does every capacity tried above it
	Exact    bool   // false: the probe limit stopped a bisection and Capacity is only an upper bound
	Replays  int    // every replay: the bracketing ones, the halving probes, the scans above, and the one at the binding bound
	Probes   int    // halving replays between the brackets' ends
	// FirstFit is the first bisection's answer where a scan above it then found a capacity that
	// fails (Rescans > 0): fitting was not monotone in capacity there. Rescans counts the
	// bisections started again above such a failure.
	FirstFit uint64
	Rescans  int
	// Binding is the out-of-memory at the largest capacity tried below Capacity (one step below
	// when Exact): the request the allocator could not serve there and what its error said (for gmlake: free bytes, in how many pieces, the
	// largest, what stitching could reach).
	Binding *OOMEvent
}

// ErrNotMonotone is returned when no capacity up to 16 times the uncapped peak reserved replays.
var ErrNotMonotone = errors.New("bench: no capacity found that replays without out-of-memory")

// The scan above a bisected capacity (MinCapacity): scanPoints capacities spread evenly over
// 1/scanSpanShare of the peak active bytes above it, each replayed. The engine sizes its handles
// to the room its capacity leaves, so its layout, and what it strands, differs from one capacity
// to the next: on the gradient-accumulation GPT-2 trace (testdata/heldout) it fits at 1.0063 ×
// the peak and fails at 1.0102 and 1.0113 ×. A capacity that fits by the luck of its layout is
// not one a user can rely on; a scan bounds, without proving, how far above it the luck reaches.
const (
	scanPoints    = 16
	scanSpanShare = 50 // 2% of the peak active bytes
	maxRescans    = 64
)

// MinCapacity finds, to step bytes (default 2 MiB), the smallest capacity under which p replays
// through spec without running out of memory, and above which every capacity tried does too.
// Capacities are multiples of step. peakActive and peakReserved come from an uncapped replay: no
// allocator fits under peak active bytes, and one that behaves the same until it meets its limit
// fits in its uncapped peak reserved. It bisects, then replays scanPoints capacities over the
// next 1/scanSpanShare of peak active above the answer; if one fails, it bisects again between
// the highest failure and the next capacity that fits, and scans again, until a scan finds no
// failure. maxProbes > 0 bounds the halving replays of each bisection (then Capacity may be an
// upper bound, and Exact false); 0 halves until the bracket is one step wide, about
// log2((peakReserved - peakActive) / step) replays. Either way the result depends only on the
// trace, the allocator and the arguments, never on the clock.
func MinCapacity(p *Prepared, spec Spec, peakActive, peakReserved, step uint64, maxProbes int) (Bisection, error) {
	if step == 0 {
		step = 2 * units.MiB
	}
	var b Bisection
	failed := make(map[uint64]*OOMEvent)
	fits := func(capacity uint64) (bool, error) {
		b.Replays++
		run, err := replayFresh(p, spec, capacity, 0)
		if err != nil {
			return false, err
		}
		if run.OOM != nil {
			failed[capacity] = run.OOM
		}
		return run.OOM == nil, nil
	}
	lo := (max(peakActive, 1) - 1) / step * step // below peak active: never fits
	hi := units.RoundUp(max(peakReserved, peakActive, 1), step)
	for {
		ok, err := fits(hi)
		if err != nil {
			return b, err
		}
		if ok {
			break
		}
		if hi >= 16*units.RoundUp(max(peakReserved, 1), step) {
			return b, fmt.Errorf("%w: %s on %s, up to %s", ErrNotMonotone, spec.Name, p.Name, units.FormatBytes(hi))
		}
		lo, hi = hi, hi*2
	}
	b.Exact = true
	bisect := func() error { // narrows (lo, hi], lo failing and hi fitting
		for probes := 0; hi-lo > step; probes++ {
			if maxProbes > 0 && probes >= maxProbes {
				b.Exact = false
				return nil
			}
			b.Probes++
			mid := lo + (hi-lo)/2/step*step
			ok, err := fits(mid)
			if err != nil {
				return err
			}
			if ok {
				hi = mid
			} else {
				lo = mid
			}
		}
		return nil
	}
	if err := bisect(); err != nil {
		return b, err
	}
	first := hi
	span := max(step, max(peakActive, 1)/scanSpanShare)
	for b.Rescans < maxRescans {
		// The scan above hi: the highest capacity that fails, and the lowest above it that fits.
		var fail, fitAbove, last uint64
		for k := uint64(1); k <= scanPoints; k++ {
			c := hi + (span*k/scanPoints+step-1)/step*step
			if c == last {
				continue // a span of few steps: each capacity once
			}
			last = c
			ok, err := fits(c)
			if err != nil {
				return b, err
			}
			switch {
			case !ok:
				fail, fitAbove = c, 0
			case fail != 0 && fitAbove == 0:
				fitAbove = c
			}
		}
		if fail == 0 {
			break
		}
		for fitAbove == 0 { // the last capacity scanned failed: look further up for one that fits
			c := fail + (span+step-1)/step*step
			ok, err := fits(c)
			if err != nil {
				return b, err
			}
			if ok {
				fitAbove = c
			} else {
				fail = c
			}
		}
		b.Rescans++
		lo, hi = fail, fitAbove
		if err := bisect(); err != nil {
			return b, err
		}
	}
	if b.Rescans > 0 {
		b.FirstFit = first
	}
	if _, tried := failed[lo]; !tried && b.Exact && lo > 0 {
		// The bound below peak active was never replayed: once, to say where it fails.
		if _, err := fits(lo); err != nil {
			return b, err
		}
	}
	b.Capacity, b.Binding = hi, failed[lo]
	return b, nil
}
