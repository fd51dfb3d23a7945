// Command finetune fine-tunes a small GPT on the CPU with every buffer (weights, activations,
// gradients, optimizer state, temporaries) in gmlake's stitched host memory, using LoRA, per-block
// recomputation, activation offload and variable sequence lengths, then compares allocators on the
// run's own allocation trace.
//
//	go run ./examples/finetune                      # the demo (make demo)
//	go run ./examples/finetune --no-lora --steps 50 # full fine-tuning
//	go run ./examples/finetune --checkpoint ../shared/fixtures/hf/gpt2-tiny --eval --json
//	go build -o finetune ./examples/finetune && ./finetune  # on the GPU, if there is one
//
// On a machine with an NVIDIA GPU, the measured fine-tuning runs on
// the GPU (gpu/graphexec) with every device buffer from gmlake's engine over driver/cuda, and
// prints gmlake's figures for the run; the trace replay and the plot are CPU-path features.
// A random-init model cannot be adapted by LoRA alone (its frozen embeddings carry no information),
// so without --checkpoint the demo first trains the base model briefly on the Go heap to count
// upwards ("pretraining", not measured), then fine-tunes it with LoRA to count downwards: that
// phase is the measured run.
package main

import (
	"fmt"
	"os"

	"github.com/alecthomas/kong"
	"github.com/gmlake/gmlake/internal/units"
)

type cli struct {
	Preset     string `default:"gpt2-tiny" help:"Model configuration preset (${presets})."`
	Layers     int    `help:"Override the preset's number of blocks."`
	Hidden     int    `help:"Override the preset's hidden size (the MLP is 4x wide)."`
	Heads      int    `help:"Override the preset's attention heads."`
	Checkpoint string `type:"existingdir" help:"Hugging Face checkpoint directory (config.json, model.safetensors); overrides --preset."`

	Steps    int   `default:"200" help:"Fine-tuning steps."`
	Pretrain int   `default:"150" help:"Full-training steps on the upward counting task before fine-tuning a random-init model (not measured); 0 to skip."`
	Batch    int   `default:"8" help:"Sequences per step."`
	MinSeq   int   `default:"16" help:"Shortest sequence length."`
	MaxSeq   int   `default:"64" help:"Longest sequence length."`
	Bucket   int   `default:"8" help:"Sequence lengths are rounded up to a multiple of this: one graph per bucket."`
	Seed     int64 `default:"1" help:"Seed for weights, adapters and data."`

	LoRA        bool     `default:"true" negatable:"" name:"lora" help:"Train LoRA adapters (--no-lora: full fine-tuning)."`
	LoRARank    int      `default:"8" name:"lora-rank" help:"LoRA rank."`
	LoRAAlpha   float64  `default:"16" name:"lora-alpha" help:"LoRA alpha (scale = alpha/rank)."`
	LoRATargets []string `name:"lora-targets" help:"Projections that get adapters (default: every linear projection of the architecture)."`
	Recompute   bool     `default:"true" negatable:"" help:"Recompute each block's activations in backward."`
	Offload     bool     `default:"true" negatable:"" help:"Offload each block's activations to host memory between forward and backward."`

	LR   float64 `help:"Learning rate (default 1e-2 with LoRA, 3e-3 without)."`
	Clip float64 `default:"1" help:"Clip the global gradient norm to this (0: off)."`

	Device         string      `default:"auto" enum:"auto,cpu,gpu" help:"Where the measured fine-tuning runs: gpu (on gmlake's GPU memory), cpu, or auto (the GPU when the machine has one)."`
	Allocator      string      `default:"gmlake" enum:"gmlake,go" help:"Memory for the CPU run: gmlake (stitched host memory) or go (the Go heap)."`
	Granularity    units.Bytes `default:"0" help:"gmlake's unit of physical memory for the CPU run (0: the host's page size, 4KiB on most machines; 2MiB on a GPU)."`
	SmallThreshold units.Bytes `default:"0" help:"gmlake serves requests below this from small pages (0: half the granularity on the CPU; 256KiB on a GPU)."`
	MinStitch      units.Bytes `default:"0" help:"gmlake never stitches free pieces below this (0: half the granularity, as 1MiB on a GPU)."`
	Trace          string      `help:"Write the run's allocation trace to this file (.gz: gzip'd)."`
	Plot           string      `default:"finetune-memory.png" help:"Write the memory timeline PNG here (empty: none)."`
	Compare        bool        `default:"true" negatable:"" help:"Replay the trace through gmlake, the Gorgonia pool and the caching allocator."`

	Eval bool `help:"Only evaluate the checkpoint's loss on DIR/reference.json's input_ids."`
	JSON bool `help:"With --eval: print one JSON line {\"loss\": ...}."`
}

func main() {
	var c cli
	ctx := kong.Parse(&c, kong.Description("Fine-tune a small GPT on gmlake memory."),
		kong.Vars{"presets": "gpt2-tiny, llama-tiny, gpt2-small, ..."})
	var err error
	if c.Eval {
		err = evaluate(c, os.Stdout)
	} else {
		err = finetune(c, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "finetune:", err)
		ctx.Exit(1)
	}
}

// scaleMemory fills in the memory settings left at 0. On a GPU gmlake's 2 MiB chunk is a ten
// thousandth of a 20 GB job; this demo's peak is 4.4 MiB, so its CPU run uses the finest unit host
// memory maps, the page (4 KiB: a thousandth), with half of it as the small threshold (PyTorch's
// 1 MiB under its 2 MiB segments; on this demo's trace 1.002 x peak active against 1.005 at an
// eighth, the ratio of the GPU default) and as the smallest stitched piece. With 64 KiB chunks
// (1.4% of the peak each) the rounding alone keeps the replay of the demo's trace above 1.03 x
// peak active; with 4 KiB it is within 1.01.
func (c *cli) scaleMemory() {
	if c.Granularity == 0 {
		c.Granularity = units.Bytes(os.Getpagesize())
	}
	if c.SmallThreshold == 0 {
		c.SmallThreshold = c.Granularity / 2
	}
	if c.MinStitch == 0 {
		c.MinStitch = c.Granularity / 2
	}
}
