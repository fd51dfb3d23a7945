// Command shard-sim simulates the per-rank allocation traces of data-parallel ZeRO fine-tuning
// (package dataparallel/shardsim) for several world sizes, replays each rank's trace through the
// simulated allocators of package bench, and reports, per world size, the worst rank's peak
// active and peak reserved bytes, fragmentation and minimum capacity over peak active.
//
//	shard-sim [--workload PRESET:full|lora:STAGE[:ckpt][:overlap]]... [--ranks 1,2,4,8,16] [--zero 2,3]
//	    [--allocators gmlake,gorgonia,caching] [--max-ranks K] [--markdown FILE] [--write-traces DIR]
//	    [--quiet] [--verbose]
//
// Every row is printed as a JSON line on stdout; --markdown writes the tables.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"

	"github.com/alecthomas/kong"

	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/dataparallel/shardsim"
	"github.com/gmlake/gmlake/dataparallel/zero"
)

type cli struct {
	Workload   []string `name:"workload" default:"opt-1.3b:full:1:ckpt,opt-1.3b:full:2:ckpt,opt-1.3b:full:3:ckpt,opt-1.3b:full:2,gpt2-xl:full:2:ckpt,opt-1.3b:full:3:ckpt:overlap,llama-7b:full:3:ckpt,llama-7b:full:3:ckpt:overlap,llama-7b:lora:2:ckpt,llama-7b:lora:3:ckpt" help:"PRESET:full|lora:STAGE[:ckpt][:overlap] (repeatable or comma-separated)."`
	Ranks      []int    `default:"1,2,4,8,16" help:"World sizes N."`
	Zero       []int    `name:"zero" help:"Run every workload at each of these ZeRO stages (1, 2, 3) instead of the stage it names."`
	Allocators []string `default:"gmlake,gorgonia,caching" help:"Simulated allocators (see gmlake-bench)."`
	MaxRanks   int      `name:"max-ranks" default:"0" help:"Measure at most this many ranks per world size, spread evenly (0: all)."`
	MicroBatch int      `name:"micro-batch" default:"4" help:"Sequences per rank per step."`
	SeqMin     int      `name:"seq-min" default:"256" help:"Shortest padded sequence length."`
	SeqMax     int      `name:"seq-max" default:"1024" help:"Longest padded sequence length (capped at the model's positions)."`
	Steps      int      `default:"8" help:"Training steps per trace."`
	Seed       uint64   `default:"1" help:"Seed of the sequence lengths (each rank draws its own)."`
	Workers    int      `default:"0" help:"Parallel replays (0: one per CPU)."`
	MaxProbes  int      `name:"max-probes" default:"0" help:"Halving replays per minimum-capacity bisection; past them the bound found so far is reported, marked ≤ (0: bisect to 2 MiB)."`
	Markdown   string   `type:"path" help:"Write the tables to this file."`
	Traces     string   `name:"write-traces" type:"path" help:"Also write every rank's trace into this folder (for gmlake-bench or gpu-replay)."`
	Quiet      bool     `help:"No JSON lines on stdout."`
	Verbose    bool     `help:"Log every replay on stderr."`
}

func main() {
	var c cli
	kong.Parse(&c, kong.Name("shard-sim"), kong.UsageOnError(),
		kong.Description("Per-rank allocator figures of simulated data-parallel ZeRO fine-tuning as the world size grows."))
	if err := c.run(os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "shard-sim:", err)
		os.Exit(1)
	}
}

func (c *cli) study(progress io.Writer) (shardsim.Study, error) {
	st := shardsim.Study{WorldSizes: c.Ranks, MaxRanks: c.MaxRanks, Workers: c.Workers, MaxProbes: c.MaxProbes,
		TraceDir: c.Traces}
	if st.Workers == 0 {
		st.Workers = runtime.NumCPU()
	}
	for _, s := range c.Workload {
		w, err := shardsim.ParseWorkload(s)
		if err != nil {
			return st, err
		}
		w.MicroBatch, w.SeqMin, w.SeqMax, w.Steps, w.Seed = c.MicroBatch, c.SeqMin, c.SeqMax, c.Steps, c.Seed
		if len(c.Zero) == 0 {
			st.Workloads = append(st.Workloads, w)
		}
		for _, stage := range c.Zero {
			if stage < int(zero.Stage1) || stage > int(zero.Stage3) {
				return st, fmt.Errorf("%w: --zero %d (have 1, 2, 3)", shardsim.ErrWorkload, stage)
			}
			w.Stage = zero.Stage(stage)
			st.Workloads = append(st.Workloads, w)
		}
	}
	specs, err := bench.SimSpecs(c.Allocators)
	if err != nil {
		return st, err
	}
	st.Allocators = specs
	if progress != nil {
		st.Logger = slog.New(slog.NewTextHandler(progress, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return st, nil
}

func (c *cli) run(stdout, stderr io.Writer) error {
	var progress io.Writer
	if c.Verbose {
		progress = stderr
	}
	st, err := c.study(progress)
	if err != nil {
		return err
	}
	if c.Traces != "" {
		if err := os.MkdirAll(c.Traces, 0o755); err != nil {
			return err
		}
	}
	rows, err := st.Run()
	if err != nil {
		return err
	}
	if !c.Quiet {
		enc := json.NewEncoder(stdout)
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
	}
	if c.Markdown != "" {
		f, err := os.Create(c.Markdown)
		if err != nil {
			return err
		}
		werr := writeMarkdown(f, c, rows)
		if err := f.Close(); werr == nil {
			werr = err
		}
		return werr
	}
	return nil
}
