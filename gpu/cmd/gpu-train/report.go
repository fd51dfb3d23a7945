package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/gmlake/gmlake/gpu/internal/traincmd"
)

// markdown renders the results as the table of results/gpu-train/RESULTS.md.
func (c *cli) markdown(device string, results []*result) string {
	var b strings.Builder
	mode := "LoRA r16 (" + strings.Join(c.LoRA, ", ") + ")"
	if c.Recompute {
		mode += " + recomputation"
	}
	if c.Offload {
		mode += " + offload"
	}
	fmt.Fprintf(&b, "%s, %s, float32, batch %d, sequence lengths %v varied per step, %d steps (the first %d are warm-up), capacity %.0f GiB; %s\n\n",
		device, mode, c.Batch, c.Seqs, c.Steps, len(c.Seqs), gib(uint64(c.Capacity)), time.Now().UTC().Format("2006-01-02"))
	if c.Rounds > 1 {
		fmt.Fprintf(&b, "Each allocator ran %d times, in alternating order (A B, B A, ...); the step time is the mean over those runs, the warm-up the least (the process's first run also pays one-time library costs), the batch search and loss are the first run's.\n\n", c.Rounds)
	}
	b.WriteString("| model | allocator | steady step (ms) | vs best | in the allocator (ms/step) | warm-up (ms) | peak reserved (GiB) | peak live (GiB) | fragmentation | driver calls/step | warm-up calls | largest batch | loss first → last |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	best := map[string]float64{}
	for _, r := range results {
		if r.Error == "" && r.StepMs > 0 && (best[r.Model] == 0 || r.StepMs < best[r.Model]) {
			best[r.Model] = r.StepMs
		}
	}
	for _, r := range results {
		if r.Error != "" && r.StepMs == 0 {
			fmt.Fprintf(&b, "| %s | %s | failed: %s ||||||||||\n", r.Model, r.Allocator, r.Error)
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %.1f | %+.1f%% | %.2f | %.0f | %.2f | %.2f | %.1f%% | %.1f | %d | %s | %.3f → %.3f |\n",
			r.Model, r.Allocator, r.StepMs, 100*(r.StepMs/best[r.Model]-1), r.AllocatorMsPerStep, r.WarmupMs, gib(r.PeakReserved),
			gib(r.PeakLive), 100*r.Fragmentation, r.CallsPerStep, r.WarmupCalls, traincmd.BatchCell(r.MaxBatch, r.FailedBatch), r.FirstLoss, r.LastLoss)
	}
	b.WriteString("\n")
	for _, model := range c.Models {
		var gm, gg *result
		for _, r := range results {
			if r.Model == model && r.Allocator == "gmlake" {
				gm = r
			}
			if r.Model == model && r.Allocator == "gorgonia" {
				gg = r
			}
		}
		if gm != nil && gg != nil && gm.MaxBatch > 0 && gg.MaxBatch > 0 {
			fmt.Fprintf(&b, "%s: gmlake's largest batch is %.2f× the Gorgonia pool's; its steady step is %+.1f%% against the best allocator.\n",
				model, float64(gm.MaxBatch)/float64(gg.MaxBatch), 100*(gm.StepMs/best[model]-1))
		}
	}
	return b.String()
}
