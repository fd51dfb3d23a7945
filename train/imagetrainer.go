package train

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/gmlake/gmlake/models"
	"github.com/gmlake/gmlake/train/vm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ImageTrainer trains a ResNet (package models) on memory from an allocator: weights, optimizer
// state, images, labels, activations, gradients and temporaries all come from it. It keeps one
// graph and machine per input shape (batch, height, width), all binding the same weights, so
// multi-scale training (a new image size every step) costs one graph build per size.
type ImageTrainer struct {
	cfg     config
	log     *slog.Logger
	alloc   vm.Allocator
	model   *models.ResNetWeights
	weights *deviceWeights
	opt     *optimizer
	shapes  map[imageShape]*imageGraph
	steps   int
}

type imageShape struct{ batch, h, w int }

type imageGraph struct {
	g *models.ResNetGraph
	m *vm.Machine
}

// ImageStepResult is what one training step of an ImageTrainer measured.
type ImageStepResult struct {
	Step          int
	Loss          float64
	GradNorm      float64
	Batch         int
	Height, Width int
	Machine       vm.Stats
}

// NewImageTrainer moves w's tensors into allocator memory (w.Tensors refers to them until Close)
// and prepares to train it with AdamW. Of the options, WithAdamW, WithLogger, WithRecompute and
// WithOffload (per residual block) apply.
func NewImageTrainer(w *models.ResNetWeights, alloc vm.Allocator, opts ...Option) (*ImageTrainer, error) {
	if w == nil || alloc == nil {
		return nil, fmt.Errorf("%w: nil weights or allocator", ErrBatch)
	}
	if err := vm.CheckHostMemory(alloc); err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	cfg := config{adamw: DefaultAdamW}
	for _, o := range opts {
		o(&cfg)
	}
	t := &ImageTrainer{cfg: cfg, log: cfg.logger, alloc: alloc, model: w, shapes: make(map[imageShape]*imageGraph)}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	dw, err := newDeviceWeights(w.Tensors, alloc)
	if err != nil {
		return nil, errors.Join(err, dw.Close())
	}
	t.weights = dw
	t.opt = newOptimizer(cfg.adamw, alloc)
	return t, nil
}

// Step trains on one batch: forward, backward, AdamW.
func (t *ImageTrainer) Step(b ImageBatch) (ImageStepResult, error) {
	if it, ok := t.alloc.(interface{ Iteration(int) }); ok {
		it.Iteration(t.steps)
	}
	if m, ok := t.alloc.(interface{ MarkIteration() }); ok {
		m.MarkIteration()
	}
	c, err := t.graph(b)
	if err != nil {
		return ImageStepResult{}, err
	}
	loss, err := t.run(c, b)
	if err != nil {
		return ImageStepResult{}, err
	}
	defer c.m.Reset()
	norm, err := t.opt.StepMachine(c.m, c.g.Params, c.g.Grads, c.g.Names)
	if err != nil {
		return ImageStepResult{}, err
	}
	t.steps++
	res := ImageStepResult{Step: t.steps, Loss: loss, GradNorm: norm, Batch: b.N, Height: b.H, Width: b.W, Machine: c.m.LastRun()}
	t.log.Debug("train: image step", "step", res.Step, "loss", loss, "grad_norm", norm, "batch", b.N, "height", b.H, "width", b.W)
	return res, nil
}

// Steps is the number of training steps taken.
func (t *ImageTrainer) Steps() int { return t.steps }

// Shapes is the number of input shapes (graphs) built so far.
func (t *ImageTrainer) Shapes() int { return len(t.shapes) }

// WeightBytes is the size of the model's tensors in allocator memory.
func (t *ImageTrainer) WeightBytes() int64 { return t.weights.bytes() }

// Close frees the machines, the optimizer state and the device weights (copied back to the heap).
func (t *ImageTrainer) Close() error {
	var errs []error
	for _, c := range t.shapes {
		errs = append(errs, c.m.Close())
	}
	t.shapes = nil
	errs = append(errs, t.opt.Close(), t.weights.Close())
	return errors.Join(errs...)
}

func (t *ImageTrainer) graph(b ImageBatch) (*imageGraph, error) {
	c := t.model.Config
	if b.N <= 0 || b.C != c.InChannels || b.H <= 0 || b.W <= 0 || len(b.Images) != b.N*b.C*b.H*b.W || len(b.Labels) != b.N {
		return nil, fmt.Errorf("%w: %d pixels and %d labels as %d×%d×%d×%d images (the model takes %d channels)",
			ErrBatch, len(b.Images), len(b.Labels), b.N, b.C, b.H, b.W, c.InChannels)
	}
	for _, l := range b.Labels {
		if l < 0 || l >= c.Classes {
			return nil, fmt.Errorf("%w: label %d outside [0, %d)", ErrBatch, l, c.Classes)
		}
	}
	key := imageShape{b.N, b.H, b.W}
	if g, ok := t.shapes[key]; ok {
		return g, nil
	}
	g, err := models.BuildResNet(t.model, models.ResNetOptions{Batch: b.N, Height: b.H, Width: b.W})
	if err != nil {
		return nil, fmt.Errorf("train: build graph for %d images of %d×%d: %w", b.N, b.H, b.W, err)
	}
	if err := t.weights.bind(g.Params); err != nil {
		return nil, err
	}
	m, err := vm.New(g.G, t.alloc, vm.WithOutputs(g.Loss), vm.WithOutputs(g.Grads...), vm.WithForward(g.Loss),
		vm.WithLogger(t.cfg.logger), vm.WithIterationMarks(false),
		vm.WithBlocks(vm.Blocks{Of: g.BlockOf, Inputs: g.BlockInputs}),
		vm.WithRecompute(t.cfg.recompute), vm.WithOffload(t.cfg.offload))
	if err != nil {
		return nil, err
	}
	t.log.Debug("train: built image graph", "batch", b.N, "height", b.H, "width", b.W, "nodes", len(g.G.AllNodes()))
	ig := &imageGraph{g: g, m: m}
	t.shapes[key] = ig
	return ig, nil
}

// run copies the images and labels into allocator memory for the step (as a GPU trainer uploads
// its input batch), binds them and runs the machine, returning the loss.
func (t *ImageTrainer) run(c *imageGraph, b ImageBatch) (float64, error) {
	imgSize, lblSize := int64(len(b.Images))*4, int64(len(b.Labels))*int64(tensor.Int.Size())
	imgMem, err := t.alloc.Get(imgSize)
	if err != nil {
		return 0, fmt.Errorf("train: images: %w", err)
	}
	lblMem, err := t.alloc.Get(lblSize)
	if err != nil {
		return 0, errors.Join(fmt.Errorf("train: labels: %w", err), t.alloc.Free(imgMem, imgSize))
	}
	img := tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(b.N, b.C, b.H, b.W), tensor.FromMemory(imgMem.Uintptr(), uintptr(imgSize)))
	copy(img.Data().([]float32), b.Images)
	lbl := tensor.New(tensor.Of(tensor.Int), tensor.WithShape(b.N), tensor.FromMemory(lblMem.Uintptr(), uintptr(lblSize)))
	copy(lbl.Data().([]int), b.Labels)
	runErr := gorgonia.Let(c.g.Images, img)
	if runErr == nil {
		runErr = gorgonia.Let(c.g.Labels, lbl)
	}
	if runErr == nil {
		runErr = c.m.RunAll()
	}
	freeErr := errors.Join(t.alloc.Free(imgMem, imgSize), t.alloc.Free(lblMem, lblSize))
	if err := errors.Join(runErr, freeErr); err != nil {
		return 0, err
	}
	return scalar(c.m.Value(c.g.Loss))
}
