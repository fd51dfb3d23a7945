package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/gmlake/gmlake/gpu/internal/traincmd"
)

// markdown renders the results as a table, the machine and date first.
func (c *cli) markdown(e *env, results []*result) string {
	var b strings.Builder
	math := "float32 (no TF32)"
	if c.TF32 {
		math = "float32 with TF32 convolutions"
	}
	fmt.Fprintf(&b, "%s, cuDNN %s, %s, batch %d, image sizes %v varied per step, %d steps (the first %d are warm-up), capacity %.0f GiB; %s\n\n",
		e.device, e.cudnnVersion(), math, c.Batch, c.Sizes, c.Steps, len(c.Sizes), gib(uint64(c.Capacity)),
		time.Now().UTC().Format("2006-01-02"))
	if c.Rounds > 1 {
		fmt.Fprintf(&b, "Each allocator ran %d times, in alternating order (A B, B A, ...); the step time is the mean over those runs, the warm-up the least (the process's first run also pays one-time library costs), the batch search and loss are the first run's.\n\n", c.Rounds)
	}
	if c.Interleave {
		b.WriteString("The allocators' runs were open side by side and took each step in turn (A B, then B A at the next step): \"paired\" compares steps taken milliseconds apart.\n\n")
	}
	b.WriteString("| model | allocator | steady step (ms) | vs best | paired vs fastest other | in the allocator (ms/step) | warm-up (ms) | peak reserved (GiB) | peak live (GiB) | fragmentation | driver calls/step | warm-up calls | allocs/step | workspaces/step (largest MiB) | largest batch | loss first → last |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	best := map[string]float64{}
	for _, r := range results {
		if r.Error == "" && r.StepMs > 0 && (best[r.Model] == 0 || r.StepMs < best[r.Model]) {
			best[r.Model] = r.StepMs
		}
	}
	for _, r := range results {
		if r.StepMs == 0 {
			fmt.Fprintf(&b, "| %s | %s | failed: %s ||||||||||||||\n", r.Model, r.Allocator, r.Error)
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %.1f | %+.1f%% | %s | %.2f | %.0f | %.2f | %.2f | %.1f%% | %.1f | %d | %.0f | %.0f (%.1f) | %s | %.3f → %.3f |\n",
			r.Model, r.Allocator, r.StepMs, 100*(r.StepMs/best[r.Model]-1), pairedCell(r, results), r.AllocatorMsPerStep, r.WarmupMs, gib(r.PeakReserved),
			gib(r.PeakLive), 100*r.Fragmentation, r.CallsPerStep, r.WarmupCalls, r.AllocsPerStep, r.WorkspacesPerStep,
			float64(r.WorkspaceMaxBytes)/(1<<20), traincmd.BatchCell(r.MaxBatch, r.FailedBatch), r.FirstLoss, r.LastLoss)
	}
	b.WriteString("\n")
	for _, r := range results {
		if r.Error != "" && r.StepMs > 0 {
			fmt.Fprintf(&b, "%s/%s: %s\n", r.Model, r.Allocator, r.Error)
		}
	}
	return b.String()
}

// pairedCell is r's steady steps against those of the fastest other allocator of its model (by
// mean step): the median ratio of the same step of the same round (traincmd.PairedRatio), and
// which allocator; "–" with fewer than two allocators.
func pairedCell(r *result, results []*result) string {
	var other *result
	for _, o := range results {
		if o != r && o.Model == r.Model && o.Error == "" && o.StepMs > 0 && (other == nil || o.StepMs < other.StepMs) {
			other = o
		}
	}
	if other == nil {
		return "–"
	}
	ratio, ok := traincmd.PairedRatio(r.RoundSteadyMs, other.RoundSteadyMs)
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%.3f × %s", ratio, other.Allocator)
}
