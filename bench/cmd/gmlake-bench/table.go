package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/internal/units"
)

// tableColumns says which optional columns the table has.
type tableColumns struct {
	minCapacity bool // min capacity, cap/active
	capped      bool // out-of-memory under --capacity
	repeat      bool // convergence under --repeat
	wide        bool // every column, not the narrow table's
}

// writeTable prints one row per (trace, allocator): by default the narrow table (narrowTable), with
// cols.wide every figure.
func writeTable(w io.Writer, reports []bench.Report, cols tableColumns) error {
	if !cols.wide {
		return narrowTable(w, reports, cols)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "trace\tallocator\tpeak active\tpeak reserved\tfrag\t"
	if cols.minCapacity {
		header += "min capacity\tcap/active\t"
	}
	header += "setup calls\twarm-up calls/it\tsteady calls/it\tsteady its forced/novel/all\tcalls/it forced/unforced\t" +
		"calls/it novel/repeat\tdriver ms/it (H200)\tms/it novel/repeat\tmax ms/it warm-up/steady\t"
	if cols.repeat {
		header += "converged calls/it\tconverged after\t"
	}
	header += "ns/pair\tsteady ns/pair\t"
	if cols.capped {
		header += "OOM at capacity\t"
	}
	fmt.Fprintln(tw, header)
	for _, r := range reports {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\tERROR: %s\t\n", r.Trace, r.Allocator, r.Error)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.3f\t", r.Trace, r.Allocator, gib(r.PeakActive), gib(r.PeakReserved), r.Fragmentation)
		if cols.minCapacity {
			fmt.Fprintf(tw, "%s\t%s\t", gibPtr(r.MinCapacity, r.MinCapacityExact), ratio(r.CapacityOverActive))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s / %s\t", r.SetupDriverCalls, calls(r.WarmupDriverCallsPerIter),
			calls(r.SteadyDriverCallsPerIter), steadyIters(r), forcedCalls(r), novelCalls(r), ms(r.SteadyDriverMsPerIter), novelMs(r),
			ms(r.WarmupDriverMsMax), ms(r.SteadyDriverMsMax))
		if cols.repeat {
			fmt.Fprintf(tw, "%s\t%s\t", convergedCalls(r), convergedAfter(r))
		}
		fmt.Fprintf(tw, "%.0f\t%s\t", r.NsPerPair, nsPtr(r.SteadyNsPerPair))
		if cols.capped {
			fmt.Fprintf(tw, "%s\t", oomText(r))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// narrowTable fits 120 columns for the project's traces and allocators: the trace's name without
// its ending, once per group of rows; memory in GiB; driver calls and estimated driver milliseconds
// per steady iteration; out-of-memory under --capacity as the event where it happened ("-": none). The other
// figures are in the wide table, --json and --markdown.
func narrowTable(w io.Writer, reports []bench.Report, cols tableColumns) error {
	nameW, allocW := len("trace"), len("allocator")
	for _, r := range reports {
		nameW, allocW = max(nameW, len(shortName(r.Trace))), max(allocW, len(r.Allocator))
	}
	// The names are one left-aligned cell; the figures are right-aligned after it.
	names := func(trace, alloc string) string { return fmt.Sprintf("%-*s  %-*s", nameW, trace, allocW, alloc) }
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.AlignRight)
	header := names("trace", "allocator") + "\tactive\treserved\tfrag\t"
	if cols.minCapacity {
		header += "min cap\tcap/act\t"
	}
	header += "calls/it\tms/it\t"
	if cols.capped {
		header += "OOM event\t"
	}
	fmt.Fprintln(w, "memory in GiB; driver calls and estimated driver ms (H200) per steady iteration; --wide for every figure")
	fmt.Fprintln(tw, header)
	last := ""
	for _, r := range reports {
		name := shortName(r.Trace)
		if name == last {
			name = ""
		} else {
			last = name
		}
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\tERROR: %s\t\n", names(name, r.Allocator), r.Error)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t", names(name, r.Allocator), units.FormatGiB(r.PeakActive), units.FormatGiB(r.PeakReserved), r.Fragmentation)
		if cols.minCapacity {
			minCap := "-"
			if r.MinCapacity != nil {
				minCap = units.FormatGiB(*r.MinCapacity)
				if r.MinCapacityExact != nil && !*r.MinCapacityExact {
					minCap = "<=" + minCap
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t", minCap, ratio(r.CapacityOverActive))
		}
		fmt.Fprintf(tw, "%s\t%s\t", calls(r.SteadyDriverCallsPerIter), ms(r.SteadyDriverMsPerIter))
		if cols.capped {
			oom := "-"
			if r.OOMAt != nil {
				oom = fmt.Sprint(r.OOMAt.Event)
			}
			fmt.Fprintf(tw, "%s\t", oom)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// shortName is a trace file's name without its ending (.trace.gz, .pickle.gz, ...).
func shortName(trace string) string {
	for _, end := range []string{".trace.gz", ".trace", ".snapshot.pickle.gz", ".pickle.gz", ".snapshot.pickle", ".pickle"} {
		if n, ok := strings.CutSuffix(trace, end); ok {
			return n
		}
	}
	return trace
}

// steadyIters is "forced / novel / all" steady iterations, or "-" for a trace without steady
// iterations.
func steadyIters(r bench.Report) string {
	if r.SteadyForcedIters == nil || r.SteadyNovelIters == nil || r.SteadyIters == nil {
		return "-"
	}
	return fmt.Sprintf("%d / %d / %d", *r.SteadyForcedIters, *r.SteadyNovelIters, *r.SteadyIters)
}

// forcedCalls is steady calls per iteration "forced / unforced".
func forcedCalls(r bench.Report) string {
	return calls(r.SteadyForcedCallsPerIter) + " / " + calls(r.SteadyUnforcedCallsPerIter)
}

// novelCalls is steady calls per iteration "novel / repeat".
func novelCalls(r bench.Report) string {
	return calls(r.SteadyNovelCallsPerIter) + " / " + calls(r.SteadyRepeatCallsPerIter)
}

// novelMs is estimated driver milliseconds per steady iteration "novel / repeat".
func novelMs(r bench.Report) string {
	return ms(r.SteadyNovelDriverMsPerIter) + " / " + ms(r.SteadyRepeatDriverMsPerIter)
}

// ms renders milliseconds, "-" when absent.
func ms(v *float64) string {
	switch {
	case v == nil:
		return "-"
	case *v == 0:
		return "0"
	case *v < 1:
		return fmt.Sprintf("%.2f", *v)
	}
	return fmt.Sprintf("%.1f", *v)
}

func convergedCalls(r bench.Report) string {
	if r.Convergence == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", r.ConvergedCallsPerIter)
}

// convergedAfter is the number of repetitions before one made no driver call, "never" if none did.
func convergedAfter(r bench.Report) string {
	switch {
	case r.Convergence == nil:
		return "-"
	case r.ConvergedAfter == nil:
		return fmt.Sprintf("never (%d reps)", r.Repetitions)
	}
	return fmt.Sprintf("%d of %d", *r.ConvergedAfter, r.Repetitions)
}

func gib(n uint64) string { return fmt.Sprintf("%.3f GiB", float64(n)/float64(units.GiB)) }

func gibPtr(n *uint64, exact *bool) string {
	if n == nil {
		return "-"
	}
	if exact != nil && !*exact {
		return "<=" + gib(*n)
	}
	return gib(*n)
}

func ratio(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f", *v)
}

func calls(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *v)
}

func oomText(r bench.Report) string {
	if r.OOMAt == nil {
		return "no"
	}
	return fmt.Sprintf("event %d (iter %d, %s asked)", r.OOMAt.Event, r.OOMAt.Iteration, units.FormatBytes(r.OOMAt.Requested))
}

func nsPtr(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f", *v)
}
