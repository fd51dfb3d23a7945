package main

import (
	"fmt"
	"image/color"
	"io"
	"text/tabwriter"

	"github.com/gmlake/gmlake/baseline"
	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/internal/units"
	"github.com/gmlake/gmlake/stitch"
	"github.com/gmlake/gmlake/trace"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// compared are the allocators of the final table: gmlake, Gorgonia's GPU pool (its algorithm,
// without its bugs) and PyTorch's caching allocator, each on a simulated device.
var compared = []string{"gmlake", "gorgonia", "caching"}

// compare replays the run's trace through each allocator and prints peak active, peak reserved,
// fragmentation and the smallest capacity that runs it; plotPath (if set) gets the timeline.
func compare(out io.Writer, workload string, t *trace.Trace, granularity uint64, engineOpts []stitch.Option, plotPath string) error {
	p, err := bench.Prepare(workload, t)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(out, "\nallocators on this run's trace (%d events, simulated device):\n", len(t.Events))
	fmt.Fprintln(tw, "allocator\tpeak active\tpeak reserved\tfragmentation\tmin capacity\tcapacity/active\t")
	var reports []bench.Report
	var missing []string
	for _, name := range compared {
		spec, err := bench.SimSpec(name)
		if name == "gmlake" {
			spec = gmlakeSpec(granularity, engineOpts)
		}
		if err == nil {
			var rep bench.Report
			rep, err = bench.Measure(p, spec, bench.MeasureOptions{MinCapacity: true, Step: granularity, Series: 1000})
			if err == nil {
				reports = append(reports, rep)
				minCap, ratio := "-", "-"
				if rep.MinCapacity != nil {
					minCap, ratio = units.FormatBytes(*rep.MinCapacity), fmt.Sprintf("%.3f", *rep.CapacityOverActive)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%s\t%s\t\n", name, units.FormatBytes(rep.PeakActive),
					units.FormatBytes(rep.PeakReserved), rep.Fragmentation, minCap, ratio)
				continue
			}
		}
		fmt.Fprintf(tw, "%s\tn/a\t\t\t\t\t\n", name)
		missing = append(missing, fmt.Sprintf("%s: %v", name, err))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, m := range missing {
		fmt.Fprintln(out, "  n/a", m)
	}
	if plotPath == "" || len(reports) == 0 {
		return nil
	}
	if err := plotTimeline(plotPath, workload, reports); err != nil {
		return err
	}
	fmt.Fprintf(out, "memory timeline: %s\n", plotPath)
	return nil
}

// gmlakeSpec is the stitching engine on a simulated driver with the run's granularity, so the
// replay matches the real run's configuration.
func gmlakeSpec(granularity uint64, engineOpts []stitch.Option) bench.Spec {
	return bench.Spec{Name: "gmlake", New: func(capacity uint64) (baseline.Allocator, error) {
		opts := []sim.Option{sim.WithGranularity(granularity)}
		if capacity > 0 {
			opts = append(opts, sim.WithCapacity(capacity))
		}
		return baseline.NewGMLake(sim.New(opts...), append([]stitch.Option{stitch.WithCapacity(capacity)}, engineOpts...)...)
	}}
}

var lineColors = []color.RGBA{
	{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, {R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
}

// plotTimeline draws each allocator's reserved bytes and the active bytes over the trace.
func plotTimeline(path, workload string, reports []bench.Report) error {
	p := plot.New()
	p.Title.Text = workload + ": memory over the run"
	p.X.Label.Text = "trace event"
	p.Y.Label.Text = "MiB"
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	var top uint64
	for _, r := range reports {
		top = max(top, r.PeakReserved)
	}
	p.Y.Min, p.Y.Max = 0, 1.35*float64(top)/(1<<20) // room for the legend above the lines
	for i, r := range reports {
		if err := addLine(p, r.Series, r.Allocator+" reserved", lineColors[i%len(lineColors)],
			func(pt bench.Point) uint64 { return pt.Reserved }); err != nil {
			return err
		}
	}
	if err := addLine(p, reports[0].Series, "active (requested)", color.RGBA{A: 0xff},
		func(pt bench.Point) uint64 { return pt.Active }); err != nil {
		return err
	}
	return p.Save(10*vg.Inch, 5*vg.Inch, path)
}

func addLine(p *plot.Plot, series []bench.Point, label string, c color.RGBA, y func(bench.Point) uint64) error {
	xy := make(plotter.XYs, len(series))
	for i, pt := range series {
		xy[i].X, xy[i].Y = float64(pt.Event), float64(y(pt))/(1<<20)
	}
	line, err := plotter.NewLine(xy)
	if err != nil {
		return err
	}
	line.Color = c
	line.Width = vg.Points(1.2)
	p.Add(line)
	p.Legend.Add(label, line)
	return nil
}
