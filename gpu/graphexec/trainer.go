//go:build gmlakegpu

package graphexec

import (
	"errors"
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake/gpu"
	"github.com/gmlake/gmlake/models"
)

// Trainer fine-tunes one models.Graph on the GPU. Every weight (trained or frozen) is resident on
// the device, bound to the graph's input nodes; each Step runs forward and backward, sums the
// squared gradient norm on the device and applies AdamW with clipping there, so the host reads
// only the loss. Not safe for concurrent use.
type Trainer struct {
	dev     *gpu.Device
	graph   *models.Graph
	machine *Machine
	cfg     gpu.AdamWConfig
	step    int

	weights map[*gorgonia.Node]*gpu.Tensor // every weight input, resident
	m, v    []*gpu.Tensor                  // AdamW moments per trained parameter
	normsq  *gpu.Tensor
}

// NewTrainer uploads g's weights to d and compiles g. cfg's MaxNorm > 0 clips gradients.
func NewTrainer(d *gpu.Device, g *models.Graph, cfg gpu.AdamWConfig) (tr *Trainer, err error) {
	tr = &Trainer{dev: d, graph: g, cfg: cfg, weights: map[*gorgonia.Node]*gpu.Tensor{}}
	defer func() {
		if err != nil {
			err = errors.Join(err, tr.Close())
		}
	}()
	if tr.machine, err = New(d, g.G, append([]*gorgonia.Node{g.Loss}, g.Grads...)...); err != nil {
		return nil, err
	}
	for _, n := range append(append([]*gorgonia.Node(nil), g.Params...), g.Frozen...) {
		v, ok := n.Value().(*tensor.Dense)
		if !ok {
			return nil, fmt.Errorf("graphexec: weight %v has no tensor value", n)
		}
		t, err := d.FromHost(v.Data().([]float32), []int(v.Shape())...)
		if err != nil {
			return nil, err
		}
		tr.weights[n] = t
		if err := tr.machine.Bind(n, t); err != nil {
			return nil, err
		}
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

// Step trains on one batch of token ids (row-major [Batch, Seq]) and returns the loss before the
// update.
func (tr *Trainer) Step(ids []int) (float32, error) {
	if err := tr.graph.SetIDs(ids); err != nil {
		return 0, err
	}
	if err := tr.machine.Run(); err != nil {
		return 0, err
	}
	d := tr.dev
	if err := d.Zero(tr.normsq); err != nil {
		return 0, err
	}
	grads := make([]*gpu.Tensor, len(tr.graph.Grads))
	for i, gn := range tr.graph.Grads {
		g, err := tr.machine.Tensor(gn)
		if err != nil {
			return 0, err
		}
		grads[i] = g
		if err := d.SumSquares(tr.normsq, g); err != nil {
			return 0, err
		}
	}
	normsq := tr.normsq
	if tr.cfg.MaxNorm <= 0 {
		normsq = nil
	}
	tr.step++
	for i, p := range tr.graph.Params {
		if err := d.AdamW(tr.weights[p], grads[i], tr.m[i], tr.v[i], normsq, tr.cfg, tr.step); err != nil {
			return 0, err
		}
	}
	loss, err := tr.machine.Value(tr.graph.Loss) // waits for the step's work
	if err != nil {
		return 0, err
	}
	return loss[0], nil
}

// Param downloads trained parameter i (in the order of Graph.Params).
func (tr *Trainer) Param(i int) ([]float32, error) { return tr.weights[tr.graph.Params[i]].ToHost() }

// Close frees everything the Trainer holds on the device.
func (tr *Trainer) Close() error {
	var errs []error
	if tr.machine != nil {
		errs = append(errs, tr.machine.Close())
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
	tr.weights, tr.m, tr.v, tr.normsq = nil, nil, nil, nil
	return errors.Join(errs...)
}
