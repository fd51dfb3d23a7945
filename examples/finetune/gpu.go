package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand"
	"time"

	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/driver/cuda"
	"github.com/gmlake/gmlake/gpu"
	"github.com/gmlake/gmlake/gpu/graphexec"
	"github.com/gmlake/gmlake/gpu/pool"
	"github.com/gmlake/gmlake/internal/units"
	"github.com/gmlake/gmlake/models"
	"github.com/gmlake/gmlake/train"
)

// finetuneOnGPU runs the measured fine-tuning on the GPU when the flags and the machine allow it:
// the same data, optimizer, LoRA, recomputation and offload settings and variable lengths as the
// CPU run, every device buffer from gmlake's engine over driver/cuda. It reports whether it ran.
// Without a usable GPU, auto falls back to the CPU and gpu is an error.
func finetuneOnGPU(c cli, w *models.Weights, task train.Counting, out io.Writer, start time.Time) (ran bool, err error) {
	if c.Device == "cpu" {
		return false, nil
	}
	drv, err := cuda.New()
	if errors.Is(err, cuda.ErrUnavailable) {
		if c.Device == "gpu" {
			return true, fmt.Errorf("--device gpu: %w", err)
		}
		fmt.Fprintf(out, "fine-tuning on the CPU: %v\n", err)
		return false, nil
	}
	if err != nil {
		return true, err
	}
	g := &gpuRun{c: c, w: w, task: task, lora: loraFor(c, w.Config.Arch), graphs: map[int]*models.Graph{}}
	defer func() { err = errors.Join(err, g.close(), drv.Close()) }()
	if g.pool, err = pool.New("gmlake", drv, 0); err != nil {
		return true, err
	}
	if g.dev, err = gpu.New(gpu.WithAllocator(g.pool)); err != nil {
		return true, err
	}
	_, workload := options(c, w.Config.Arch)
	fmt.Fprintf(out, "fine-tuning on %s, device memory from gmlake (stitching engine over driver/cuda)\n", g.dev.Name())
	return true, g.run(out, workload, start)
}

type gpuRun struct {
	c      cli
	w      *models.Weights
	task   train.Counting
	lora   *models.LoRA
	pool   pool.Pool
	dev    *gpu.Device
	tr     *graphexec.Trainer
	graphs map[int]*models.Graph // by sequence length
}

func (g *gpuRun) graph(seq int) (*models.Graph, error) {
	if gr, ok := g.graphs[seq]; ok {
		return gr, nil
	}
	gr, err := models.Build(g.w, models.BuildOptions{Batch: g.c.Batch, Seq: seq, LoRA: g.lora})
	if err != nil {
		return nil, err
	}
	g.graphs[seq] = gr
	return gr, nil
}

// flat lays a batch of equal-length sequences out row-major.
func flat(batch [][]int) []int {
	var out []int
	for _, row := range batch {
		out = append(out, row...)
	}
	return out
}

func (g *gpuRun) run(out io.Writer, workload string, start time.Time) error {
	c, maxPos := g.c, g.w.Config.MaxPositions
	held := g.task.Batch(rand.New(rand.NewSource(c.Seed+3)), c.Batch,
		seqLen(rand.New(rand.NewSource(0)), cli{MinSeq: c.MaxSeq, MaxSeq: c.MaxSeq, Bucket: c.Bucket}, maxPos))
	heldGraph, err := g.graph(len(held[0]))
	if err != nil {
		return err
	}
	a := adamW(c)
	cfg := gpu.AdamWConfig{LR: float32(a.LR), Beta1: float32(a.Beta1), Beta2: float32(a.Beta2), Eps: float32(a.Eps),
		WeightDecay: float32(a.WeightDecay), MaxNorm: float32(a.ClipNorm)}
	if g.tr, err = graphexec.NewTrainer(g.dev, heldGraph, cfg, graphexec.WithRecompute(c.Recompute),
		graphexec.WithOffload(c.Offload)); err != nil {
		return err
	}
	before, err := g.tr.Loss(heldGraph, flat(held))
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewSource(c.Seed + 2))
	var first, last float32
	t0 := time.Now()
	for i := range c.Steps {
		batch := g.task.Batch(rng, c.Batch, seqLen(rng, c, maxPos))
		gr, err := g.graph(len(batch[0]))
		if err != nil {
			return err
		}
		loss, err := g.tr.StepGraph(gr, flat(batch))
		if err != nil {
			return fmt.Errorf("step %d (seq %d): %w", i, len(batch[0]), err)
		}
		if i == 0 {
			first = loss
		}
		last = loss
	}
	elapsed := time.Since(t0)
	after, err := g.tr.Loss(heldGraph, flat(held))
	if err != nil {
		return err
	}
	mem := g.dev.MemoryStats()
	reserved := g.pool.PeakReserved()
	frag := bench.Fragmentation(mem.PeakLiveBytes, reserved)
	fmt.Fprintf(out, "workload %s on the GPU: %d steps in %.1fs (%.0f ms/step), %d graphs (one per sequence-length bucket)\n",
		workload, c.Steps, elapsed.Seconds(), float64(elapsed.Milliseconds())/float64(c.Steps), len(g.graphs))
	fmt.Fprintf(out, "loss: held-out %.3f -> %.3f, training %.3f -> %.3f\n", before, after, first, last)
	fmt.Fprintf(out, "gmlake (GPU memory) during the run: peak active %s, peak reserved %s, fragmentation %.3f, %d driver calls; total time %.1fs\n",
		units.FormatBytes(mem.PeakLiveBytes), units.FormatBytes(reserved), frag, g.pool.DriverCalls(), time.Since(start).Seconds())
	return nil
}

func (g *gpuRun) close() error {
	var errs []error
	if g.tr != nil {
		errs = append(errs, g.tr.Close())
	}
	if g.dev != nil {
		errs = append(errs, g.dev.Close())
	}
	if g.pool != nil {
		errs = append(errs, g.pool.Close())
	}
	return errors.Join(errs...)
}
