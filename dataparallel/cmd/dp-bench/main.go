// Command dp-bench fine-tunes a transformer data-parallel on several GPUs of one host (package
// dataparallel/gpudp: one rank per GPU, ZeRO-2 or ZeRO-3 over NCCL) under each allocator, for each ZeRO
// stage and world size, and reports per GPU the peak active and peak reserved bytes,
// fragmentation, driver calls (in all and per steady step) and the steady-state step time (median
// from step 3 on; ranks draw their own sequence lengths each step), with the step time against
// the Gorgonia pool's of the same stage and world size when both ran.
//
//	dp-bench [--world 1,2,4,8] [--zero 2,3] [--allocators gmlake,gorgonia,direct] [--preset opt-1.3b] [--lora]
//	    [--recompute] [--micro-batch 4] [--seq-min 128] [--seq-max 512] [--steps 20]
//	    [--json FILE] [--markdown FILE]
//
// It needs as many GPUs as the largest world size, NCCL (libnccl.so.2, or GMLAKE_NCCL), cuBLAS
// and NVRTC; NVLink multicast is off (NCCL_NVLS_ENABLE=0).
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"os"
	"slices"
	"time"

	"github.com/alecthomas/kong"

	"github.com/gmlake/gmlake/dataparallel/gpudp"
	"github.com/gmlake/gmlake/dataparallel/zero"
	"github.com/gmlake/gmlake/gpu"
	"github.com/gmlake/gmlake/models"
	"github.com/gmlake/gmlake/train"
)

type cli struct {
	World      []int    `default:"1,2" help:"World sizes (GPUs 0..N-1)."`
	Zero       []int    `name:"zero" default:"2" help:"ZeRO stages: 2 (every rank holds all parameters) and/or 3 (parameters sharded, all-gathered per block)."`
	Allocators []string `default:"gmlake,gorgonia,direct" help:"gmlake, gorgonia (Gorgonia's pool over one cuMemAlloc arena), direct."`
	Preset     string   `default:"opt-1.3b" help:"models.Preset name (random weights)."`
	LoRA       bool     `name:"lora" help:"LoRA rank 16 on the attention projections, base frozen."`
	Recompute  bool     `default:"true" negatable:"" help:"Per-block activation recomputation."`
	MicroBatch int      `name:"micro-batch" default:"4" help:"Sequences per rank per step."`
	SeqMin     int      `name:"seq-min" default:"128" help:"Shortest sequence (each rank draws its own per step)."`
	SeqMax     int      `name:"seq-max" default:"512" help:"Longest sequence."`
	Steps      int      `default:"20" help:"Steps per run."`
	Arena      uint64   `default:"0" help:"Gorgonia arena per GPU in bytes (0: 90% of free memory)."`
	Seed       int64    `default:"1" help:"Seed of weights and data."`
	JSON       string   `type:"path" help:"Write JSON lines here (default: standard output)."`
	Markdown   string   `type:"path" help:"Write the table here."`
}

// Result is one (world size, allocator) run.
type Result struct {
	Preset     string             `json:"preset"`
	LoRA       bool               `json:"lora"`
	Recompute  bool               `json:"recompute"`
	World      int                `json:"world"`
	Stage      int                `json:"zero_stage"`
	Allocator  string             `json:"allocator"`
	Ranks      []gpudp.RankMemory `json:"ranks"`
	StepMillis []float64          `json:"step_ms"`
	SteadyMs   float64            `json:"steady_step_ms"` // median of steps 3 on
	WarmupMs   float64            `json:"warmup_ms"`      // steps 0..2 together
	Losses     []float32          `json:"losses"`
	// CallsPerStep is the worst rank's allocator driver calls per steady step (steps 3 on).
	CallsPerStep float64 `json:"driver_calls_per_step"`
	// Gathers is rank 0's unit all-gathers in all (ZeRO-3).
	Gathers int    `json:"gathers,omitempty"`
	Error   string `json:"error,omitempty"`
}

func main() {
	var c cli
	kong.Parse(&c, kong.Name("dp-bench"), kong.UsageOnError(),
		kong.Description("Data-parallel fine-tuning on several GPUs under each allocator."))
	if err := c.run(os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "dp-bench:", err)
		os.Exit(1)
	}
}

func (c *cli) run(stdout, stderr io.Writer) error {
	for _, st := range c.Zero {
		if st != int(zero.Stage2) && st != int(zero.Stage3) {
			return fmt.Errorf("%w: --zero %d (have 2 and 3)", gpudp.ErrStage, st)
		}
	}
	cfg, err := models.Preset(c.Preset)
	if err != nil {
		return err
	}
	have, err := gpu.DeviceCount()
	if err != nil {
		return err
	}
	if need := slices.Max(c.World); need > have {
		return fmt.Errorf("world size %d needs %d GPUs, this machine has %d", need, need, have)
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
	enc := json.NewEncoder(out)
	var results []Result
	for _, st := range c.Zero {
		for _, n := range c.World {
			for _, a := range c.Allocators {
				res := c.measure(cfg, n, zero.Stage(st), gpudp.Allocator(a))
				fmt.Fprintf(stderr, "dp-bench: %s ZeRO-%d N=%d %s: steady %.1f ms/step %s\n", c.Preset, st, n, a, res.SteadyMs, res.Error)
				results = append(results, res)
				if err := enc.Encode(res); err != nil {
					return err
				}
			}
		}
	}
	if c.Markdown != "" {
		return os.WriteFile(c.Markdown, []byte(markdown(c, results)), 0o644)
	}
	return nil
}

// measure runs one world size under one allocator; a failure is recorded in the result.
func (c *cli) measure(cfg models.Config, n int, stage zero.Stage, alloc gpudp.Allocator) Result {
	res := Result{Preset: c.Preset, LoRA: c.LoRA, Recompute: c.Recompute, World: n, Stage: int(stage), Allocator: string(alloc)}
	fail := func(err error) Result {
		res.Error = err.Error()
		return res
	}
	w, err := models.InitWeights(cfg, c.Seed, nil)
	if err != nil {
		return fail(err)
	}
	devices := make([]int, n)
	for i := range devices {
		devices[i] = i
	}
	opts := gpudp.Options{Devices: devices, Recompute: c.Recompute, Allocator: alloc, Arena: c.Arena, Stage: stage,
		AdamW: gpu.AdamWConfig{LR: 1e-4, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, MaxNorm: 1}}
	if c.LoRA {
		targets := []string{"c_attn"}
		if cfg.Arch == models.ArchLlama {
			targets = []string{"q_proj", "v_proj"}
		}
		opts.LoRA = &models.LoRA{Rank: 16, Alpha: 32, Targets: targets, Seed: c.Seed}
	}
	tr, err := gpudp.New(w, opts)
	if err != nil {
		return fail(err)
	}
	defer tr.Close()
	rng := rand.New(rand.NewSource(c.Seed))
	var warm []gpudp.RankMemory // after step 3
	for step := range c.Steps {
		if step == 3 {
			warm = tr.Memory()
		}
		per := make([][][]int, n)
		for r := range per {
			seq := c.SeqMin + 8*rng.Intn((c.SeqMax-c.SeqMin)/8+1)
			per[r] = train.DefaultCounting.Batch(rng, c.MicroBatch, seq)
		}
		st, err := tr.Step(per)
		if err != nil {
			res.Ranks = tr.Memory()
			return fail(err)
		}
		res.StepMillis = append(res.StepMillis, float64(st.Time)/float64(time.Millisecond))
		res.Losses = append(res.Losses, st.Loss)
	}
	res.Ranks = tr.Memory()
	res.Gathers = tr.Gathers()
	if warm != nil {
		for r, m := range res.Ranks {
			res.CallsPerStep = max(res.CallsPerStep, float64(m.DriverCalls-warm[r].DriverCalls)/float64(c.Steps-3))
		}
	}
	if len(res.StepMillis) > 3 {
		steady := slices.Clone(res.StepMillis[3:])
		slices.Sort(steady)
		res.SteadyMs = steady[len(steady)/2]
	}
	for _, ms := range res.StepMillis[:min(3, len(res.StepMillis))] {
		res.WarmupMs += ms
	}
	if err := tr.Check(); err != nil {
		return fail(err)
	}
	return res
}
