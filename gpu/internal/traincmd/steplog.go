package traincmd

import (
	"slices"
	"time"

	"github.com/gmlake/gmlake/gpu/pool"
)

// StepLog is what a training command records of a run's steps: each step's wall time and the pool's
// driver calls during it, the first step, the warm-up (the first pass over the shapes, its first
// Warm steps) and the steady steps after it, with the pool's counters taken when the steady steps
// begin, so that calls, calls by kind and time inside the allocator are reported per steady step.
type StepLog struct {
	warm  int
	pool  pool.Pool
	clock *AllocClock // nil: the time inside the allocator is not measured

	FirstMs, WarmupMs   float64   // the first step; the warm-up steps in total
	Steady              []float64 // each steady step's time (ms), in step order
	StepCalls           []uint64  // each step's driver calls, warm-up included
	WarmupCalls         uint64    // the pool's driver calls before the first steady step, setup included
	FirstLoss, LastLoss float32

	atSteady struct { // the counters when the first steady step began
		calls      uint64
		kinds      map[string]uint64
		spent      time.Duration
		clockCalls uint64
	}
}

// callsByKind is a pool that counts its driver calls by kind (gmlake).
type callsByKind interface{ CallsByKind() map[string]uint64 }

// NewStepLog records the steps of a run on p, whose first warm steps are the warm-up; clock, when
// not nil, is the AllocClock the run's requests pass through.
func NewStepLog(p pool.Pool, clock *AllocClock, warm int) *StepLog {
	return &StepLog{warm: warm, pool: p, clock: clock}
}

// Step runs step s (steps are numbered from 0, in order) through run, which returns its loss, and
// records it. A failed step is not recorded.
func (l *StepLog) Step(s int, run func() (float32, error)) error {
	if s == l.warm {
		l.beginSteady()
	}
	start, callsBefore := time.Now(), l.pool.DriverCalls()
	loss, err := run()
	if err != nil {
		return err
	}
	ms := float64(time.Since(start).Microseconds()) / 1000
	l.StepCalls = append(l.StepCalls, l.pool.DriverCalls()-callsBefore)
	switch {
	case s == 0:
		l.FirstMs, l.FirstLoss = ms, loss
		l.WarmupMs += ms
	case s < l.warm:
		l.WarmupMs += ms
	default:
		l.Steady = append(l.Steady, ms)
	}
	l.LastLoss = loss
	return nil
}

func (l *StepLog) beginSteady() {
	a := &l.atSteady
	a.calls = l.pool.DriverCalls()
	l.WarmupCalls = a.calls
	if k, ok := l.pool.(callsByKind); ok {
		a.kinds = k.CallsByKind()
	}
	if l.clock != nil {
		a.spent, a.clockCalls = l.clock.Spent()
	}
}

// MeanMs and MinMs are the mean and the shortest steady step; 0 before any.
func (l *StepLog) MeanMs() float64 {
	if len(l.Steady) == 0 {
		return 0
	}
	var sum float64
	for _, ms := range l.Steady {
		sum += ms
	}
	return sum / float64(len(l.Steady))
}

func (l *StepLog) MinMs() float64 {
	if len(l.Steady) == 0 {
		return 0
	}
	return slices.Min(l.Steady)
}

// CallsPerStep is the pool's driver calls per steady step; 0 before any.
func (l *StepLog) CallsPerStep() float64 {
	if len(l.Steady) == 0 {
		return 0
	}
	return float64(l.pool.DriverCalls()-l.atSteady.calls) / float64(len(l.Steady))
}

// CallsByKind is the pool's driver calls (and gmlake's requests by outcome) per steady step, by
// kind; nil for a pool that does not count them, or before any steady step.
func (l *StepLog) CallsByKind() map[string]float64 {
	k, ok := l.pool.(callsByKind)
	if !ok || len(l.Steady) == 0 {
		return nil
	}
	out := map[string]float64{}
	for kind, n := range k.CallsByKind() {
		out[kind] = float64(n-l.atSteady.kinds[kind]) / float64(len(l.Steady))
	}
	return out
}

// AllocatorTime is the wall time inside the allocator per steady step (ms) and per Alloc or Free
// in them (ns); zeros without a clock or before any steady step.
func (l *StepLog) AllocatorTime() (msPerStep, nsPerCall float64) {
	if l.clock == nil || len(l.Steady) == 0 {
		return 0, 0
	}
	spent, calls := l.clock.Spent()
	spent -= l.atSteady.spent
	msPerStep = float64(spent.Microseconds()) / 1000 / float64(len(l.Steady))
	if calls > l.atSteady.clockCalls {
		nsPerCall = float64(spent.Nanoseconds()) / float64(calls-l.atSteady.clockCalls)
	}
	return msPerStep, nsPerCall
}
