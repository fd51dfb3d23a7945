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

// ErrBatch is returned for a batch of token sequences the trainer cannot use.
var ErrBatch = errors.New("train: bad batch")

// Trainer fine-tunes a model on memory from an allocator: weights, optimizer state, token ids,
// activations, gradients and temporaries all come from it. It keeps one graph and machine per
// (batch, sequence length) shape, all binding the same weights.
type Trainer struct {
	cfg     config
	log     *slog.Logger
	alloc   vm.Allocator
	model   *models.Weights
	weights *deviceWeights
	opt     *optimizer
	shapes  map[shape]*compiled
	steps   int
}

type shape struct{ batch, seq int }

// compiled is one shape's graph with its machines, built on first use.
type compiled struct {
	g     *models.Graph
	train *vm.Machine // loss and gradients
	eval  *vm.Machine // loss only
}

// StepResult is what one training step measured.
type StepResult struct {
	Step     int
	Loss     float64
	GradNorm float64 // global gradient norm before clipping
	Batch    int
	Seq      int
	Machine  vm.Stats // what the shape's machine did in this step
}

// New moves w's tensors into allocator memory (w.Tensors then refers to them until Close) and
// prepares to train it.
func New(w *models.Weights, alloc vm.Allocator, opts ...Option) (*Trainer, error) {
	cfg := config{adamw: DefaultAdamW}
	for _, o := range opts {
		o(&cfg)
	}
	if err := vm.CheckHostMemory(alloc); err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	t := &Trainer{cfg: cfg, log: cfg.logger, alloc: alloc, shapes: make(map[shape]*compiled)}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	dw, err := newDeviceWeights(w.Tensors, alloc)
	if err != nil {
		return nil, errors.Join(err, dw.Close())
	}
	t.model, t.weights = w, dw
	t.opt = newOptimizer(cfg.adamw, alloc)
	return t, nil
}

// Step trains on one batch of token sequences of equal length: forward, backward, AdamW.
func (t *Trainer) Step(ids [][]int) (StepResult, error) {
	if it, ok := t.alloc.(interface{ Iteration(int) }); ok {
		it.Iteration(t.steps)
	}
	t.markIteration()
	c, err := t.compiled(ids)
	if err != nil {
		return StepResult{}, err
	}
	if c.train == nil {
		if c.train, err = t.machine(c.g, true); err != nil {
			return StepResult{}, err
		}
	}
	loss, err := t.run(c.train, c.g, ids)
	if err != nil {
		return StepResult{}, err
	}
	defer c.train.Reset()
	norm, err := t.opt.StepMachine(c.train, c.g.Params, c.g.Grads, c.g.Names)
	if err != nil {
		return StepResult{}, err
	}
	t.steps++
	res := StepResult{Step: t.steps, Loss: loss, GradNorm: norm, Batch: len(ids), Seq: len(ids[0]), Machine: c.train.LastRun()}
	t.log.Debug("train: step", "step", res.Step, "loss", loss, "grad_norm", norm, "batch", res.Batch, "seq", res.Seq)
	return res, nil
}

// markIteration tells the allocator that a step (or an evaluation) begins, when it takes the hint:
// gmlake then replays the placements of the last step of the same shape.
func (t *Trainer) markIteration() {
	if m, ok := t.alloc.(interface{ MarkIteration() }); ok {
		m.MarkIteration()
	}
}

// Loss evaluates the mean cross-entropy of the model on ids without training.
func (t *Trainer) Loss(ids [][]int) (float64, error) {
	t.markIteration()
	c, err := t.compiled(ids)
	if err != nil {
		return 0, err
	}
	if c.eval == nil {
		if c.eval, err = t.machine(c.g, false); err != nil {
			return 0, err
		}
	}
	defer c.eval.Reset()
	return t.run(c.eval, c.g, ids)
}

// Steps is the number of training steps taken.
func (t *Trainer) Steps() int { return t.steps }

// WeightBytes is the size of the model's tensors in allocator memory.
func (t *Trainer) WeightBytes() int64 { return t.weights.bytes() }

// Shapes is the number of (batch, sequence length) graphs built so far.
func (t *Trainer) Shapes() int { return len(t.shapes) }

// Close frees the machines, the optimizer state and the device weights (copied back to the heap).
func (t *Trainer) Close() error {
	var errs []error
	for _, c := range t.shapes {
		if c.train != nil {
			errs = append(errs, c.train.Close())
		}
		if c.eval != nil {
			errs = append(errs, c.eval.Close())
		}
	}
	t.shapes = nil
	errs = append(errs, t.opt.Close(), t.weights.Close())
	return errors.Join(errs...)
}

func (t *Trainer) compiled(ids [][]int) (*compiled, error) {
	if len(ids) == 0 || len(ids[0]) < 2 {
		return nil, fmt.Errorf("%w: need at least one sequence of two tokens", ErrBatch)
	}
	for _, row := range ids {
		if len(row) != len(ids[0]) {
			return nil, fmt.Errorf("%w: sequences of different lengths (%d, %d) in one batch", ErrBatch, len(ids[0]), len(row))
		}
	}
	key := shape{batch: len(ids), seq: len(ids[0])}
	if c, ok := t.shapes[key]; ok {
		return c, nil
	}
	g, err := models.Build(t.model, models.BuildOptions{Batch: key.batch, Seq: key.seq, LoRA: t.cfg.lora})
	if err != nil {
		return nil, fmt.Errorf("train: build graph for batch %d seq %d: %w", key.batch, key.seq, err)
	}
	if err := t.weights.bind(append(append([]*gorgonia.Node(nil), g.Params...), g.Frozen...)); err != nil {
		return nil, err
	}
	t.log.Debug("train: built graph", "batch", key.batch, "seq", key.seq, "nodes", len(g.G.AllNodes()))
	c := &compiled{g: g}
	t.shapes[key] = c
	return c, nil
}

func (t *Trainer) machine(g *models.Graph, grads bool) (*vm.Machine, error) {
	// The trainer marks its own iterations (Step and Loss), which allocate outside the run too.
	opts := []vm.Option{vm.WithOutputs(g.Loss), vm.WithForward(g.Loss), vm.WithLogger(t.cfg.logger), vm.WithIterationMarks(false),
		vm.WithGradients(grads)}
	if grads {
		opts = append(opts, vm.WithOutputs(g.Grads...),
			vm.WithBlocks(vm.Blocks{Of: g.BlockOf, Inputs: g.BlockInputs}),
			vm.WithRecompute(t.cfg.recompute), vm.WithOffload(t.cfg.offload))
	}
	return vm.New(g.G, t.alloc, opts...)
}

// run binds the token ids (copied into allocator memory for the run) and runs m, returning the loss.
func (t *Trainer) run(m *vm.Machine, g *models.Graph, ids [][]int) (float64, error) {
	b, s := len(ids), len(ids[0])
	size := int64(b*s) * int64(tensor.Int.Size())
	mem, err := t.alloc.Get(size)
	if err != nil {
		return 0, fmt.Errorf("train: token ids: %w", err)
	}
	dev := tensor.New(tensor.Of(tensor.Int), tensor.WithShape(b, s), tensor.FromMemory(mem.Uintptr(), uintptr(size)))
	data := dev.Data().([]int)
	for i, row := range ids {
		copy(data[i*s:], row)
	}
	runErr := gorgonia.Let(g.IDs, dev)
	if runErr == nil {
		runErr = m.RunAll()
	}
	// The ids live for the step, as the input batch does on a GPU.
	freeErr := t.alloc.Free(mem, size)
	if err := errors.Join(runErr, freeErr); err != nil {
		return 0, err
	}
	return scalar(m.Value(g.Loss))
}

// scalar reads a one-element value as float64.
func scalar(v gorgonia.Value) (float64, error) {
	if v == nil {
		return 0, errors.New("train: loss has no value")
	}
	switch x := v.Data().(type) {
	case float32:
		return float64(x), nil
	case float64:
		return x, nil
	case []float32:
		if len(x) == 1 {
			return float64(x[0]), nil
		}
	case []float64:
		if len(x) == 1 {
			return x[0], nil
		}
	}
	return 0, fmt.Errorf("train: loss is %T, not a scalar", v.Data())
}
