package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/gmlake/gmlake/bench"
)

// writeTable prints one row per (trace, allocator), figures in GiB.
func writeTable(w io.Writer, reports []bench.Report, minCapacity, capped bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "trace\tallocator\tpeak active\tpeak reserved\tfrag\t"
	if minCapacity {
		header += "min capacity\tcap/active\t"
	}
	header += "setup calls\twarm-up calls/it\tsteady calls/it\tns/pair\t"
	if capped {
		header += "OOM at capacity\t"
	}
	fmt.Fprintln(tw, header)
	for _, r := range reports {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\tERROR: %s\t\n", r.Trace, r.Allocator, r.Error)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.3f\t", r.Trace, r.Allocator, gib(r.PeakActive), gib(r.PeakReserved), r.Fragmentation)
		if minCapacity {
			fmt.Fprintf(tw, "%s\t%s\t", gibPtr(r.MinCapacity, r.MinCapacityExact), ratio(r.CapacityOverActive))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.0f\t", r.SetupDriverCalls, calls(r.WarmupDriverCallsPerIter),
			calls(r.SteadyDriverCallsPerIter), r.NsPerPair)
		if capped {
			fmt.Fprintf(tw, "%s\t", oomText(r))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func gib(n uint64) string { return fmt.Sprintf("%.3f GiB", float64(n)/float64(bench.GiB)) }

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
	return fmt.Sprintf("event %d (iter %d, %s asked)", r.OOMAt.Event, r.OOMAt.Iteration, bench.FormatBytes(r.OOMAt.Requested))
}
