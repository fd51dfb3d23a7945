package main

import (
	"fmt"
	"io"

	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/gpu/internal/traincmd"
)

// stepper times one run's step sequence a step at a time, so that runs can train alone (timed) or
// take their steps in turn (--interleave): the times and driver calls in a traincmd.StepLog, and
// beside them the device's allocations and the convolution workspaces of the steady steps.
type stepper struct {
	ru    *run
	r     *result
	steps *traincmd.StepLog

	allocsAtSteady uint64 // the device's allocations when the steady steps began
	wsAtSteady     int    // and the workspaces
}

func (ru *run) stepper(r *result) *stepper {
	ru.dev.ResetPeak()
	return &stepper{ru: ru, r: r, steps: traincmd.NewStepLog(ru.pool, ru.clock, len(ru.c.Sizes))}
}

// step trains step s of the sequence, at size × size, and times it.
func (st *stepper) step(s, size int) error {
	ru := st.ru
	if _, err := ru.batch(ru.c.Batch, size); err != nil {
		return err
	}
	if s == len(ru.c.Sizes) {
		st.allocsAtSteady = ru.dev.MemoryStats().Allocs
		st.wsAtSteady, _ = ru.workspaces()
	}
	if err := st.steps.Step(s, func() (float32, error) { return ru.step(ru.c.Batch, size) }); err != nil {
		return fmt.Errorf("step %d (batch %d, %d×%d): %w", s, ru.c.Batch, size, size, err)
	}
	return nil
}

// finish fills the result's figures once the last step is taken, and logs them.
func (st *stepper) finish(log io.Writer) {
	ru, r, l := st.ru, st.r, st.steps
	n := float64(len(l.Steady))
	r.FirstStepMs, r.WarmupMs, r.FirstLoss, r.LastLoss = l.FirstMs, l.WarmupMs, l.FirstLoss, l.LastLoss
	r.StepMs, r.StepMsMin, r.SteadyMs = l.MeanMs(), l.MinMs(), l.Steady
	r.WarmupCalls, r.StepCalls, r.CallsPerStep, r.CallsByKind = l.WarmupCalls, l.StepCalls, l.CallsPerStep(), l.CallsByKind()
	r.AllocatorMsPerStep, r.AllocatorNsPerCall = l.AllocatorTime()
	r.AllocsPerStep = float64(ru.dev.MemoryStats().Allocs-st.allocsAtSteady) / n
	ws, wsMax := ru.workspaces()
	r.WorkspacesPerStep, r.WorkspaceMaxBytes = float64(ws-st.wsAtSteady)/n, wsMax
	r.PeakLive, r.PeakReserved = ru.dev.MemoryStats().PeakLiveBytes, ru.pool.PeakReserved()
	r.Fragmentation = bench.Fragmentation(r.PeakLive, r.PeakReserved)
	fmt.Fprintf(log, "%s/%s: warm-up %.0f ms, steady %.1f ms/step (min %.1f), peak reserved %.2f GiB (live %.2f GiB), %.2f ms/step in the allocator (%.0f ns per call), %.1f calls/step, %.0f allocs/step of which %.0f workspaces (largest %.1f MiB), loss %.3f -> %.3f\n",
		r.Model, r.Allocator, r.WarmupMs, r.StepMs, r.StepMsMin, gib(r.PeakReserved), gib(r.PeakLive), r.AllocatorMsPerStep, r.AllocatorNsPerCall, r.CallsPerStep,
		r.AllocsPerStep, r.WorkspacesPerStep, float64(r.WorkspaceMaxBytes)/(1<<20), r.FirstLoss, r.LastLoss)
}
