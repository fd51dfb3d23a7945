// Command gpu-train fine-tunes randomly initialised transformer models on a GPU with LoRA,
// per-block recomputation (and optionally offload) and variable sequence lengths, once per memory
// allocator (package gpu/pool: gmlake's stitching engine, the Gorgonia pool algorithm over one
// cuMemAlloc arena, direct cuMemAlloc), and reports for each: peak reserved memory, fragmentation,
// the warm-up and steady-state step times, memory driver calls per step, and the largest batch
// that trains under a fixed capacity (bisected on the device within the same run).
//
//	gpu-train [--models opt-1.3b,gpt2-xl] [--allocators gmlake,gorgonia,direct] [--steps 20]
//	    [--batch 4] [--seqs 128,256,384,512] [--capacity 40GiB] [--[no-]recompute] [--offload]
//	    [--bisect-limit 60s] [--json FILE] [--markdown FILE]
//
// Every allocator sees the same sequence of shapes and tokens. The first pass over the sequence
// lengths is the warm-up (every shape's first step: graph compilation, the pools' first growth);
// the steps after it are the steady state. For the largest batch, each try runs three steps at
// that batch (the longest length, the shortest, the longest again) on the same device, pool and
// resident weights (the pool trimmed between tries), doubling from --batch until a try fails,
// then bisecting.
//
// Build with a plain go build (CGO_ENABLED=0 works); make gpu-train-bench does it.
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
)

type cli struct {
	Models      []string      `default:"opt-1.3b,gpt2-xl" help:"Model presets (package models) to fine-tune."`
	Allocators  []string      `default:"gmlake,gorgonia,direct" help:"Allocators to compare."`
	Rounds      int           `default:"1" help:"Timed runs per allocator, in alternating order (A B, B A, ...); the table gives the mean."`
	Steps       int           `default:"20" help:"Training steps per allocator (warm-up included)."`
	Batch       int           `default:"4" help:"Batch of the timed run (and the start of the batch search)."`
	Seqs        []int         `default:"128,256,384,512" help:"Sequence lengths, varied from step to step."`
	Capacity    units.Bytes   `default:"40GiB" help:"Device memory each allocator may hold (the Gorgonia arena's size)."`
	Recompute   bool          `default:"true" negatable:"" help:"Per-block activation recomputation."`
	Offload     bool          `help:"Offload each block's saved activations to pinned host memory."`
	LoRA        []string      `name:"lora" default:"c_attn,c_fc,c_proj" help:"LoRA targets (rank 16, alpha 32)."`
	MaxBatch    bool          `default:"true" negatable:"" help:"Search the largest batch under --capacity."`
	BisectLimit time.Duration `default:"60s" help:"Stop each batch search after this long (the bracket so far is reported)."`
	JSON        string        `help:"Write one JSON line per run here (default: standard output)."`
	Markdown    string        `help:"Write the markdown table here (it is also printed to standard error)."`
	Trace       string        `help:"Write each run's allocation trace (gmlake-bench's text format, an iteration marker per step) to DIR/MODEL-ALLOCATOR.trace.gz." placeholder:"DIR"`
}

func main() {
	var c cli
	kong.Parse(&c, kong.Name("gpu-train"), kong.UsageOnError(),
		kong.Description("Fine-tunes models on the GPU under each allocator and compares memory and time."))
	if err := c.run(os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "gpu-train:", err)
		os.Exit(1)
	}
}

func (c *cli) run(stdout, stderr io.Writer) error {
	if err := traincmd.CheckRun(c.Allocators, c.Steps, len(c.Seqs)); err != nil {
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
	env, err := openEnv()
	if err != nil {
		return err
	}
	defer env.close()
	fmt.Fprintf(stderr, "gpu-train on %s, %s\n", env.device, time.Now().UTC().Format(time.RFC3339))
	var results []*result
	enc := json.NewEncoder(out)
	for _, model := range c.Models {
		w, err := c.weights(model, stderr)
		if err != nil {
			return err
		}
		rounds := traincmd.Rounds{Allocators: c.Allocators, N: c.Rounds}
		byAllocator, err := traincmd.Run(rounds, func(round int, alloc string) (*result, error) {
			rc := *c
			if round > 0 { // the batch search and the trace belong to the first round
				rc.MaxBatch, rc.Trace = false, ""
			}
			r := rc.session(env, model, w, alloc, stderr)
			r.Round = round
			return r, enc.Encode(r)
		})
		if err != nil {
			return err
		}
		for _, alloc := range c.Allocators {
			results = append(results, foldRounds(byAllocator[alloc]))
		}
	}
	table := c.markdown(env.device, results)
	fmt.Fprint(stderr, table)
	if c.Markdown != "" {
		return os.WriteFile(c.Markdown, []byte(table), 0o644)
	}
	return nil
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
	r.AllocatorMsPerStep = traincmd.Mean(rounds, func(r *result) float64 { return r.AllocatorMsPerStep })
	r.AllocatorNsPerCall = traincmd.Mean(rounds, func(r *result) float64 { return r.AllocatorNsPerCall })
	return &r
}
