package train

import (
	"errors"
	"fmt"
	"math"

	"github.com/gmlake/gmlake/internal/adamw"
	"github.com/gmlake/gmlake/train/vm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// AdamW configures the optimizer: Adam with decoupled weight decay (Loshchilov & Hutter) and
// clipping of the global gradient norm.
type AdamW struct {
	LR          float64
	Beta1       float64
	Beta2       float64
	Eps         float64
	WeightDecay float64
	ClipNorm    float64 // the gradients' global L2 norm is scaled down to this; 0: no clipping
}

// DefaultAdamW is PyTorch's AdamW default with lr 1e-3 and clipping at 1.
var DefaultAdamW = AdamW{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, ClipNorm: 1}

// ErrShape is returned when a gradient does not match its parameter.
var ErrShape = errors.New("train: gradient and parameter differ in size")

// adamState is the optimizer state of one parameter: first and second moments, float32, in
// allocator memory for the life of the optimizer.
type adamState struct {
	m, v       *tensor.Dense
	mMem, vMem tensorMemory
}

type tensorMemory struct {
	mem  tensor.Memory
	size int64
}

// optimizer applies AdamW to a fixed list of float32 parameters.
type optimizer struct {
	cfg   AdamW
	alloc vm.Allocator
	step  int
	state map[*tensor.Dense]*adamState
}

func newOptimizer(cfg AdamW, alloc vm.Allocator) *optimizer {
	return &optimizer{cfg: cfg, alloc: alloc, state: make(map[*tensor.Dense]*adamState)}
}

// globalNorm is the L2 norm of all gradients together, accumulated in float64.
func globalNorm(grads [][]float32) float64 {
	var sum float64
	for _, g := range grads {
		for _, x := range g {
			sum += float64(x) * float64(x)
		}
	}
	return math.Sqrt(sum)
}

// Step updates params in place from grads and returns the gradients' global norm before clipping.
func (o *optimizer) Step(params []*tensor.Dense, grads [][]float32) (float64, error) {
	norm := globalNorm(grads)
	scale := adamw.Params(o.cfg).ClipScale(norm)
	o.step++
	step := adamw.Params(o.cfg).NewStep(o.step)
	for i, p := range params {
		w := p.Data().([]float32)
		g := grads[i]
		if len(w) != len(g) {
			return norm, fmt.Errorf("%w: parameter %d has %d elements, gradient %d", ErrShape, i, len(w), len(g))
		}
		st, err := o.stateFor(p)
		if err != nil {
			return norm, err
		}
		step.Apply(w, g, st.m.Data().([]float32), st.v.Data().([]float32), scale)
	}
	return norm, nil
}

// StepMachine is Step over the trainable nodes params (named names), their values the parameters,
// with the gradients grads[i] as machine m computed them.
func (o *optimizer) StepMachine(m *vm.Machine, params, grads []*gorgonia.Node, names []string) (float64, error) {
	ws := make([]*tensor.Dense, len(params))
	gs := make([][]float32, len(grads))
	for i, p := range params {
		ws[i] = p.Value().(*tensor.Dense)
		g, ok := m.Value(grads[i]).Data().([]float32)
		if !ok {
			return 0, fmt.Errorf("train: gradient of %s is not float32", names[i])
		}
		gs[i] = g
	}
	return o.Step(ws, gs)
}

func (o *optimizer) stateFor(p *tensor.Dense) (*adamState, error) {
	if st, ok := o.state[p]; ok {
		return st, nil
	}
	m, mMem, err := newDeviceTensor(o.alloc, p.Shape())
	if err != nil {
		return nil, err
	}
	v, vMem, err := newDeviceTensor(o.alloc, p.Shape())
	if err != nil {
		return nil, errors.Join(err, o.alloc.Free(mMem.mem, mMem.size))
	}
	st := &adamState{m: m, v: v, mMem: mMem, vMem: vMem}
	o.state[p] = st
	return st, nil
}

// Close returns the optimizer state to the allocator.
func (o *optimizer) Close() error {
	var errs []error
	for p, st := range o.state {
		errs = append(errs, o.alloc.Free(st.mMem.mem, st.mMem.size), o.alloc.Free(st.vMem.mem, st.vMem.size))
		delete(o.state, p)
	}
	return errors.Join(errs...)
}

// newDeviceTensor is a zeroed float32 tensor of the given shape in allocator memory.
func newDeviceTensor(alloc vm.Allocator, shape tensor.Shape) (*tensor.Dense, tensorMemory, error) {
	size := int64(shape.TotalSize()) * 4
	mem, err := alloc.Get(size)
	if err != nil {
		return nil, tensorMemory{}, fmt.Errorf("train: get %d bytes: %w", size, err)
	}
	d := tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(shape.Clone()...), tensor.FromMemory(mem.Uintptr(), uintptr(size)))
	clear(d.Raw)
	return d, tensorMemory{mem: mem, size: size}, nil
}
