package main

import (
	"fmt"
	"strings"

	"github.com/gmlake/gmlake/internal/units"
)

// markdown is one line per (ZeRO stage, world size, allocator): the worst GPU's figures, the step
// times and the steady step against the Gorgonia pool's of the same stage and world size.
func markdown(c *cli, results []Result) string {
	var b strings.Builder
	mode := "full"
	if c.LoRA {
		mode = "LoRA r=16"
	}
	fmt.Fprintf(&b, "# Data-parallel fine-tuning on several GPUs (dp-bench)\n\n%s, %s, recompute %t, micro-batch %d per GPU, "+
		"sequence lengths drawn per rank and step in [%d, %d], %d steps, ZeRO over NCCL (NVLS off). "+
		"Per GPU: the worst rank's figures. reserved/active = peak reserved / peak active "+
		"(the capacity the run needed over what it used); calls/step = allocator driver calls per steady step "+
		"(steps 3 on); vs pool = steady step / the Gorgonia pool's.\n\n",
		c.Preset, mode, c.Recompute, c.MicroBatch, c.SeqMin, c.SeqMax, c.Steps)
	b.WriteString("| ZeRO | GPUs | allocator | peak active (GiB) | peak reserved (GiB) | reserved/active | fragmentation | driver calls | calls/step | steady step (ms) | vs pool | warm-up (ms) | error |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	pool := map[[2]int]float64{}
	for _, r := range results {
		if r.Allocator == "gorgonia" && r.Error == "" {
			pool[[2]int{r.Stage, r.World}] = r.SteadyMs
		}
	}
	for _, r := range results {
		var active, reserved, calls uint64
		frag := 0.0
		for _, m := range r.Ranks {
			active, reserved = max(active, m.PeakActive), max(reserved, m.PeakReserved)
			frag, calls = max(frag, m.Fragmentation), max(calls, m.DriverCalls)
		}
		ratio, vsPool := "", ""
		if active > 0 {
			ratio = fmt.Sprintf("%.3f", float64(reserved)/float64(active))
		}
		if p := pool[[2]int{r.Stage, r.World}]; p > 0 && r.SteadyMs > 0 {
			vsPool = fmt.Sprintf("%.3f", r.SteadyMs/p)
		}
		fmt.Fprintf(&b, "| %d | %d | %s | %s | %s | %s | %.3f | %d | %.1f | %.1f | %s | %.0f | %s |\n", r.Stage, r.World, r.Allocator,
			units.FormatGiB(active), units.FormatGiB(reserved), ratio, frag, calls, r.CallsPerStep, r.SteadyMs, vsPool, r.WarmupMs, r.Error)
	}
	return b.String()
}
