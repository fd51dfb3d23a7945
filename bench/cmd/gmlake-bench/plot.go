package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"

	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/internal/units"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// lineColors is one colour per allocator line, in report order; active bytes are drawn in black.
var lineColors = []color.RGBA{
	{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, {R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, {R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, {R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}

// writePlots writes DIR/<trace>.png: reserved bytes of each allocator and active bytes over the trace.
func writePlots(dir string, traces []*bench.Prepared, reports []bench.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, t := range traces {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s: device memory over the trace", t.Name)
		p.X.Label.Text = "event"
		p.Y.Label.Text = "GiB"
		p.Legend.Top, p.Legend.Left = true, true
		p.Y.Min = 0
		p.Add(plotter.NewGrid())
		var active []bench.Point
		n := 0
		for _, r := range reports {
			if r.Trace != t.Name || len(r.Series) == 0 {
				continue
			}
			active = r.Series
			if err := addLine(p, r.Series, fmt.Sprintf("%s reserved", r.Allocator), lineColors[n%len(lineColors)],
				func(pt bench.Point) uint64 { return pt.Reserved }); err != nil {
				return err
			}
			n++
		}
		if active != nil {
			if err := addLine(p, active, "active (requested bytes live)", color.RGBA{A: 0xff},
				func(pt bench.Point) uint64 { return pt.Active }, vg.Length(2), vg.Length(2)); err != nil {
				return err
			}
		}
		if err := p.Save(12*vg.Inch, 6*vg.Inch, filepath.Join(dir, t.Name+".png")); err != nil {
			return err
		}
	}
	return nil
}

// addLine draws y over the series; dashes, if any, make it dashed.
func addLine(p *plot.Plot, series []bench.Point, label string, c color.RGBA, y func(bench.Point) uint64, dashes ...vg.Length) error {
	xy := make(plotter.XYs, len(series))
	for i, pt := range series {
		xy[i].X, xy[i].Y = float64(pt.Event), float64(y(pt))/float64(units.GiB)
	}
	line, err := plotter.NewLine(xy)
	if err != nil {
		return err
	}
	line.Color = c
	line.Width = vg.Points(1.2)
	line.Dashes = dashes
	p.Add(line)
	p.Legend.Add(label, line)
	return nil
}
