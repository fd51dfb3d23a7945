//go:build gmlakegpu

package graphexec

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake/gpu"
)

// ErrNotOutput is returned by Value for a node that is not a requested output of the last Run.
var ErrNotOutput = errors.New("graphexec: node is not a live output")

// Machine runs one Gorgonia graph on a gpu.Device. Not safe for concurrent use.
type Machine struct {
	dev    *gpu.Device
	nodes  []*gorgonia.Node // topological order: every node after its inputs
	index  map[int64]int
	inputs [][]int // per node, the indices of its inputs in argument order
	descs  []Desc  // per op node
	buf    []int   // per node, the node whose buffer it uses (itself, or a reshape's source)
	last   []int   // per buffer owner, the last instruction reading it; len(nodes) for outputs
	output map[int]bool
	bound  map[int]*gpu.Tensor

	vals   []*gpu.Tensor // current device value per node, nil when not live
	owned  []bool        // per buffer owner: whether the Machine allocated it (and must free it)
	ints   map[int][]int // integer inputs (token ids), kept on the host
	tables map[string][2]*gpu.Tensor
	posIDs map[string]*gpu.Ids
}

// New compiles g for d. outputs are the nodes whose values Value reads after Run (loss, gradients);
// every op node that no output depends on is still run (the models' graphs have none).
func New(d *gpu.Device, g *gorgonia.ExprGraph, outputs ...*gorgonia.Node) (*Machine, error) {
	sorted, err := gorgonia.Sort(g)
	if err != nil {
		return nil, fmt.Errorf("graphexec: sorting the graph: %w", err)
	}
	slices.Reverse(sorted)
	m := &Machine{dev: d, nodes: sorted, index: make(map[int64]int, len(sorted)), output: map[int]bool{},
		bound: map[int]*gpu.Tensor{}, ints: map[int][]int{}, tables: map[string][2]*gpu.Tensor{},
		posIDs: map[string]*gpu.Ids{}}
	for i, n := range sorted {
		m.index[n.ID()] = i
	}
	m.inputs = make([][]int, len(sorted))
	m.descs = make([]Desc, len(sorted))
	m.buf = make([]int, len(sorted))
	var unsupported []error
	for i, n := range sorted {
		m.buf[i] = i
		for it := g.From(n.ID()); it.Next(); {
			m.inputs[i] = append(m.inputs[i], m.index[it.Node().ID()])
		}
		if n.Op() == nil {
			continue
		}
		if m.descs[i], err = Describe(n.Op()); err != nil {
			unsupported = append(unsupported, fmt.Errorf("node %v: %w", n, err))
			continue
		}
		if m.descs[i].Kind == KindReshape {
			m.buf[i] = m.buf[m.inputs[i][0]]
		}
	}
	if err := errors.Join(unsupported...); err != nil {
		return nil, err
	}
	for _, o := range outputs {
		i, ok := m.index[o.ID()]
		if !ok {
			return nil, fmt.Errorf("graphexec: output %v is not in the graph", o)
		}
		m.output[i] = true
	}
	m.last = make([]int, len(sorted))
	for i := range sorted {
		m.last[m.buf[i]] = max(m.last[m.buf[i]], i) // a node's own instruction counts as a use
		for _, in := range m.inputs[i] {
			m.last[m.buf[in]] = max(m.last[m.buf[in]], i)
		}
	}
	for i := range m.output {
		m.last[m.buf[i]] = len(sorted)
	}
	m.vals = make([]*gpu.Tensor, len(sorted))
	m.owned = make([]bool, len(sorted))
	return m, nil
}

// Bind makes input node n read t (a resident device tensor, e.g. a trained parameter) instead of
// uploading n's value at every Run. The Machine never frees t.
func (m *Machine) Bind(n *gorgonia.Node, t *gpu.Tensor) error {
	i, ok := m.index[n.ID()]
	if !ok || n.Op() != nil {
		return fmt.Errorf("graphexec: Bind: %v is not an input of the graph", n)
	}
	if !slices.Equal(t.Shape(), []int(n.Shape())) {
		return fmt.Errorf("%w: Bind %v: tensor %v", gpu.ErrShape, n, t.Shape())
	}
	m.bound[i] = t
	return nil
}

// Run executes the graph once. Values of the previous Run's outputs are released first.
func (m *Machine) Run() error {
	if err := m.release(); err != nil {
		return err
	}
	for i, n := range m.nodes {
		if err := m.step(i, n); err != nil {
			return fmt.Errorf("graphexec: %v: %w", n, err)
		}
		if err := m.freeAfter(i); err != nil {
			return err
		}
	}
	return nil
}

func (m *Machine) step(i int, n *gorgonia.Node) error {
	if n.Op() == nil {
		return m.loadInput(i, n)
	}
	desc := m.descs[i]
	in := make([]*gpu.Tensor, len(m.inputs[i]))
	for k, j := range m.inputs[i] {
		in[k] = m.vals[j] // nil for integer inputs
	}
	if desc.Kind == KindReshape {
		v, err := in[0].Reshape([]int(n.Shape())...)
		if err != nil {
			return err
		}
		m.vals[i] = v
		return nil
	}
	out, err := m.dev.NewTensor([]int(n.Shape())...)
	if err != nil {
		return err
	}
	m.vals[i], m.owned[i] = out, true
	return m.exec(i, desc, out, in)
}

func (m *Machine) loadInput(i int, n *gorgonia.Node) error {
	if t, ok := m.bound[i]; ok {
		m.vals[i] = t
		return nil
	}
	v, ok := n.Value().(*tensor.Dense)
	if !ok {
		return fmt.Errorf("input without a tensor value (%T)", n.Value())
	}
	switch data := v.Data().(type) {
	case []float32:
		t, err := m.dev.FromHost(data, []int(v.Shape())...)
		if err != nil {
			return err
		}
		m.vals[i], m.owned[i] = t, true
	case []int:
		m.ints[i] = data
	default:
		return fmt.Errorf("input of type %T", data)
	}
	return nil
}

// freeAfter frees every buffer whose last reader is instruction i.
func (m *Machine) freeAfter(i int) error {
	var errs []error
	check := func(j int) {
		owner := m.buf[j]
		if m.last[owner] == i && m.vals[owner] != nil {
			if m.owned[owner] {
				errs = append(errs, m.vals[owner].Free())
			}
			m.vals[owner], m.owned[owner] = nil, false
		}
	}
	check(i)
	for _, j := range m.inputs[i] {
		check(j)
	}
	for j, v := range m.vals { // views die with their buffer
		if v != nil && m.buf[j] != j && m.vals[m.buf[j]] == nil {
			m.vals[j] = nil
		}
	}
	return errors.Join(errs...)
}

// Value downloads the value of output n from the last Run.
func (m *Machine) Value(n *gorgonia.Node) ([]float32, error) {
	i, ok := m.index[n.ID()]
	if !ok || !m.output[i] || m.vals[i] == nil {
		return nil, fmt.Errorf("%w: %v", ErrNotOutput, n)
	}
	return m.vals[i].ToHost()
}

// Tensor is output n's device tensor from the last Run (valid until the next Run or Close).
func (m *Machine) Tensor(n *gorgonia.Node) (*gpu.Tensor, error) {
	i, ok := m.index[n.ID()]
	if !ok || !m.output[i] || m.vals[i] == nil {
		return nil, fmt.Errorf("%w: %v", ErrNotOutput, n)
	}
	return m.vals[i], nil
}

func (m *Machine) release() error {
	var errs []error
	for i, v := range m.vals {
		if v != nil && m.owned[i] {
			errs = append(errs, v.Free())
		}
		m.vals[i], m.owned[i] = nil, false
	}
	clear(m.ints)
	return errors.Join(errs...)
}

// Close frees every buffer the Machine holds (outputs, cached tables and position ids).
func (m *Machine) Close() error {
	errs := []error{m.release()}
	for _, t := range m.tables {
		errs = append(errs, t[0].Free(), t[1].Free())
	}
	for _, ids := range m.posIDs {
		errs = append(errs, ids.Free())
	}
	clear(m.tables)
	clear(m.posIDs)
	return errors.Join(errs...)
}

// ids converts an integer input to device ids checked against limit (allowed values pass too).
func (m *Machine) ids(input int, transform func([]int) []int32, limit int32, allowed ...int32) (*gpu.Ids, error) {
	data, ok := m.ints[input]
	if !ok {
		return nil, fmt.Errorf("input %v is not an integer input", m.nodes[input])
	}
	return m.dev.NewIds(transform(data), limit, allowed...)
}

func toInt32(d []int) []int32 {
	out := make([]int32, len(d))
	for i, v := range d {
		if v > math.MaxInt32 || v < math.MinInt32 {
			out[i] = -1 // out of range: NewIds reports it
		} else {
			out[i] = int32(v)
		}
	}
	return out
}
