package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/internal/units"
)

// writeMarkdownFile writes the report that `make bench` commits as results/bench/RESULTS.md.
func writeMarkdownFile(path string, reports []bench.Report, anchors []bench.Anchor, steps map[string]float64, traces []string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := writeMarkdown(f, reports, anchors, steps, traces); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeMarkdown(w io.Writer, reports []bench.Report, anchors []bench.Anchor, steps map[string]float64, traces []string) error {
	host, _ := os.Hostname()
	var b strings.Builder
	repeat := repetitionsOf(reports)
	flags := "--min-capacity"
	if repeat > 0 {
		flags += fmt.Sprintf(" --repeat %d", repeat)
	}
	fmt.Fprintf(&b, "# Allocators on real training traces\n\n")
	fmt.Fprintf(&b, "Written by `make bench` (`gmlake-bench replay %s --markdown ...`) on %s, host %s (%s/%s, %d CPUs). ",
		flags, time.Now().UTC().Format("2006-01-02 15:04 MST"), host, runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	b.WriteString("Our allocators run on simulated devices (accounting only)")
	pytorchStep := "256 MiB"
	if len(anchors) > 0 {
		devices, step := bench.AnchorSource(anchors)
		pytorchStep = units.FormatBytes(step)
		if step%units.MiB == 0 {
			pytorchStep = fmt.Sprintf("%d MiB", step/units.MiB)
		}
		fmt.Fprintf(&b, "; the `pytorch-*` rows are PyTorch's own allocator measured on %s (`pytorch-anchors.jsonl`)", strings.Join(devices, ", "))
	}
	b.WriteString(".\n\n")
	b.WriteString("- **peak active**: peak of requested live bytes, the denominator for every one of our allocators. PyTorch's " +
		"rows use its own `active_bytes` (block sizes after rounding), so compare PyTorch to us in bytes, not ratios.\n")
	b.WriteString("- **fragmentation** = 1 - peak active / peak reserved, with no capacity limit. For `gorgonia` reserved " +
		"is the high-water mark of its fixed arena (the smallest arena that runs the trace identically).\n")
	b.WriteString("- **min capacity**: smallest capacity (bisected to 2 MiB; PyTorch's to " + pytorchStep + ") under which the whole trace " +
		"replays without out-of-memory, and above which 16 capacities over the next 2% of peak active replay too (ours; " +
		"fitting is not monotone in capacity for every allocator); **cap/active** = min capacity / peak active.\n")
	fmt.Fprintf(&b, "- **driver calls per iteration**: device calls between `i N` markers; warm-up = iterations 0-%d, "+
		"steady = iteration %d on. ns/pair: wall time of the uncapped replay per allocation+free, on this machine.\n",
		bench.SteadyFrom-1, bench.SteadyFrom)
	b.WriteString("- **novel** iterations (from the trace alone, the same for every allocator): an iteration is novel when its " +
		"peak of requested live bytes exceeds that of every earlier iteration and of the setup, or when it asks for a block " +
		"larger than any earlier request. With dynamic padding some steady iterations are novel, and then an allocator that " +
		"reserves little more than was ever live (<= 2% fragmentation) must call the driver: for more memory, or for a " +
		"block larger than any it holds (a new segment, or a new stitched range). **calls/iter novel / repeat** splits " +
		"steady calls per iteration between the novel iterations and the others (repeat iterations, every need of which " +
		"was met before: calls there are the allocator's own doing).\n")
	fmt.Fprintf(&b, "- **forced** iterations (from the trace alone; a lower bound that holds for every allocator, whatever its "+
		"policy): steady iteration k is forced when its peak of requested live bytes P_k exceeds P_prev / (1 - %[1]g), P_prev "+
		"being the highest peak before it (setup and earlier iterations). An allocator that makes no driver call in k holds "+
		"at least P_k bytes when k begins; on the trace cut just before k its fragmentation is then at least 1 - P_prev / P_k "+
		"> %[1]g. An online allocator cannot know whether the trace ends there, so every one that meets issue 3's target "+
		"(uncapped fragmentation <= %[1]g) on every trace must call the driver in a forced iteration. A forced iteration is "+
		"novel; a novel one need not be forced (a new peak within %[2]g%%, or only a larger block: those calls are a policy's "+
		"cost, not the trace's). **steady its** = forced / novel / all steady iterations; **calls/iter forced / unforced** "+
		"splits steady calls per iteration between the forced iterations and the others, in which no allocator is bound "+
		"to call the driver.\n", bench.FragmentationTarget, 100*bench.FragmentationTarget)
	fmt.Fprintf(&b, "- **driver ms/iter (H200 costs)**: estimated device time of the driver calls per steady iteration, at the "+
		"costs measured on the project's NVIDIA H200 (`bench.H200`). A VMM call costs per physical handle it touches, plus a "+
		"part per byte of each: cuMemCreate %s, cuMemMap %s, cuMemSetAccess %s and cuMemUnmap %s for each handle mapped in "+
		"the range they are given, cuMemRelease %s (least-squares fits to `../shared/GPU.md`'s per-handle table of "+
		"2026-12-01, handles of 2 MiB to 1 GiB, residuals within 12%% but for a 2 MiB map). Per call: cuMemAddressReserve "+
		"and cuMemAddressFree 17 µs; cuMemAlloc 0.25 ms up to 2 MiB and 0.13 ms from 2 GiB, linear in log2(size) between; "+
		"cuMemFree 0.6 ms. Events, synchronize and memory queries cost nothing here. The simulated devices take no time: "+
		"this is what the same calls would cost on the GPU; `gpu-replay` measures them there. **ms/iter novel / repeat** "+
		"splits it as the calls (`--json` also has forced / unforced, milliseconds by call kind, handles touched, and "+
		"every iteration's figure).\n", bench.H200.Create, bench.H200.Map, bench.H200.SetAccess, bench.H200.Unmap, bench.H200.Release)
	if repeat > 0 {
		fmt.Fprintf(&b, "- **converged**: the iterations (from the first `i` marker to the end) replayed %d times in a row "+
			"through a fresh allocator, the setup once, allocations the trace never frees (weights, optimizer state) made "+
			"in the first repetition only, as the same shapes recur in a long run. **converged calls/iter**: driver calls "+
			"per iteration in the last repetition; **converged after**: how many repetitions came before the first that "+
			"made no driver call at all (never: each made some).\n", repeat)
	}
	b.WriteString("\n")

	byTrace := map[string][]bench.Report{}
	for _, r := range reports {
		byTrace[r.Trace] = append(byTrace[r.Trace], r)
	}
	names := make([]string, 0, len(traces))
	for _, path := range traces {
		names = append(names, filepath.Base(path))
	}
	writeTargets(&b, names, byTrace, anchors, steps)
	writeSummary(&b, names, byTrace, anchors)
	writeDriverTime(&b, names, byTrace)
	writeDetail(&b, names, byTrace, anchors)
	writeBinding(&b, names, byTrace)
	if len(anchors) > 0 {
		writeCachingCheck(&b, names, byTrace, anchors)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func anchorsFor(trace string, anchors []bench.Anchor) []bench.Anchor {
	var out []bench.Anchor
	for _, a := range anchors {
		if bench.TraceStem(a.Trace) == bench.TraceStem(trace) {
			out = append(out, a)
		}
	}
	return out
}

func allocatorsOf(names []string, byTrace map[string][]bench.Report) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		for _, r := range byTrace[n] {
			if !seen[r.Allocator] {
				seen[r.Allocator] = true
				out = append(out, r.Allocator)
			}
		}
	}
	return out
}

// writeSummary: capacity / peak active, one row per trace. PyTorch's minimum capacities are divided
// by our peak active (requested bytes) too, so that every column has the same denominator.
func writeSummary(b *strings.Builder, names []string, byTrace map[string][]bench.Report, anchors []bench.Anchor) {
	allocs := allocatorsOf(names, byTrace)
	pytorch := []string{"pytorch-default", "pytorch-expandable"}
	b.WriteString("## Capacity needed / peak active\n\nEvery column divides by the same peak of requested live bytes")
	if len(anchors) == 0 {
		pytorch = nil
		b.WriteString(".\n\n| trace |")
	} else {
		b.WriteString(" (PyTorch's own ratio, over its `active_bytes`, is in the table below).\n\n| trace |")
	}
	for _, a := range append(slices.Clone(allocs), pytorch...) {
		fmt.Fprintf(b, " %s |", a)
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(allocs)+len(pytorch)) + "\n")
	for _, n := range names {
		fmt.Fprintf(b, "| %s |", n)
		var active uint64
		for _, a := range allocs {
			cell := "-"
			for _, r := range byTrace[n] {
				if r.Allocator == a {
					cell = mdRatio(r)
					active = max(active, r.PeakActive)
				}
			}
			fmt.Fprintf(b, " %s |", cell)
		}
		for _, kind := range pytorch {
			cell := "-"
			for _, a := range anchorsFor(n, anchors) {
				if a.Allocator == kind && active > 0 {
					cell = fmt.Sprintf("%.3f", float64(a.MinCapacity)/float64(active))
				}
			}
			fmt.Fprintf(b, " %s |", cell)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

func mdRatio(r bench.Report) string {
	switch {
	case r.Error != "":
		return "error"
	case r.CapacityOverActive == nil:
		return "-"
	case r.MinCapacityExact != nil && !*r.MinCapacityExact:
		return fmt.Sprintf("<=%.3f", *r.CapacityOverActive)
	}
	return fmt.Sprintf("%.3f", *r.CapacityOverActive)
}

// writeDriverTime: estimated driver milliseconds per steady iteration, one row per trace, beside
// how many steady iterations are forced and novel.
func writeDriverTime(b *strings.Builder, names []string, byTrace map[string][]bench.Report) {
	allocs := allocatorsOf(names, byTrace)
	b.WriteString("## Driver time per steady iteration (ms, estimated at the H200's costs)\n\n" +
		"Mean over the steady iterations; in brackets the mean over the forced iterations and over the others " +
		"(forced / unforced), where the trace has both and the mean is not 0.\n\n| trace | steady its forced / novel / all |")
	for _, a := range allocs {
		fmt.Fprintf(b, " %s |", a)
	}
	b.WriteString("\n|---|---:|" + strings.Repeat("---:|", len(allocs)) + "\n")
	for _, n := range names {
		its := "-"
		cells := make([]string, len(allocs))
		for i, a := range allocs {
			cells[i] = "-"
			for _, r := range byTrace[n] {
				if r.Allocator != a || r.Error != "" {
					continue
				}
				its, cells[i] = steadyIters(r), ms(r.SteadyDriverMsPerIter)
				if r.SteadyForcedDriverMsPerIter != nil && r.SteadyUnforcedDriverMsPerIter != nil &&
					r.SteadyDriverMsPerIter != nil && *r.SteadyDriverMsPerIter > 0 {
					cells[i] += fmt.Sprintf(" (%s / %s)", ms(r.SteadyForcedDriverMsPerIter), ms(r.SteadyUnforcedDriverMsPerIter))
				}
			}
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", n, its, strings.Join(cells, " | "))
	}
	b.WriteString("\n")
}

func writeDetail(b *strings.Builder, names []string, byTrace map[string][]bench.Report, anchors []bench.Anchor) {
	headers := []string{"trace", "allocator", "peak active (GiB)", "peak reserved (GiB)", "fragmentation",
		"min capacity (GiB)", "cap/active", "setup calls", "warm-up calls/iter", "steady calls/iter",
		"steady its forced / novel / all", "calls/iter forced / unforced", "calls/iter novel / repeat",
		"driver ms/iter (H200 costs)", "ms/iter novel / repeat"}
	repeat := repetitionsOf(flatten(names, byTrace)) > 0
	if repeat {
		headers = append(headers, "converged calls/iter", "converged after")
	}
	headers = append(headers, "ns/pair")
	b.WriteString("## Every figure\n\n")
	b.WriteString("| " + strings.Join(headers, " | ") + " |\n|---|---|" + strings.Repeat("---:|", len(headers)-2) + "\n")
	row := func(cells []string) {
		cells = append(cells, make([]string, len(headers)-len(cells))...)
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	for _, n := range names {
		for _, r := range byTrace[n] {
			if r.Error != "" {
				row([]string{n, r.Allocator, "error: " + strings.ReplaceAll(r.Error, "|", "/")})
				continue
			}
			minCap := "-"
			if r.MinCapacity != nil {
				minCap = units.FormatGiB(*r.MinCapacity)
			}
			cells := []string{n, r.Allocator, units.FormatGiB(r.PeakActive), units.FormatGiB(r.PeakReserved),
				fmt.Sprintf("%.3f", r.Fragmentation), minCap, mdRatio(r), fmt.Sprint(r.SetupDriverCalls),
				calls(r.WarmupDriverCallsPerIter), calls(r.SteadyDriverCallsPerIter), steadyIters(r),
				forcedCalls(r), novelCalls(r), ms(r.SteadyDriverMsPerIter), novelMs(r)}
			if repeat {
				cells = append(cells, convergedCalls(r), convergedAfter(r))
			}
			row(append(cells, fmt.Sprintf("%.0f", r.NsPerPair)))
		}
		for _, a := range anchorsFor(n, anchors) {
			row([]string{n, a.Allocator, units.FormatGiB(a.PeakActive), units.FormatGiB(a.PeakReserved),
				fmt.Sprintf("%.3f", a.Fragmentation), units.FormatGiB(a.MinCapacity), fmt.Sprintf("%.3f", a.CapacityOverActive)})
		}
	}
	b.WriteString("\n")
}

// repetitionsOf is the repetition count of the first report that measured convergence, 0 if none.
func repetitionsOf(reports []bench.Report) int {
	for _, r := range reports {
		if r.Convergence != nil {
			return r.Repetitions
		}
	}
	return 0
}

func flatten(names []string, byTrace map[string][]bench.Report) []bench.Report {
	var out []bench.Report
	for _, n := range names {
		out = append(out, byTrace[n]...)
	}
	return out
}

// writeCachingCheck compares our caching allocator with PyTorch default in bytes.
func writeCachingCheck(b *strings.Builder, names []string, byTrace map[string][]bench.Report, anchors []bench.Anchor) {
	b.WriteString("## `caching` against PyTorch default (same trace, bytes)\n\n")
	b.WriteString("| trace | peak reserved: ours / PyTorch | min capacity: ours / PyTorch |\n|---|---:|---:|\n")
	for _, n := range names {
		var ours *bench.Report
		for i, r := range byTrace[n] {
			if r.Allocator == "caching" && r.Error == "" {
				ours = &byTrace[n][i]
			}
		}
		var theirs *bench.Anchor
		for _, a := range anchorsFor(n, anchors) {
			if a.Allocator == "pytorch-default" {
				theirs = &a
			}
		}
		if ours == nil || theirs == nil {
			continue
		}
		minCap := "-"
		if ours.MinCapacity != nil {
			minCap = relative(*ours.MinCapacity, theirs.MinCapacity)
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", n, relative(ours.PeakReserved, theirs.PeakReserved), minCap)
	}
	b.WriteString("\nPyTorch's minimum capacity was bisected to 256 MiB, ours to 2 MiB.\n")
}

func relative(ours, theirs uint64) string {
	return fmt.Sprintf("%s / %s (%+.1f%%)", units.FormatGiB(ours), units.FormatGiB(theirs), 100*(float64(ours)/float64(theirs)-1))
}

// writeBinding says, for each trace, what gmlake could not serve one bisection step below its
// minimum capacity: what limits it.
func writeBinding(b *strings.Builder, names []string, byTrace map[string][]bench.Report) {
	var rows []string
	for _, n := range names {
		for _, r := range byTrace[n] {
			if r.Allocator != "gmlake" || r.MinCapacityBinding == nil {
				continue
			}
			o := r.MinCapacityBinding
			rows = append(rows, fmt.Sprintf("| %s | %s | %d | %s | %s |", n, units.FormatBytes(o.Requested), o.Iteration,
				units.FormatBytes(o.Active), bindingCause(o.Message)))
		}
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("## What limits gmlake: the request that fails one step below its minimum capacity\n\n" +
		"Replayed under (min capacity - 2 MiB): the first request gmlake cannot serve, the iteration, the bytes live " +
		"then, and what was free (free bytes, in how many pieces, the largest piece, and the most a stitch of the free " +
		"pieces could reach: a stitched range maps whole chunks, so a free piece inside one chunk, or the partial chunks " +
		"at the ends of a middle piece, cannot join one).\n\n" +
		"| trace | request | iteration | live then | free then |\n|---|---:|---:|---:|---|\n")
	b.WriteString(strings.Join(rows, "\n") + "\n\n")
}

// bindingCause is the part of an engine out-of-memory message that describes the free memory, or
// the whole message when it has another form.
func bindingCause(msg string) string {
	_, rest, ok := strings.Cut(msg, "rounded); ")
	if !ok {
		return msg
	}
	cause, _, _ := strings.Cut(rest, "; ")
	var free, pieces, largest, reach uint64
	if n, _ := fmt.Sscanf(cause, "%d bytes free in %d pieces, largest %d, stitching reaches %d",
		&free, &pieces, &largest, &reach); n == 4 {
		return fmt.Sprintf("%s in %d pieces (largest %s); a stitch reaches %s", units.FormatBytes(free), pieces,
			units.FormatBytes(largest), units.FormatBytes(reach))
	}
	return cause
}

// The targets each gmlake variant is judged by, per trace: driver time against PyTorch's step,
// CPU time against the Gorgonia pool's in the same run, capacity against PyTorch's expandable
// segments.
const (
	targetSteadyOfStep = 0.01 // steady_driver_ms_max <= 1% of the step
	targetWarmupOfStep = 0.10 // warmup_driver_ms_max <= 10% of the step
	targetNsOfPool     = 1.5  // steady_ns_per_pair <= 1.5 x gorgonia's
	targetCapacity     = 1.01 // capacity / peak active <= min(1.01, PyTorch expandable's)
)

// writeTargets: one row per (trace, gmlake variant), each figure against its target. Every figure
// but ns/pair is deterministic; ns/pair is wall time, in its own column.
func writeTargets(b *strings.Builder, names []string, byTrace map[string][]bench.Report, anchors []bench.Anchor,
	steps map[string]float64) {
	fmt.Fprintf(b, "## Targets\n\nPer trace and gmlake variant, from this run: **steady** = the largest estimated driver time "+
		"of any steady iteration (iterations %[1]d on, single pass, no repetition) against %[2]g%% of PyTorch's training "+
		"step on the H200 (`pytorch-steps.jsonl`); **warm-up** = the same over iterations 0-%[3]d against %[4]g%%; "+
		"**capacity** = min capacity / peak active against min(%[5]g, PyTorch expandable segments' min capacity over the "+
		"same peak active); **converged** = driver calls per iteration in the last repetition against 0; **met** counts "+
		"those four. **ns/pair** (wall time on this machine, so not in **met**): the engine's own CPU time per "+
		"alloc+free pair in the steady iterations of the single pass (time inside the simulated driver taken out) "+
		"against %[6]g x the Gorgonia pool's in the same run. A trace without a recorded step has no driver-time "+
		"target.\n\n", bench.SteadyFrom, 100*targetSteadyOfStep, bench.SteadyFrom-1, 100*targetWarmupOfStep,
		targetCapacity, targetNsOfPool)
	b.WriteString("| trace | allocator | PyTorch step (ms) | steady (ms) | warm-up (ms) | capacity | converged | met | ns/pair |\n" +
		"|---|---|---:|---:|---:|---:|---:|---|---:|\n")
	for _, n := range names {
		var pool *bench.Report
		var active uint64
		for i, r := range byTrace[n] {
			if r.Allocator == "gorgonia" && r.Error == "" {
				pool = &byTrace[n][i]
			}
			active = max(active, r.PeakActive)
		}
		capTarget, capFrom := targetCapacity, ""
		for _, a := range anchorsFor(n, anchors) {
			if a.Allocator == "pytorch-expandable" && active > 0 {
				if v := float64(a.MinCapacity) / float64(active); v < capTarget {
					capTarget, capFrom = v, " (expandable)"
				}
			}
		}
		step, hasStep := steps[bench.TraceStem(n)]
		for _, r := range byTrace[n] {
			if !strings.HasPrefix(r.Allocator, "gmlake") {
				continue
			}
			if r.Error != "" {
				fmt.Fprintf(b, "| %s | %s | error: %s |||||||\n", n, r.Allocator, strings.ReplaceAll(r.Error, "|", "/"))
				continue
			}
			var checks []targetCheck
			stepCell := "-"
			if hasStep {
				stepCell = fmt.Sprintf("%.1f", 1000*step)
			}
			checks = append(checks, msCheck("steady", r.SteadyDriverMsMax, 1000*step*targetSteadyOfStep, hasStep),
				msCheck("warm-up", r.WarmupDriverMsMax, 1000*step*targetWarmupOfStep, hasStep))
			capCheck := targetCheck{name: "capacity", cell: "-"}
			if r.CapacityOverActive != nil {
				capCheck.applies, capCheck.met = true, *r.CapacityOverActive <= capTarget
				capCheck.cell = fmt.Sprintf("%.4f %s %.4f%s", *r.CapacityOverActive, verdict(capCheck.met, "<=", ">"), capTarget, capFrom)
				if !capCheck.met {
					capCheck.cell = "**" + capCheck.cell + "**"
				}
			}
			convCheck := targetCheck{name: "converged", cell: "-"}
			if r.Convergence != nil {
				convCheck.applies, convCheck.met = true, r.ConvergedCallsPerIter == 0
				convCheck.cell = fmt.Sprintf("%.1f", r.ConvergedCallsPerIter)
				if !convCheck.met {
					convCheck.cell = "**" + convCheck.cell + "**"
				}
			}
			checks = append(checks, capCheck, convCheck)
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", n, r.Allocator, stepCell, checks[0].cell,
				checks[1].cell, checks[2].cell, checks[3].cell, metCell(checks), nsCell(r, pool))
		}
	}
	b.WriteString("\n")
}

// targetCheck is one figure against its target.
type targetCheck struct {
	name         string
	applies, met bool
	cell         string
}

func msCheck(name string, v *float64, limit float64, hasLimit bool) targetCheck {
	c := targetCheck{name: name, cell: ms(v)}
	if v == nil || !hasLimit {
		return c
	}
	c.applies, c.met = true, *v <= limit
	c.cell = fmt.Sprintf("%s %s %s", ms(v), verdict(c.met, "<=", ">"), ms(&limit))
	if !c.met {
		c.cell = "**" + c.cell + "**"
	}
	return c
}

func verdict(met bool, yes, no string) string {
	if met {
		return yes
	}
	return no
}

// metCell is "N of M", with the names of the targets missed.
func metCell(checks []targetCheck) string {
	var n, of int
	var missed []string
	for _, c := range checks {
		if !c.applies {
			continue
		}
		of++
		if c.met {
			n++
		} else {
			missed = append(missed, c.name)
		}
	}
	if len(missed) == 0 {
		return fmt.Sprintf("%d of %d", n, of)
	}
	return fmt.Sprintf("%d of %d (not %s)", n, of, strings.Join(missed, ", "))
}

// nsCell is the engine's steady ns/pair against the pool's.
func nsCell(r bench.Report, pool *bench.Report) string {
	if r.SteadyNsPerPair == nil {
		return "-"
	}
	if pool == nil || pool.SteadyNsPerPair == nil || *pool.SteadyNsPerPair == 0 {
		return fmt.Sprintf("%.0f", *r.SteadyNsPerPair)
	}
	x := *r.SteadyNsPerPair / *pool.SteadyNsPerPair
	cell := fmt.Sprintf("%.0f / %.0f = %.2fx %s %g", *r.SteadyNsPerPair, *pool.SteadyNsPerPair, x,
		verdict(x <= targetNsOfPool, "<=", ">"), targetNsOfPool)
	if x > targetNsOfPool {
		cell = "**" + cell + "**"
	}
	return cell
}
