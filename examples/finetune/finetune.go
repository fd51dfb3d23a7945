package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand"
	"strings"
	"time"

	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/internal/progress"
	"github.com/gmlake/gmlake/internal/units"
	"github.com/gmlake/gmlake/models"
	"github.com/gmlake/gmlake/trace"
	"github.com/gmlake/gmlake/train"
	"github.com/gmlake/gmlake/train/vm"
	"github.com/schollz/progressbar/v3"
)

// defaultTargets adapts every linear projection of the architecture.
var defaultTargets = map[string][]string{
	models.ArchGPT2:  {"c_attn", "c_proj", "c_fc"},
	models.ArchLlama: {"q", "k", "v", "o", "gate", "up", "down"},
}

func loadModel(c cli) (*models.Weights, error) {
	if c.Checkpoint != "" {
		cfg, err := models.LoadConfig(c.Checkpoint)
		if err != nil {
			return nil, err
		}
		return models.LoadWeights(c.Checkpoint, cfg, nil)
	}
	cfg, err := models.Preset(c.Preset)
	if err != nil {
		return nil, err
	}
	if c.Layers > 0 {
		cfg.Layers = c.Layers
	}
	if c.Hidden > 0 {
		cfg.Hidden, cfg.Intermediate = c.Hidden, 4*c.Hidden
	}
	if c.Heads > 0 {
		cfg.Heads, cfg.KVHeads = c.Heads, c.Heads
	}
	return models.InitWeights(cfg, c.Seed, nil)
}

// adamW is the fine-tuning optimizer the flags ask for (on the CPU and on the GPU).
func adamW(c cli) train.AdamW {
	adamw := train.DefaultAdamW
	adamw.LR, adamw.Beta2, adamw.WeightDecay, adamw.ClipNorm = 3e-3, 0.99, 0, c.Clip
	if c.LoRA {
		adamw.LR = 1e-2
	}
	if c.LR > 0 {
		adamw.LR = c.LR
	}
	return adamw
}

// loraFor is the LoRA configuration the flags ask for, nil for full fine-tuning.
func loraFor(c cli, arch string) *models.LoRA {
	if !c.LoRA {
		return nil
	}
	targets := c.LoRATargets
	if len(targets) == 0 {
		targets = defaultTargets[arch]
	}
	return &models.LoRA{Rank: c.LoRARank, Alpha: c.LoRAAlpha, Targets: targets, Seed: c.Seed}
}

// options turns the flags into trainer options and a workload name in the traces' naming scheme.
func options(c cli, arch string) ([]train.Option, string) {
	name := c.Preset
	if c.Checkpoint != "" {
		name = strings.TrimSuffix(c.Checkpoint[strings.LastIndex(c.Checkpoint, "/")+1:], "/")
	}
	opts := []train.Option{train.WithRecompute(c.Recompute), train.WithOffload(c.Offload)}
	if lora := loraFor(c, arch); lora != nil {
		opts = append(opts, train.WithLoRA(lora))
		name += "-lora"
	} else {
		name += "-full"
	}
	if c.Recompute {
		name += "-ckpt"
	}
	if c.Offload {
		name += "-off"
	}
	return append(opts, train.WithAdamW(adamW(c))), name
}

// seqLen draws a sequence length in [min, max] and rounds it up to its bucket.
func seqLen(rng *rand.Rand, c cli, maxPos int) int {
	n := c.MinSeq + rng.Intn(c.MaxSeq-c.MinSeq+1)
	if c.Bucket > 1 {
		n = (n + c.Bucket - 1) / c.Bucket * c.Bucket
	}
	return max(2, min(n, maxPos))
}

func validate(c cli) error {
	switch {
	case c.Steps < 1 || c.Batch < 1:
		return errors.New("--steps and --batch must be positive")
	case c.MinSeq < 2 || c.MaxSeq < c.MinSeq:
		return fmt.Errorf("sequence lengths [%d, %d]: want 2 <= min <= max", c.MinSeq, c.MaxSeq)
	}
	return nil
}

func finetune(c cli, out io.Writer) error {
	c.scaleMemory()
	if err := validate(c); err != nil {
		return err
	}
	start := time.Now()
	w, err := loadModel(c)
	if err != nil {
		return err
	}
	cfg := w.Config
	task := train.DefaultCounting
	if err := task.Validate(cfg.Vocab); err != nil {
		return err
	}
	fmt.Fprintf(out, "model %s: %d layers, hidden %d, %d heads, vocab %d, %.2fM parameters\n",
		cfg.Arch, cfg.Layers, cfg.Hidden, cfg.Heads, cfg.Vocab, float64(cfg.ParamCount())/1e6)
	if c.LoRA && c.Checkpoint == "" && c.Pretrain > 0 {
		if err := pretrain(c, w, task, out); err != nil {
			return err
		}
		task.Down = true // LoRA now adapts the counting model to count downwards
	}
	if onGPU, err := finetuneOnGPU(c, w, task, out, start); onGPU || err != nil {
		return err
	}
	opts, workload := options(c, cfg.Arch)
	mem, err := newMemory(c)
	if err != nil {
		return err
	}
	rec := train.NewRecorder(mem.alloc)
	tr, err := train.New(w, rec, opts...)
	if err != nil {
		return errors.Join(err, mem.Close())
	}
	res, runErr := run(c, tr, task, cfg.MaxPositions, out)
	var live memoryFigures
	if mem.gmlake != nil {
		st := mem.gmlake.Stats()
		live = memoryFigures{peakActive: st.PeakLiveBytes, peakReserved: st.PeakReservedBytes, ok: true}
	}
	if err := errors.Join(runErr, tr.Close(), mem.Close()); err != nil {
		return err
	}
	t := rec.Trace(workload, fmt.Sprintf("recorded by examples/finetune: %d steps, batch %d, seq %d..%d (bucket %d), %s memory",
		c.Steps, c.Batch, c.MinSeq, c.MaxSeq, c.Bucket, c.Allocator))
	res.print(out, c, workload, t, live, time.Since(start))
	if c.Trace != "" {
		if err := trace.WriteFile(c.Trace, t); err != nil {
			return err
		}
		fmt.Fprintf(out, "trace: %s (%d events)\n", c.Trace, len(t.Events))
	}
	if !c.Compare {
		return nil
	}
	return compare(out, workload, t, uint64(c.Granularity), gmlakeOptions(c), c.Plot)
}

// pretrain teaches the random-init base model the upward counting task on the Go heap.
func pretrain(c cli, w *models.Weights, task train.Counting, out io.Writer) error {
	adamw := train.DefaultAdamW
	adamw.LR, adamw.Beta2, adamw.WeightDecay = 3e-3, 0.99, 0
	tr, err := train.New(w, &vm.GoAllocator{}, train.WithAdamW(adamw))
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewSource(c.Seed + 1))
	var loss float64
	t0 := time.Now()
	for range c.Pretrain {
		r, err := tr.Step(task.Batch(rng, c.Batch, seqLen(rng, c, w.Config.MaxPositions)))
		if err != nil {
			return errors.Join(err, tr.Close())
		}
		loss = r.Loss
	}
	fmt.Fprintf(out, "pretrained the base model to count upwards: %d full steps on the Go heap, loss %.3f (%.1fs, not measured)\n",
		c.Pretrain, loss, time.Since(t0).Seconds())
	return tr.Close()
}

// runResult is what the measured fine-tuning phase produced.
type runResult struct {
	before, after float64 // held-out loss
	first, last   float64 // training loss of the first and last step
	shapes        int
	weightBytes   int64
	machine       vm.Stats // of the last step's machine
	elapsed       time.Duration
}

type memoryFigures struct {
	peakActive, peakReserved uint64
	ok                       bool
}

func run(c cli, tr *train.Trainer, task train.Counting, maxPos int, out io.Writer) (runResult, error) {
	var res runResult
	rng := rand.New(rand.NewSource(c.Seed + 2))
	held := task.Batch(rand.New(rand.NewSource(c.Seed+3)), c.Batch, seqLen(rand.New(rand.NewSource(0)), cli{MinSeq: c.MaxSeq, MaxSeq: c.MaxSeq, Bucket: c.Bucket}, maxPos))
	var err error
	if res.before, err = tr.Loss(held); err != nil {
		return res, err
	}
	drawn := progress.OnTerminal(out) // a log or a pipe gets no carriage-return frames
	bar := progressbar.NewOptions(c.Steps, progressbar.OptionSetWriter(out), progressbar.OptionSetWidth(30),
		progressbar.OptionSetVisibility(drawn), progressbar.OptionShowCount(), progressbar.OptionSetDescription("fine-tuning"),
		progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionOnCompletion(func() {
			if drawn {
				fmt.Fprintln(out)
			}
		}))
	t0 := time.Now()
	for i := range c.Steps {
		r, err := tr.Step(task.Batch(rng, c.Batch, seqLen(rng, c, maxPos)))
		if err != nil {
			return res, err
		}
		if i == 0 {
			res.first = r.Loss
		}
		res.last, res.machine = r.Loss, r.Machine
		bar.Describe(fmt.Sprintf("loss %6.3f  seq %3d", r.Loss, r.Seq))
		_ = bar.Add(1)
	}
	res.elapsed = time.Since(t0)
	res.shapes, res.weightBytes = tr.Shapes(), tr.WeightBytes()
	res.after, err = tr.Loss(held)
	return res, err
}

func (r runResult) print(out io.Writer, c cli, workload string, t *trace.Trace, live memoryFigures, total time.Duration) {
	fmt.Fprintf(out, "workload %s: %d steps in %.1fs (%.0f ms/step), %d graphs (one per sequence-length bucket)\n",
		workload, c.Steps, r.elapsed.Seconds(), float64(r.elapsed.Milliseconds())/float64(c.Steps), r.shapes)
	fmt.Fprintf(out, "loss: held-out %.3f -> %.3f, training %.3f -> %.3f\n", r.before, r.after, r.first, r.last)
	fmt.Fprintf(out, "weights in allocator memory: %s; last step's program: %d steps, %d recomputed, %s offloaded, %d results copied from the Go heap\n",
		units.FormatBytes(uint64(r.weightBytes)), r.machine.ProgramLen, r.machine.Recomputed,
		units.FormatBytes(uint64(r.machine.OffloadedBytes)), r.machine.CopiedResults)
	if live.ok {
		frag := bench.Fragmentation(live.peakActive, live.peakReserved)
		fmt.Fprintf(out, "gmlake (real host memory) during the run: peak active %s, peak reserved %s, fragmentation %.3f\n",
			units.FormatBytes(live.peakActive), units.FormatBytes(live.peakReserved), frag)
	}
	fmt.Fprintf(out, "trace: %d events, %d iterations; total time %.1fs\n", len(t.Events), len(t.Iterations()), total.Seconds())
}
