package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"time"

	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/driver/cuda"
	"github.com/gmlake/gmlake/gpu"
	"github.com/gmlake/gmlake/gpu/graphexec"
	"github.com/gmlake/gmlake/gpu/internal/traincmd"
	"github.com/gmlake/gmlake/gpu/pool"
	"github.com/gmlake/gmlake/models"
)

// env is the CUDA driver shared by every run.
type env struct {
	drv    *cuda.Driver
	device string
}

func openEnv() (*env, error) {
	drv, err := cuda.New()
	if err != nil {
		return nil, err
	}
	return &env{drv: drv, device: fmt.Sprintf("%s (%.0f GiB)", drv.Name(), float64(drv.TotalMem())/(1<<30))}, nil
}

func (e *env) close() { _ = e.drv.Close() }

// result is one model under one allocator.
type result struct {
	Model, Allocator   string
	Batch              int
	Seqs               []int
	Steps              int
	Recompute, Offload bool
	Capacity           uint64
	WeightsBytes       uint64 // resident weights, adapters and optimizer state

	FirstStepMs   float64 // the very first step
	WarmupMs      float64 // the first pass over the sequence lengths, in total
	StepMs        float64 // mean steady-state step
	StepMsMin     float64
	Round         int       // the round of this run (--rounds); in the table, 0 and every round's times folded
	RoundStepMs   []float64 `json:",omitempty"` // in the table: each round's mean steady step
	PeakLive      uint64    // requested bytes live at the peak (weights included)
	PeakReserved  uint64
	Fragmentation float64  // 1 - PeakLive/PeakReserved
	WarmupCalls   uint64   // memory driver calls before the steady state (setup included)
	CallsPerStep  float64  // memory driver calls per steady-state step
	StepCalls     []uint64 // memory driver calls of each step, warm-up included
	// CallsByKind: gmlake's driver calls by kind and requests by outcome, per steady-state step.
	CallsByKind map[string]float64 `json:",omitempty"`
	// Wall time inside the pool's Alloc and Free per steady step (traincmd.AllocClock), and per call.
	AllocatorMsPerStep float64
	AllocatorNsPerCall float64
	Recomputes         int // recompute steps in the last step's program
	Offloads           int
	FirstLoss          float32
	LastLoss           float32

	MaxBatch     int    // largest batch that trained; 0 when not searched or none did
	FailedBatch  int    // smallest batch that failed (0: none failed within the search)
	MaxBatchNote string `json:",omitempty"`
	Error        string `json:",omitempty"`
}

// weights initialises the model's weights once; every allocator trains a copy on the device.
func (c *cli) weights(model string, log io.Writer) (*models.Weights, error) {
	cfg, err := models.Preset(model)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	w, err := models.InitWeights(cfg, 1, nil)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "%s: %d layers, hidden %d, vocab %d: weights initialised in %v\n", model, cfg.Layers,
		cfg.Hidden, cfg.Vocab, time.Since(start).Round(time.Millisecond))
	return w, nil
}

// shapes is the step sequence: a permutation of the lengths (the warm-up pass), then lengths drawn
// at random, the same for every allocator.
func (c *cli) shapes(n int) []int {
	rng := rand.New(rand.NewPCG(1, 2))
	seq := slices.Clone(c.Seqs)
	rng.Shuffle(len(seq), func(i, j int) { seq[i], seq[j] = seq[j], seq[i] })
	for len(seq) < n {
		seq = append(seq, c.Seqs[rng.IntN(len(c.Seqs))])
	}
	return seq[:n]
}

// run is one pool, device and trainer: the timed steps, then the batch search.
type run struct {
	c      *cli
	w      *models.Weights
	lora   *models.LoRA
	pool   pool.Pool
	dev    *gpu.Device
	tr     *graphexec.Trainer
	graphs map[[2]int]*models.Graph
	rng    *rand.Rand
	vocab  int
	clock  *traincmd.AllocClock // the time inside the pool
}

func (c *cli) session(e *env, model string, w *models.Weights, alloc string, log io.Writer) *result {
	r := &result{Model: model, Allocator: alloc, Batch: c.Batch, Seqs: c.Seqs, Steps: c.Steps,
		Recompute: c.Recompute, Offload: c.Offload, Capacity: uint64(c.Capacity)}
	if err := c.measure(e, w, r, log); err != nil {
		r.Error = err.Error()
		fmt.Fprintf(log, "%s/%s: %v\n", model, alloc, err)
	}
	return r
}

func (c *cli) measure(e *env, w *models.Weights, r *result, log io.Writer) (err error) {
	p, err := pool.New(r.Allocator, e.drv, r.Capacity)
	if err != nil {
		return err
	}
	ru := &run{c: c, w: w, pool: p, graphs: map[[2]int]*models.Graph{}, rng: rand.New(rand.NewPCG(3, 4)),
		vocab: w.Config.Vocab, lora: &models.LoRA{Rank: 16, Alpha: 32, Targets: c.LoRA, Seed: 1}}
	defer func() { err = errors.Join(err, ru.close()) }()
	ru.clock = traincmd.NewAllocClock(p)
	var alloc gpu.Allocator = ru.clock
	if c.Trace != "" {
		rec := traincmd.NewRecorder(ru.clock, "gpu-train")
		alloc = rec
		defer func() {
			name := fmt.Sprintf("%s-%s", r.Model, r.Allocator)
			err = errors.Join(err, rec.Write(filepath.Join(c.Trace, name+".trace.gz"), name, "gpu-train"))
		}()
	}
	if ru.dev, err = gpu.New(gpu.WithAllocator(alloc)); err != nil {
		return err
	}
	g, err := ru.graph(c.Batch, c.Seqs[0])
	if err != nil {
		return err
	}
	opt := gpu.AdamWConfig{LR: 1e-4, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, MaxNorm: 1}
	if ru.tr, err = graphexec.NewTrainer(ru.dev, g, opt, graphexec.WithRecompute(c.Recompute),
		graphexec.WithOffload(c.Offload)); err != nil {
		return err
	}
	r.WeightsBytes = ru.dev.MemoryStats().LiveBytes
	if err := ru.timed(r, log); err != nil {
		return err
	}
	if c.MaxBatch {
		return ru.largestBatch(r, log)
	}
	return nil
}

func (ru *run) graph(batch, seq int) (*models.Graph, error) {
	if g, ok := ru.graphs[[2]int{batch, seq}]; ok {
		return g, nil
	}
	g, err := models.Build(ru.w, models.BuildOptions{Batch: batch, Seq: seq, LoRA: ru.lora})
	if err != nil {
		return nil, err
	}
	ru.graphs[[2]int{batch, seq}] = g
	return g, nil
}

func (ru *run) step(batch, seq int) (float32, error) {
	g, err := ru.graph(batch, seq)
	if err != nil {
		return 0, err
	}
	ids := make([]int, batch*seq)
	for i := range ids {
		ids[i] = ru.rng.IntN(ru.vocab)
	}
	return ru.tr.StepGraph(g, ids)
}

// timed runs the configured steps and fills in the time, memory and call figures.
func (ru *run) timed(r *result, log io.Writer) error {
	c := ru.c
	ru.dev.ResetPeak()
	l := traincmd.NewStepLog(ru.pool, ru.clock, len(c.Seqs))
	for s, seq := range c.shapes(c.Steps) {
		if err := l.Step(s, func() (float32, error) { return ru.step(c.Batch, seq) }); err != nil {
			return fmt.Errorf("step %d (batch %d, seq %d): %w", s, c.Batch, seq, err)
		}
	}
	r.FirstStepMs, r.WarmupMs, r.FirstLoss, r.LastLoss = l.FirstMs, l.WarmupMs, l.FirstLoss, l.LastLoss
	r.StepMs, r.StepMsMin = l.MeanMs(), l.MinMs()
	r.WarmupCalls, r.StepCalls, r.CallsPerStep, r.CallsByKind = l.WarmupCalls, l.StepCalls, l.CallsPerStep(), l.CallsByKind()
	r.AllocatorMsPerStep, r.AllocatorNsPerCall = l.AllocatorTime()
	r.PeakLive, r.PeakReserved = ru.dev.MemoryStats().PeakLiveBytes, ru.pool.PeakReserved()
	r.Fragmentation = bench.Fragmentation(r.PeakLive, r.PeakReserved)
	if m, err := ru.tr.Machine(ru.graphs[[2]int{c.Batch, c.Seqs[0]}]); err == nil {
		r.Recomputes, r.Offloads = m.Counts().Recomputes, m.Counts().Offloads
	}
	fmt.Fprintf(log, "%s/%s: warm-up %.0f ms, steady %.1f ms/step, peak reserved %.2f GiB (live %.2f GiB), %.2f ms/step in the allocator (%.0f ns per call), %.1f calls/step %v, loss %.3f -> %.3f\n",
		r.Model, r.Allocator, r.WarmupMs, r.StepMs, gib(r.PeakReserved), gib(r.PeakLive), r.AllocatorMsPerStep, r.AllocatorNsPerCall,
		r.CallsPerStep, r.CallsByKind, r.FirstLoss, r.LastLoss)
	return nil
}

// try trains three steps at batch b; false (and no error) when the pool ran out of memory.
func (ru *run) try(b int) (bool, error) {
	defer func() {
		for k, g := range ru.graphs {
			if k[0] == b && b != ru.c.Batch {
				_ = ru.tr.DropGraph(g)
				delete(ru.graphs, k)
			}
		}
		_ = ru.pool.Trim()
	}()
	return traincmd.FitsShapes(ru.c.Seqs, func(seq int) error {
		_, err := ru.step(b, seq)
		return err
	})
}

// largestBatch searches the largest batch from an estimate: the capacity left by the resident
// weights over the activation bytes per sample of the timed run's peak (the batch at which direct
// cuMemAlloc, which never fragments, would just fit). From there it steps up (after a success) or
// down (after a failure) by doubling strides until both a success and a failure are known, then
// bisects. The timed run's batch is known to work.
func (ru *run) largestBatch(r *result, log io.Writer) error {
	deadline := time.Now().Add(ru.c.BisectLimit)
	b := traincmd.FirstBatch(ru.c.Batch, r.PeakLive, r.WeightsBytes, r.Capacity)
	hostMax, avail := ru.hostBound()
	lo, hi, finished, err := traincmd.LargestBatch(ru.c.Batch, b, deadline, func(b int) (bool, error) {
		if hostMax > 0 && b > hostMax {
			// Not tried: the host could not pin its activations (see hostShare).
			fmt.Fprintf(log, "%s/%s: batch %d: not tried: its offloaded activations would pin more than %.0f%% of the host's %.1f GiB available\n",
				r.Model, r.Allocator, b, 100*hostShare, gib(avail))
			r.MaxBatchNote = fmt.Sprintf("offload: batches above %d not tried (host memory)", hostMax)
			return false, nil
		}
		start := time.Now()
		ok, err := ru.try(b)
		if err != nil {
			return false, fmt.Errorf("batch %d: %w", b, err)
		}
		fmt.Fprintf(log, "%s/%s: batch %d: %v in %v (peak reserved %.2f GiB)\n", r.Model, r.Allocator, b,
			map[bool]string{true: "ok", false: "out of memory"}[ok], time.Since(start).Round(time.Millisecond),
			gib(ru.pool.PeakReserved()))
		return ok, nil
	})
	if err != nil {
		return err
	}
	if !finished {
		r.MaxBatchNote = "search stopped at --bisect-limit"
	}
	r.MaxBatch, r.FailedBatch = lo, hi
	return nil
}

func (ru *run) close() error {
	var errs []error
	if ru.tr != nil {
		errs = append(errs, ru.tr.Close())
	}
	if ru.dev != nil {
		errs = append(errs, ru.dev.Close())
	}
	errs = append(errs, ru.pool.Close())
	return errors.Join(errs...)
}

func gib(n uint64) float64 { return float64(n) / (1 << 30) }
