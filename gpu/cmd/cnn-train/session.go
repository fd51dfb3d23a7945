package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand"
	"path/filepath"
	"slices"
	"time"

	"github.com/gmlake/gmlake/driver/cuda"
	"github.com/gmlake/gmlake/gpu"
	"github.com/gmlake/gmlake/gpu/cudnn"
	"github.com/gmlake/gmlake/gpu/graphexec"
	"github.com/gmlake/gmlake/gpu/internal/traincmd"
	"github.com/gmlake/gmlake/gpu/pool"
	"github.com/gmlake/gmlake/models"
	"github.com/gmlake/gmlake/train"
)

// env is the CUDA driver and cuDNN shared by every run.
type env struct {
	drv    *cuda.Driver
	dnn    *cudnn.Library
	math   cudnn.MathType
	device string
}

func openEnv(tf32 bool) (*env, error) {
	drv, err := cuda.New()
	if err != nil {
		return nil, err
	}
	lib, err := cudnn.Open()
	if err != nil {
		return nil, errors.Join(err, drv.Close())
	}
	math := cudnn.FMAMath
	if tf32 {
		math = cudnn.DefaultMath
	}
	return &env{drv: drv, dnn: lib, math: math,
		device: fmt.Sprintf("%s (%.0f GiB)", drv.Name(), float64(drv.TotalMem())/(1<<30))}, nil
}

func (e *env) close() { _ = e.drv.Close() }

func (e *env) cudnnVersion() string {
	v := e.dnn.Version()
	if v >= 10000 { // cuDNN 9: major*10000 + minor*100 + patch
		return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
	}
	return fmt.Sprintf("%d.%d.%d", v/1000, v/100%10, v%100)
}

// result is one model under one allocator.
type result struct {
	Model, Allocator string
	Batch            int
	Sizes            []int
	Steps            int
	TF32             bool
	Capacity         uint64
	WeightsBytes     uint64 // resident weights and optimizer state

	FirstStepMs   float64
	WarmupMs      float64 // the first pass over the sizes, in total
	StepMs        float64 // mean steady-state step
	StepMsMin     float64
	Round         int         // the round of this run (--rounds); in the table, 0 and every round's times folded
	RoundStepMs   []float64   `json:",omitempty"` // in the table: each round's mean steady step
	SteadyMs      []float64   // every steady step, in step order
	RoundSteadyMs [][]float64 `json:"-"` // in the table: each round's SteadyMs, for traincmd.PairedRatio
	PeakLive      uint64
	PeakReserved  uint64
	Fragmentation float64
	WarmupCalls   uint64
	CallsPerStep  float64
	StepCalls     []uint64
	CallsByKind   map[string]float64 `json:",omitempty"`
	// Wall time inside the allocator's Alloc and Free per steady step (traincmd.AllocClock), and
	// per call.
	AllocatorMsPerStep float64
	AllocatorNsPerCall float64
	// Requests to the allocator per steady step (every tensor, scratch and workspace), and of them
	// the convolution workspaces: all of them pass through the allocator, and so the trace.
	AllocsPerStep     float64
	WorkspacesPerStep float64
	WorkspaceMaxBytes uint64
	TraceAllocs       uint64 `json:",omitempty"` // allocations in the recorded trace (with --trace)
	DeviceAllocs      uint64 // allocations the Device made over the whole run
	FirstLoss         float32
	LastLoss          float32

	MaxBatch     int
	FailedBatch  int
	MaxBatchNote string `json:",omitempty"`
	Error        string `json:",omitempty"`
}

func (c *cli) weights(model string, log io.Writer) (*models.ResNetWeights, error) {
	cfg, err := models.ResNetPreset(model)
	if err != nil {
		return nil, err
	}
	cfg.Classes = c.Classes
	start := time.Now()
	w, err := models.InitResNet(cfg, 1, nil)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "%s: %s blocks %v, width %d, %d classes, %.2fM parameters, initialised in %v\n", model, cfg.Block,
		cfg.Layers, cfg.Width, cfg.Classes, float64(w.Params())/1e6, time.Since(start).Round(time.Millisecond))
	return w, nil
}

// sizes is the step sequence: a permutation of the sizes (the warm-up pass), then sizes drawn at
// random, the same for every allocator.
func (c *cli) sizes(n int) []int {
	rng := rand.New(rand.NewSource(1))
	seq := slices.Clone(c.Sizes)
	rng.Shuffle(len(seq), func(i, j int) { seq[i], seq[j] = seq[j], seq[i] })
	for len(seq) < n {
		seq = append(seq, train.Scales(c.Sizes).Pick(rng))
	}
	return seq[:n]
}

// run is one pool, device, cuDNN handle and trainer.
type run struct {
	c       *cli
	w       *models.ResNetWeights
	pool    pool.Pool
	dev     *gpu.Device
	dnn     *cudnn.Handle
	tr      *graphexec.Trainer
	graphs  map[[2]int]*models.ResNetGraph
	batches map[[2]int]train.ImageBatch
	task    train.ColorTask
	rec     *traincmd.Recorder // with --trace: the allocations, written at close
	clock   *traincmd.AllocClock
}

func (c *cli) session(e *env, model string, w *models.ResNetWeights, alloc string, log io.Writer) *result {
	r := c.newResult(model, alloc)
	if err := c.measure(e, w, r, log); err != nil {
		c.fail(r, err, log)
	}
	return r
}

// fail records a run's error in its result (after any it holds) and the log.
func (c *cli) fail(r *result, err error, log io.Writer) {
	if r.Error != "" {
		r.Error += "; "
	}
	r.Error += err.Error()
	fmt.Fprintf(log, "%s/%s: %v\n", r.Model, r.Allocator, err)
}

// newResult is an empty result of model under alloc, with the run's settings.
func (c *cli) newResult(model, alloc string) *result {
	return &result{Model: model, Allocator: alloc, Batch: c.Batch, Sizes: c.Sizes, Steps: c.Steps, TF32: c.TF32,
		Capacity: uint64(c.Capacity)}
}

func (c *cli) measure(e *env, w *models.ResNetWeights, r *result, log io.Writer) (err error) {
	ru, err := c.open(e, w, r)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, ru.close(r)) }()
	if err := ru.timed(r, log); err != nil {
		return err
	}
	return ru.after(r, log)
}

// open builds r's run: the pool, the device over it (through a trace recorder with --trace),
// cuDNN's handle and the trainer, the weights and optimizer state resident.
func (c *cli) open(e *env, w *models.ResNetWeights, r *result) (_ *run, err error) {
	p, err := pool.New(r.Allocator, e.drv, r.Capacity)
	if err != nil {
		return nil, err
	}
	task := train.DefaultColorTask
	task.Classes = c.Classes
	ru := &run{c: c, w: w, pool: p, graphs: map[[2]int]*models.ResNetGraph{}, batches: map[[2]int]train.ImageBatch{}, task: task}
	defer func() {
		if err != nil {
			err = errors.Join(err, ru.close(r))
		}
	}()
	ru.clock = traincmd.NewAllocClock(p)
	var alloc gpu.Allocator = ru.clock
	if c.Trace != "" {
		ru.rec = traincmd.NewRecorder(ru.clock, "cnn-train")
		alloc = ru.rec
	}
	if ru.dev, err = gpu.New(gpu.WithAllocator(alloc)); err != nil {
		return nil, err
	}
	if ru.dnn, err = graphexec.NewCuDNN(ru.dev, e.dnn, e.math); err != nil {
		return nil, err
	}
	g, err := ru.graph(c.Batch, c.Sizes[0])
	if err != nil {
		return nil, err
	}
	opt := gpu.AdamWConfig{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, MaxNorm: 1}
	if ru.tr, err = graphexec.NewTrainer(ru.dev, g.Graph(), opt, graphexec.WithCuDNN(ru.dnn)); err != nil {
		return nil, err
	}
	r.WeightsBytes = ru.dev.MemoryStats().LiveBytes
	return ru, nil
}

// after is what follows the timed steps: the batch search (--max-batch) and the count of the
// device's allocations, which the trace must hold whole.
func (ru *run) after(r *result, log io.Writer) error {
	var err error
	if ru.c.MaxBatch {
		err = ru.largestBatch(r, log)
	}
	r.DeviceAllocs = ru.dev.MemoryStats().Allocs
	if ru.rec != nil && ru.rec.Allocs() != r.DeviceAllocs {
		return errors.Join(err, fmt.Errorf("the trace holds %d allocations, the device made %d", ru.rec.Allocs(), r.DeviceAllocs))
	}
	return err
}

func (c *cli) header() string {
	return fmt.Sprintf("cnn-train --batch %d --sizes %v --steps %d --tf32=%t", c.Batch, c.Sizes, c.Steps, c.TF32)
}

func (ru *run) graph(batch, size int) (*models.ResNetGraph, error) {
	k := [2]int{batch, size}
	if g, ok := ru.graphs[k]; ok {
		return g, nil
	}
	g, err := models.BuildResNet(ru.w, models.ResNetOptions{Batch: batch, Height: size, Width: size})
	if err != nil {
		return nil, err
	}
	ru.graphs[k] = g
	return g, nil
}

// batch is the images of one shape, drawn once (the same for every allocator) so that the timed
// step holds no host-side data generation.
func (ru *run) batch(batch, size int) (train.ImageBatch, error) {
	k := [2]int{batch, size}
	if b, ok := ru.batches[k]; ok {
		return b, nil
	}
	b, err := ru.task.Batch(rand.New(rand.NewSource(int64(batch*1000+size))), batch, size, size)
	if err != nil {
		return b, err
	}
	ru.batches[k] = b
	return b, nil
}

func (ru *run) step(batch, size int) (float32, error) {
	g, err := ru.graph(batch, size)
	if err != nil {
		return 0, err
	}
	b, err := ru.batch(batch, size)
	if err != nil {
		return 0, err
	}
	if err := g.SetInputs(b.Images, b.Labels); err != nil {
		return 0, err
	}
	return ru.tr.StepBound(g.Graph())
}

// workspaces sums the convolution workspaces every machine of the run has taken.
func (ru *run) workspaces() (n int, maxBytes uint64) {
	for _, g := range ru.graphs {
		m, err := ru.tr.Machine(g.Graph())
		if err != nil {
			continue
		}
		ws := m.Workspaces()
		n += ws.Allocs
		maxBytes = max(maxBytes, ws.MaxBytes)
	}
	return n, maxBytes
}

// timed trains the step sequence alone and times it.
func (ru *run) timed(r *result, log io.Writer) error {
	st := ru.stepper(r)
	for s, size := range ru.c.sizes(ru.c.Steps) {
		if err := st.step(s, size); err != nil {
			return err
		}
	}
	st.finish(log)
	return nil
}

// try trains three steps at batch b; false (and no error) when the pool ran out of memory.
func (ru *run) try(b int) (bool, error) {
	defer func() {
		for k, g := range ru.graphs {
			if k[0] == b && b != ru.c.Batch {
				_ = ru.tr.DropGraph(g.Graph())
				delete(ru.graphs, k)
				delete(ru.batches, k)
			}
		}
		_ = ru.pool.Trim()
	}()
	return traincmd.FitsShapes(ru.c.Sizes, func(size int) error {
		_, err := ru.step(b, size)
		return err
	})
}

// largestBatch searches the largest batch from an estimate (the capacity left by the weights over
// the timed run's activation bytes per image), stepping by doubling strides until a success and
// a failure are known, then bisecting.
func (ru *run) largestBatch(r *result, log io.Writer) error {
	deadline := time.Now().Add(ru.c.BisectLimit)
	// The timed run's peak is at the largest size: the guess scales per image at that size.
	b := traincmd.FirstBatch(ru.c.Batch, r.PeakLive, r.WeightsBytes, r.Capacity)
	lo, hi, finished, err := traincmd.LargestBatch(ru.c.Batch, b, deadline, func(b int) (bool, error) {
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

// close writes the trace (--trace), then closes the trainer, cuDNN's handle, the device and the
// pool.
func (ru *run) close(r *result) error {
	var errs []error
	if ru.rec != nil {
		name := fmt.Sprintf("%s-%s", r.Model, r.Allocator)
		r.TraceAllocs = ru.rec.Allocs()
		errs = append(errs, ru.rec.Write(filepath.Join(ru.c.Trace, name+".trace.gz"), name, ru.c.header()))
	}
	if ru.tr != nil {
		errs = append(errs, ru.tr.Close())
	}
	if ru.dnn != nil {
		errs = append(errs, ru.dev.Do(ru.dnn.Close))
	}
	if ru.dev != nil {
		errs = append(errs, ru.dev.Close())
	}
	errs = append(errs, ru.pool.Close())
	return errors.Join(errs...)
}

func gib(n uint64) float64 { return float64(n) / (1 << 30) }
