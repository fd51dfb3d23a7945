package bench

import (
	"errors"
	"fmt"
	"time"

	"github.com/gmlake/gmlake/trace"
)

// Convergence is how an allocator settles when a trace's iterations repeat
// (trace.RepeatIterations), as the same shapes do in a long training run: an allocator that has
// converged makes no driver call in a repetition. It is part of the Report, its fields at the
// report's top level in JSON.
type Convergence struct {
	Repetitions int `json:"repetitions"`
	// Driver calls in each repetition (the setup's are in none of them).
	RepetitionDriverCalls []uint64 `json:"repetition_driver_calls"`
	// Driver calls per iteration in the last repetition, in all and of each kind (for allocators
	// that count kinds, gmlake; kinds with none are left out).
	ConvergedCallsPerIter float64            `json:"converged_calls_per_iter"`
	ConvergedCallsByKind  map[string]float64 `json:"converged_calls_by_kind,omitempty"`
	// Estimated device time of the driver calls per iteration in the last repetition, in
	// milliseconds, for allocators that keep a DriverLedger (see Report).
	ConvergedDriverMsPerIter *float64 `json:"converged_driver_ms_per_iter,omitempty"`
	// The number of repetitions before the first that made no driver call at all; nil (null) when
	// every repetition made some.
	ConvergedAfter *int `json:"converged_after"`
	// Peaks of the repeated replay (uncapped). Its peak active may exceed the trace's: resident
	// allocations that the trace makes during iteration 0 are live through every later repetition's
	// iteration 0.
	RepetitionPeakActive   uint64 `json:"repetition_peak_active"`
	RepetitionPeakReserved uint64 `json:"repetition_peak_reserved"`
}

// MeasureConvergence replays p's iterations times times in a row (trace.RepeatIterations) through a
// fresh, uncapped instance of spec.
func MeasureConvergence(p *Prepared, spec Spec, times int) (*Convergence, error) {
	rep, err := trace.RepeatIterations(p.Trace, times)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Name, err)
	}
	rp, err := Prepare(p.Name, rep.Trace)
	if err != nil {
		return nil, err
	}
	a, err := spec.New(0)
	if err != nil {
		return nil, fmt.Errorf("%s: new %s: %w", p.Name, spec.Name, err)
	}
	lastFrom := int(int64(rep.Times-1) * rep.IterStride) // the first iteration number of the last repetition
	run, err := replay(rp, a, 0, lastFrom)
	if err = errors.Join(err, a.Close()); err != nil {
		return nil, err
	}
	if run.OOM != nil {
		return nil, fmt.Errorf("%s: %s ran out of memory without a limit in repetition: %s", p.Name, spec.Name, run.OOM.Message)
	}
	return convergenceOf(rep, run), nil
}

// convergenceOf sums the run's calls by repetition.
func convergenceOf(rep *trace.Repetition, run *Run) *Convergence {
	c := &Convergence{Repetitions: rep.Times, RepetitionDriverCalls: make([]uint64, rep.Times),
		RepetitionPeakActive: run.PeakActive, RepetitionPeakReserved: run.PeakReserved,
		ConvergedCallsByKind: run.SteadyCallsByKind}
	for it, calls := range run.IterCalls {
		c.RepetitionDriverCalls[rep.RepetitionOf(it)] += calls
	}
	for r, calls := range c.RepetitionDriverCalls {
		if calls == 0 {
			c.ConvergedAfter = &r
			break
		}
	}
	c.ConvergedCallsPerIter = float64(c.RepetitionDriverCalls[rep.Times-1]) / float64(max(rep.Iterations, 1))
	if run.Timed {
		var last time.Duration
		for it, t := range run.IterTime {
			if rep.RepetitionOf(it) == rep.Times-1 {
				last += t
			}
		}
		c.ConvergedDriverMsPerIter = msMean(last, max(rep.Iterations, 1))
	}
	return c
}
