// Command cnn-trace trains a ResNet on the CPU with multi-scale inputs (a new image size every
// step, one graph per size) on gmlake's stitched host memory, and writes the run's allocation
// trace in the format of package trace, for `gmlake-bench replay` to replay through the other
// allocators. It prints one line per step.
//
//	go run ./train/cmd/cnn-trace --preset resnet18 --sizes 32,48,64 --batch 8 --steps 12 --out run.trace.gz
package main

import (
	"fmt"
	"math/rand"
	"os"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/gmlake/gmlake"
	"github.com/gmlake/gmlake/models"
	"github.com/gmlake/gmlake/trace"
	"github.com/gmlake/gmlake/train"
)

type cli struct {
	Preset  string `default:"resnet18" help:"Network (models.ResNetPreset): resnet18, resnet34, resnet50, resnet-tiny."`
	Classes int    `default:"10" help:"Classes of the color task (the head's width)."`
	Sizes   []int  `default:"32,48,64" help:"Square image sizes; each step draws one."`
	Batch   int    `default:"8" help:"Images per step."`
	Steps   int    `default:"12" help:"Training steps."`
	Seed    int64  `default:"1" help:"Seed of the weights, the data and the size draws."`
	Out     string `required:"" help:"Trace file to write (.gz: gzip'd)."`
}

func main() {
	var c cli
	kong.Parse(&c, kong.Description("Records the allocation trace of multi-scale ResNet training on the CPU."))
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "cnn-trace:", err)
		os.Exit(1)
	}
}

func run(c cli) error {
	cfg, err := models.ResNetPreset(c.Preset)
	if err != nil {
		return err
	}
	cfg.Classes = c.Classes
	w, err := models.InitResNet(cfg, c.Seed, nil)
	if err != nil {
		return err
	}
	alloc, err := gmlake.NewAllocator()
	if err != nil {
		return err
	}
	defer alloc.Close()
	rec := train.NewRecorder(alloc)
	tr, err := train.NewImageTrainer(w, rec)
	if err != nil {
		return err
	}
	task := train.DefaultColorTask
	task.Classes = c.Classes
	rng := rand.New(rand.NewSource(c.Seed))
	for range c.Steps {
		s := train.Scales(c.Sizes).Pick(rng)
		b, err := task.Batch(rng, c.Batch, s, s)
		if err != nil {
			return err
		}
		res, err := tr.Step(b)
		if err != nil {
			return err
		}
		fmt.Printf("step %d  %dx%d  loss %.4f  allocs %d  peak live %.1f MiB\n", res.Step, s, s, res.Loss,
			res.Machine.Allocs, float64(res.Machine.PeakLiveBytes)/(1<<20))
	}
	sizes := make([]string, len(c.Sizes))
	for i, s := range c.Sizes {
		sizes[i] = fmt.Sprint(s)
	}
	tt := rec.Trace(fmt.Sprintf("%s-multiscale-cpu", c.Preset),
		fmt.Sprintf("cnn-trace --preset %s --classes %d --sizes %s --batch %d --steps %d --seed %d",
			c.Preset, c.Classes, strings.Join(sizes, ","), c.Batch, c.Steps, c.Seed))
	if err := tr.Close(); err != nil {
		return err
	}
	return trace.WriteFile(c.Out, tt)
}
