// Command cnn-train trains ResNets (package models) on a GPU with multi-scale inputs (a new image
// size every step, one graph per size, the weights shared), the convolutions, batch norms, pooling
// and rectifiers running through cuDNN with every workspace drawn from the allocator under test,
// once per memory allocator (package gpu/pool: gmlake's stitching engine, the Gorgonia pool
// algorithm over one cuMemAlloc arena, direct cuMemAlloc). For each it reports the warm-up and
// steady-state step times, peak reserved memory, fragmentation, memory driver calls per step, the
// convolution workspaces per step, and the largest batch that trains under a fixed capacity
// (bisected on the device within the same run), and it can record each run's allocation trace.
//
//	cnn-train [--models resnet18,resnet50] [--allocators gmlake,gorgonia,direct] [--steps 16]
//	    [--batch 32] [--sizes 128,160,192,224] [--capacity 16GiB] [--tf32] [--bisect-limit 20s]
//	    [--rounds 1] [--interleave] [--json FILE] [--markdown FILE] [--trace DIR]
//
// Every allocator sees the same sequence of sizes and images. The first pass over the sizes is the
// warm-up (each shape's first step: graph build, cuDNN's algorithm choice, the pools' growth); the
// steps after it are the steady state. For the largest batch, each try runs three steps at that
// batch (the largest size, the smallest, the largest again) on the same device, pool and weights.
//
// With --interleave every allocator's run is open at once, each on its own pool and device, and
// they take each step in turn; a step of one is then timed next to the same step of the other,
// which the paired figure compares, where runs one after another drift apart with the machine.
//
// Build with a plain go build (CGO_ENABLED=0 works): cuDNN and the CUDA libraries are opened at run time.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/alecthomas/kong"

	"github.com/gmlake/gmlake/gpu/internal/traincmd"
	"github.com/gmlake/gmlake/internal/units"
	"github.com/gmlake/gmlake/models"
)

type cli struct {
	Models      []string      `default:"resnet18,resnet50" help:"ResNet presets (models.ResNetPreset)."`
	Classes     int           `default:"1000" help:"Classes of the head (the color task uses them all)."`
	Allocators  []string      `default:"gmlake,gorgonia,direct" help:"Allocators to compare."`
	Rounds      int           `default:"1" help:"Timed runs per allocator, in alternating order (A B, B A, ...); the table gives the mean."`
	Interleave  bool          `help:"Open every allocator's run side by side and have them take each step in turn (A B, then B A at the next step), so that the paired figure compares steps milliseconds apart rather than a run apart."`
	Steps       int           `default:"16" help:"Training steps per allocator (warm-up included)."`
	Batch       int           `default:"32" help:"Batch of the timed run (and the start of the batch search)."`
	Sizes       []int         `default:"128,160,192,224" help:"Square image sizes, varied from step to step."`
	Capacity    units.Bytes   `default:"16GiB" help:"Device memory each allocator may hold (the Gorgonia arena's size)."`
	TF32        bool          `name:"tf32" default:"true" negatable:"" help:"Let cuDNN use TF32 tensor cores for the convolutions (PyTorch's default)."`
	MaxBatch    bool          `default:"true" negatable:"" help:"Search the largest batch under --capacity."`
	BisectLimit time.Duration `default:"20s" help:"Stop each batch search after this long (the bracket so far is reported)."`
	JSON        string        `help:"Write one JSON line per run here (default: standard output)."`
	Markdown    string        `help:"Write the markdown table here (it is also printed to standard error)."`
	Trace       string        `help:"Write each run's allocation trace (workspaces included) to DIR/MODEL-ALLOCATOR.trace.gz." placeholder:"DIR"`
}

func main() {
	var c cli
	kong.Parse(&c, kong.Name("cnn-train"), kong.UsageOnError(),
		kong.Description("Trains ResNets with multi-scale inputs on the GPU through cuDNN under each allocator."))
	if err := c.run(os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "cnn-train:", err)
		os.Exit(1)
	}
}

func (c *cli) run(stdout, stderr io.Writer) error {
	if err := traincmd.CheckRun(c.Allocators, c.Steps, len(c.Sizes)); err != nil {
		return err
	}
	out := stdout
	if c.JSON != "" {
		f, err := os.Create(c.JSON)
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	env, err := openEnv(c.TF32)
	if err != nil {
		return err
	}
	defer env.close()
	fmt.Fprintf(stderr, "cnn-train on %s, cuDNN %s, %s\n", env.device, env.cudnnVersion(), time.Now().UTC().Format(time.RFC3339))
	var results []*result
	enc := json.NewEncoder(out)
	for _, model := range c.Models {
		w, err := c.weights(model, stderr)
		if err != nil {
			return err
		}
		rounds := traincmd.Rounds{Allocators: c.Allocators, N: c.Rounds}
		var byAllocator map[string][]*result
		if c.Interleave {
			byAllocator, err = c.interleavedRounds(env, w, model, rounds, enc, stderr)
		} else {
			byAllocator, err = traincmd.Run(rounds, func(round int, alloc string) (*result, error) {
				r := c.forRound(round).session(env, model, w, alloc, stderr)
				r.Round = round
				return r, enc.Encode(r)
			})
		}
		if err != nil {
			return err
		}
		for _, alloc := range c.Allocators {
			results = append(results, foldRounds(byAllocator[alloc]))
		}
	}
	table := c.markdown(env, results)
	fmt.Fprint(stderr, table)
	if c.Markdown != "" {
		return os.WriteFile(c.Markdown, []byte(table), 0o644)
	}
	return nil
}

// forRound is the settings of a round: the batch search and the trace belong to the first.
func (c *cli) forRound(round int) *cli {
	rc := *c
	if round > 0 {
		rc.MaxBatch, rc.Trace = false, ""
	}
	return &rc
}

// interleavedRounds runs the rounds of --interleave, each allocator's results in round order.
func (c *cli) interleavedRounds(e *env, w *models.ResNetWeights, model string, rounds traincmd.Rounds, enc *json.Encoder, log io.Writer) (map[string][]*result, error) {
	byAllocator := map[string][]*result{}
	for round, order := range rounds.Order() {
		for _, r := range c.forRound(round).interleaved(e, w, model, order, log) {
			r.Round = round
			if err := enc.Encode(r); err != nil {
				return nil, err
			}
			byAllocator[r.Allocator] = append(byAllocator[r.Allocator], r)
		}
	}
	return byAllocator, nil
}

// foldRounds is an allocator's result over its rounds: the first round's (which holds the batch
// search and the trace), with the step and warm-up times of all rounds (traincmd.Fold), or the
// first round that failed; the time in the allocator is the mean of the rounds'.
func foldRounds(rounds []*result) *result {
	for _, r := range rounds {
		if r.Error != "" {
			return r
		}
	}
	r := *rounds[0]
	t := traincmd.Fold(rounds, func(r *result) (float64, float64, float64) { return r.StepMs, r.StepMsMin, r.WarmupMs })
	r.StepMs, r.StepMsMin, r.WarmupMs, r.RoundStepMs = t.StepMs, t.StepMsMin, t.WarmupMs, t.RoundStepMs
	r.RoundSteadyMs = nil
	for _, round := range rounds {
		r.RoundSteadyMs = append(r.RoundSteadyMs, round.SteadyMs)
	}
	r.AllocatorMsPerStep = traincmd.Mean(rounds, func(r *result) float64 { return r.AllocatorMsPerStep })
	r.AllocatorNsPerCall = traincmd.Mean(rounds, func(r *result) float64 { return r.AllocatorNsPerCall })
	return &r
}
