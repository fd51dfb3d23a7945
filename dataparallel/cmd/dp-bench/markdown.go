package main

import (
	"fmt"
	"strings"

	"github.com/gmlake/gmlake/internal/units"
)

// markdown is one line per (world size, allocator): the worst GPU's figures and the step times.
func markdown(c *cli, results []Result) string {
	var b strings.Builder
	mode := "full"
	if c.LoRA {
		mode = "LoRA r=16"
	}
	fmt.Fprintf(&b, "# Data-parallel fine-tuning on several GPUs (dp-bench)\n\n%s, %s, recompute %t, micro-batch %d per GPU, "+
		"sequence lengths drawn per rank and step in [%d, %d], %d steps, ZeRO-2 over NCCL (NVLS off). "+
		"Per GPU: the worst rank's figures.\n\n", c.Preset, mode, c.Recompute, c.MicroBatch, c.SeqMin, c.SeqMax, c.Steps)
	b.WriteString("| GPUs | allocator | peak active (GiB) | peak reserved (GiB) | fragmentation | driver calls | steady step (ms) | warm-up (ms) | error |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		var active, reserved, calls uint64
		frag := 0.0
		for _, m := range r.Ranks {
			active, reserved = max(active, m.PeakActive), max(reserved, m.PeakReserved)
			frag, calls = max(frag, m.Fragmentation), max(calls, m.DriverCalls)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %.3f | %d | %.1f | %.0f | %s |\n", r.World, r.Allocator, units.FormatGiB(active),
			units.FormatGiB(reserved), frag, calls, r.SteadyMs, r.WarmupMs, r.Error)
	}
	return b.String()
}
