package graphexec

import (
	"errors"
	"fmt"
	"slices"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake/gpu"
	"github.com/gmlake/gmlake/models"
)

// Trainer fine-tunes a model on the GPU. Every weight (trained or frozen) is resident on the
// device, bound to the graph's input nodes; each Step runs forward and backward, sums the squared
// gradient norm on the device and applies AdamW with clipping there, so the host reads only the
// loss. Graphs of other shapes over the same weights (variable sequence lengths: one graph per
// shape) train the same resident weights through StepGraph. Not safe for concurrent use.
type Trainer struct {
	dev      *gpu.Device
	graph    *models.Graph
	machines map[*models.Graph]*Machine
	opts     []Option
	cfg      gpu.AdamWConfig
	step     int

	weights map[*tensor.Dense]*gpu.Tensor // every weight (by its host tensor, shared by all graphs), resident
	params  []*gpu.Tensor                 // the trained parameters, in the order of Graph.Params
	m, v    []*gpu.Tensor                 // AdamW moments per trained parameter
	normsq  *gpu.Tensor
}

// NewTrainer uploads g's weights to d and compiles g. cfg's MaxNorm > 0 clips gradients. opts
// (WithRecompute, WithOffload) apply to every graph the Trainer runs; the outputs, forward roots
// and blocks come from the graph.
func NewTrainer(d *gpu.Device, g *models.Graph, cfg gpu.AdamWConfig, opts ...Option) (tr *Trainer, err error) {
	tr = &Trainer{dev: d, graph: g, cfg: cfg, opts: opts, weights: map[*tensor.Dense]*gpu.Tensor{},
		machines: map[*models.Graph]*Machine{}}
	defer func() {
		if err != nil {
			err = errors.Join(err, tr.Close())
		}
	}()
	for _, n := range append(append([]*gorgonia.Node(nil), g.Params...), g.Frozen...) {
		v, ok := n.Value().(*tensor.Dense)
		if !ok {
			return nil, fmt.Errorf("graphexec: weight %v has no tensor value", n)
		}
		t, err := d.FromHost(v.Data().([]float32), []int(v.Shape())...)
		if err != nil {
			return nil, err
		}
		tr.weights[v] = t
	}
	for _, p := range g.Params {
		tr.params = append(tr.params, tr.weights[p.Value().(*tensor.Dense)])
	}
	if _, err := tr.machine(g); err != nil {
		return nil, err
	}
	for _, p := range g.Params {
		for _, dst := range []*[]*gpu.Tensor{&tr.m, &tr.v} {
			t, err := d.NewTensor([]int(p.Shape())...)
			if err != nil {
				return nil, err
			}
			*dst = append(*dst, t)
			if err := d.Zero(t); err != nil {
				return nil, err
			}
		}
	}
	if tr.normsq, err = d.NewTensor(1); err != nil {
		return nil, err
	}
	return tr, nil
}

// machine returns g's compiled machine, compiling it (with the weights bound) on first use.
func (tr *Trainer) machine(g *models.Graph) (*Machine, error) {
	if m, ok := tr.machines[g]; ok {
		return m, nil
	}
	if !slices.Equal(g.Names, tr.graph.Names) {
		return nil, fmt.Errorf("graphexec: %w: graph trains %d parameters, the Trainer %d (or other names)",
			ErrOtherModel, len(g.Names), len(tr.graph.Names))
	}
	opts := append([]Option{WithOutputs(append([]*gorgonia.Node{g.Loss}, g.Grads...)...), WithForward(g.Loss),
		WithBlocks(g.BlockOf, g.BlockInputs)}, tr.opts...)
	m, err := Compile(tr.dev, g.G, opts...)
	if err != nil {
		return nil, err
	}
	for _, n := range append(append([]*gorgonia.Node(nil), g.Params...), g.Frozen...) {
		v, _ := n.Value().(*tensor.Dense)
		t, ok := tr.weights[v]
		if !ok {
			return nil, errors.Join(fmt.Errorf("graphexec: %w: weight %v is not the Trainer's", ErrOtherModel, n), m.Close())
		}
		if err := m.Bind(n, t); err != nil {
			return nil, errors.Join(err, m.Close())
		}
	}
	tr.machines[g] = m
	return m, nil
}

// ErrOtherModel is returned by StepGraph for a graph that is not over the Trainer's weights.
var ErrOtherModel = errors.New("graph of another model")

// Machine is the compiled machine of g (compiled on first use), for its step counts.
func (tr *Trainer) Machine(g *models.Graph) (*Machine, error) { return tr.machine(g) }

// DropGraph closes g's machine (its cached tables and live outputs); a later StepGraph on g
// compiles it again. The Trainer's own graph cannot be dropped.
func (tr *Trainer) DropGraph(g *models.Graph) error {
	m, ok := tr.machines[g]
	if !ok || g == tr.graph {
		return nil
	}
	delete(tr.machines, g)
	return m.Close()
}

// Step trains on one batch of token ids (row-major [Batch, Seq]) with the Trainer's graph and
// returns the loss before the update.
func (tr *Trainer) Step(ids []int) (float32, error) { return tr.StepGraph(tr.graph, ids) }

// StepGraph trains on one batch with g, a graph of another shape built from the same weights
// (models.Build with the same Weights and LoRA), and returns the loss before the update.
func (tr *Trainer) StepGraph(g *models.Graph, ids []int) (float32, error) {
	if err := g.SetIDs(ids); err != nil {
		return 0, err
	}
	return tr.StepBound(g)
}

// StepBound trains on the batch already bound to g's input nodes (a models.ResNetGraph's images
// and labels, through its Graph view) and returns the loss before the update.
func (tr *Trainer) StepBound(g *models.Graph) (float32, error) {
	tr.dev.MarkIteration()
	m, err := tr.machine(g)
	if err != nil {
		return 0, err
	}
	if err := m.Run(); err != nil {
		return 0, err
	}
	d := tr.dev
	if err := d.Zero(tr.normsq); err != nil {
		return 0, err
	}
	grads := make([]*gpu.Tensor, len(g.Grads))
	for i, gn := range g.Grads {
		gt, err := m.Tensor(gn)
		if err != nil {
			return 0, err
		}
		grads[i] = gt
		if err := d.SumSquares(tr.normsq, gt); err != nil {
			return 0, err
		}
	}
	normsq := tr.normsq
	if tr.cfg.MaxNorm <= 0 {
		normsq = nil
	}
	tr.step++
	for i, p := range tr.params {
		if err := d.AdamW(p, grads[i], tr.m[i], tr.v[i], normsq, tr.cfg, tr.step); err != nil {
			return 0, err
		}
	}
	loss, err := m.Value(g.Loss) // waits for the step's work
	if err != nil {
		return 0, err
	}
	// The gradients are spent: a machine kept for a shape that may not come back holds none.
	return loss[0], m.Release()
}

// Loss runs g (a graph over the Trainer's weights) on one batch and returns the loss without
// updating anything: a held-out evaluation. (It runs the backward pass too: the graph has it.)
func (tr *Trainer) Loss(g *models.Graph, ids []int) (float32, error) {
	m, err := tr.machine(g)
	if err != nil {
		return 0, err
	}
	if err := g.SetIDs(ids); err != nil {
		return 0, err
	}
	if err := m.Run(); err != nil {
		return 0, err
	}
	loss, err := m.Value(g.Loss)
	if err != nil {
		return 0, err
	}
	return loss[0], m.Release()
}

// Param downloads trained parameter i (in the order of Graph.Params).
func (tr *Trainer) Param(i int) ([]float32, error) { return tr.params[i].ToHost() }

// Close frees everything the Trainer holds on the device.
func (tr *Trainer) Close() error {
	var errs []error
	for _, m := range tr.machines {
		errs = append(errs, m.Close())
	}
	for _, t := range tr.weights {
		errs = append(errs, t.Free())
	}
	for _, t := range append(tr.m, tr.v...) {
		errs = append(errs, t.Free())
	}
	if tr.normsq != nil {
		errs = append(errs, tr.normsq.Free())
	}
	tr.machines, tr.weights, tr.params, tr.m, tr.v, tr.normsq = nil, nil, nil, nil, nil, nil
	return errors.Join(errs...)
}
