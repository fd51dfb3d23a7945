package main

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/gmlake/gmlake/bench"
)

// stepper times one run's step sequence a step at a time, so that runs can train alone (timed) or
// take their steps in turn (--interleave): the first pass over the sizes is the warm-up, the rest
// the steady steps, whose driver calls, allocations and workspaces it counts.
type stepper struct {
	ru     *run
	r      *result
	warm   int       // steps of the warm-up pass
	steady []float64 // each steady step's time (ms)

	callsAtSteady, allocsAtSteady uint64 // the pool's driver calls and the device's allocations when the steady steps began
	wsAtSteady                    int
	spentAtSteady                 time.Duration // time inside the allocator when the steady steps began
	allocatorCallsAtSteady        uint64
	byKind                        interface{ CallsByKind() map[string]uint64 } // the pool, when it counts calls by kind
	kindsAtSteady                 map[string]uint64
}

func (ru *run) stepper(r *result) *stepper {
	st := &stepper{ru: ru, r: r, warm: len(ru.c.Sizes)}
	st.byKind, _ = ru.pool.(interface{ CallsByKind() map[string]uint64 })
	ru.dev.ResetPeak()
	return st
}

// step trains step s of the sequence, at size × size, and times it.
func (st *stepper) step(s, size int) error {
	ru, r := st.ru, st.r
	if _, err := ru.batch(ru.c.Batch, size); err != nil {
		return err
	}
	if s == st.warm {
		st.callsAtSteady = ru.pool.DriverCalls()
		r.WarmupCalls = st.callsAtSteady
		st.allocsAtSteady = ru.dev.MemoryStats().Allocs
		st.wsAtSteady, _ = ru.workspaces()
		st.spentAtSteady, st.allocatorCallsAtSteady = ru.clock.Spent()
		if st.byKind != nil {
			st.kindsAtSteady = st.byKind.CallsByKind()
		}
	}
	start, callsBefore := time.Now(), ru.pool.DriverCalls()
	loss, err := ru.step(ru.c.Batch, size)
	if err != nil {
		return fmt.Errorf("step %d (batch %d, %d×%d): %w", s, ru.c.Batch, size, size, err)
	}
	r.StepCalls = append(r.StepCalls, ru.pool.DriverCalls()-callsBefore)
	ms := float64(time.Since(start).Microseconds()) / 1000
	switch {
	case s == 0:
		r.FirstStepMs, r.FirstLoss = ms, loss
		r.WarmupMs += ms
	case s < st.warm:
		r.WarmupMs += ms
	default:
		st.steady = append(st.steady, ms)
	}
	r.LastLoss = loss
	return nil
}

// finish fills the result's steady figures once the last step is taken, and logs them.
func (st *stepper) finish(log io.Writer) {
	ru, r := st.ru, st.r
	n := float64(len(st.steady))
	r.CallsPerStep = float64(ru.pool.DriverCalls()-st.callsAtSteady) / n
	r.AllocsPerStep = float64(ru.dev.MemoryStats().Allocs-st.allocsAtSteady) / n
	ws, wsMax := ru.workspaces()
	r.WorkspacesPerStep, r.WorkspaceMaxBytes = float64(ws-st.wsAtSteady)/n, wsMax
	if st.byKind != nil {
		r.CallsByKind = map[string]float64{}
		for k, v := range st.byKind.CallsByKind() {
			r.CallsByKind[k] = float64(v-st.kindsAtSteady[k]) / n
		}
	}
	spent, calls := ru.clock.Spent()
	spent -= st.spentAtSteady
	r.AllocatorMsPerStep = float64(spent.Microseconds()) / 1000 / n
	if calls > st.allocatorCallsAtSteady {
		r.AllocatorNsPerCall = float64(spent.Nanoseconds()) / float64(calls-st.allocatorCallsAtSteady)
	}
	var sum float64
	for _, ms := range st.steady {
		sum += ms
	}
	r.StepMs, r.StepMsMin, r.SteadyMs = sum/n, slices.Min(st.steady), st.steady
	r.PeakLive, r.PeakReserved = ru.dev.MemoryStats().PeakLiveBytes, ru.pool.PeakReserved()
	r.Fragmentation = bench.Fragmentation(r.PeakLive, r.PeakReserved)
	fmt.Fprintf(log, "%s/%s: warm-up %.0f ms, steady %.1f ms/step (min %.1f), peak reserved %.2f GiB (live %.2f GiB), %.2f ms/step in the allocator (%.0f ns per call), %.1f calls/step, %.0f allocs/step of which %.0f workspaces (largest %.1f MiB), loss %.3f -> %.3f\n",
		r.Model, r.Allocator, r.WarmupMs, r.StepMs, r.StepMsMin, gib(r.PeakReserved), gib(r.PeakLive), r.AllocatorMsPerStep, r.AllocatorNsPerCall, r.CallsPerStep,
		r.AllocsPerStep, r.WorkspacesPerStep, float64(r.WorkspaceMaxBytes)/(1<<20), r.FirstLoss, r.LastLoss)
}
