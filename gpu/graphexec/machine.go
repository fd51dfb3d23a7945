package graphexec

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake/gpu"
	"github.com/gmlake/gmlake/train/plan"
)

// ErrNotOutput is returned by Value for a node that is not a requested output of the last Run.
var ErrNotOutput = errors.New("graphexec: node is not a live output")

// Machine runs one Gorgonia graph on a gpu.Device. Not safe for concurrent use.
type Machine struct {
	dev     *gpu.Device
	nodes   []*gorgonia.Node // topological order: every node after its inputs
	index   map[int64]int
	inputs  [][]int // per node, the indices of its inputs in argument order
	output  []bool  // per node, a requested output
	descs   []Desc  // per op node
	prog    []plan.Step
	bound   map[int]*gpu.Tensor
	gather  Gatherer
	sharded map[int]bool // inputs that come from gather, once per pass

	vals   []*gpu.Tensor // current device value per node, nil when not live
	bufs   []*buffer     // the buffer behind each live value (shared by views)
	ints   map[int][]int // integer inputs (token ids), kept on the host
	pinned map[int]*gpu.PinnedBuffer
	tables map[string][2]*gpu.Tensor
	posIDs map[string]*gpu.Ids
	cnn    *cnnState // cuDNN handle and workspace counts of the convolutional kinds (lower_cnn.go)
	counts Counts
}

// buffer is one device allocation with the number of live values (the node that made it and the
// reshapes of it) that use it.
type buffer struct {
	t     *gpu.Tensor
	refs  int
	owned bool           // allocated by the Machine (not a bound tensor), so freed with its last value
	node  *gorgonia.Node // a gathered input's node: its buffer goes back to the Gatherer
}

// Counts are the Machine's program steps of the last Run, by kind.
type Counts struct {
	Execs, Recomputes, Offloads, Restores int
	OffloadedBytes                        uint64
}

// New compiles g for d. outputs are the nodes whose values Value reads after Run (loss, gradients);
// every op node that no output depends on is still run (the models' graphs have none).
func New(d *gpu.Device, g *gorgonia.ExprGraph, outputs ...*gorgonia.Node) (*Machine, error) {
	return Compile(d, g, WithOutputs(outputs...))
}

// Compile compiles g for d into a program of load, exec, offload and restore steps (see the
// options); every buffer is freed right after the last step that reads it.
func Compile(d *gpu.Device, g *gorgonia.ExprGraph, opts ...Option) (*Machine, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if err := CheckGraph(g); err != nil {
		return nil, err
	}
	gr, prog, err := analyse(g, &cfg)
	if err != nil {
		return nil, err
	}
	m := &Machine{dev: d, nodes: gr.Nodes, index: gr.Index, inputs: gr.Inputs, output: gr.Output, prog: prog,
		bound: map[int]*gpu.Tensor{}, ints: map[int][]int{}, pinned: map[int]*gpu.PinnedBuffer{},
		tables: map[string][2]*gpu.Tensor{}, posIDs: map[string]*gpu.Ids{}, cnn: newCNNState(cfg.cnn),
		gather: cfg.gatherer, sharded: map[int]bool{}}
	for _, unit := range cfg.gathered {
		for _, n := range unit {
			m.sharded[gr.Index[n.ID()]] = true
		}
	}
	m.descs = make([]Desc, gr.Len())
	var unsupported []error
	for i, n := range gr.Nodes {
		if n.Op() == nil {
			continue
		}
		if m.descs[i], err = Describe(n.Op()); err != nil {
			unsupported = append(unsupported, fmt.Errorf("node %v: %w", n, err))
		}
	}
	if err := errors.Join(unsupported...); err != nil {
		return nil, err
	}
	m.vals = make([]*gpu.Tensor, gr.Len())
	m.bufs = make([]*buffer, gr.Len())
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

// Counts returns the steps of the last Run by kind.
func (m *Machine) Counts() Counts { return m.counts }

// Run executes the graph once. Values of the previous Run's outputs are released first.
func (m *Machine) Run() error {
	if err := m.Release(); err != nil {
		return err
	}
	m.counts = Counts{}
	for _, in := range m.prog {
		if err := m.step(in); err != nil {
			// A failed run (out of memory, typically) frees what it holds, so the caller can go on.
			return errors.Join(fmt.Errorf("graphexec: %v %v: %w", in.Op, m.nodes[in.Node], err), m.Release())
		}
		var errs []error
		for _, r := range in.Release {
			errs = append(errs, m.drop(r))
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	return nil
}

func (m *Machine) step(in plan.Step) error {
	i, n := in.Node, m.nodes[in.Node]
	switch in.Op {
	case plan.Load:
		return m.loadInput(i, n)
	case plan.Offload:
		return m.offload(i)
	case plan.Restore:
		return m.restore(i)
	}
	m.counts.Execs++
	if in.Recompute {
		m.counts.Recomputes++
	}
	desc := m.descs[i]
	args := make([]*gpu.Tensor, len(m.inputs[i]))
	for k, j := range m.inputs[i] {
		args[k] = m.vals[j] // nil for integer inputs
		if args[k] == nil {
			if _, ok := m.ints[j]; !ok {
				return fmt.Errorf("input %v has no live value", m.nodes[j])
			}
		}
	}
	if desc.Kind == KindReshape {
		v, err := args[0].Reshape([]int(n.Shape())...)
		if err != nil {
			return err
		}
		b := m.bufs[m.inputs[i][0]]
		b.refs++
		m.vals[i], m.bufs[i] = v, b
		return nil
	}
	out, err := m.dev.NewTensor([]int(n.Shape())...)
	if err != nil {
		return err
	}
	m.vals[i], m.bufs[i] = out, &buffer{t: out, refs: 1, owned: true}
	return m.exec(i, desc, out, args)
}

func (m *Machine) loadInput(i int, n *gorgonia.Node) error {
	if m.sharded[i] {
		t, err := m.gather.Gather(n)
		if err != nil {
			return err
		}
		if !slices.Equal(t.Shape(), []int(n.Shape())) {
			return errors.Join(fmt.Errorf("%w: gathered %v: tensor %v", gpu.ErrShape, n, t.Shape()), m.gather.Release(n, t))
		}
		m.vals[i], m.bufs[i] = t, &buffer{t: t, refs: 1, node: n}
		return nil
	}
	if t, ok := m.bound[i]; ok {
		m.vals[i], m.bufs[i] = t, &buffer{t: t, refs: 1}
		return nil
	}
	if f, ok := n.Value().(*gorgonia.F32); ok { // a scalar input
		t, err := m.dev.FromHost([]float32{float32(*f)})
		if err != nil {
			return err
		}
		m.vals[i], m.bufs[i] = t, &buffer{t: t, refs: 1, owned: true}
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
		m.vals[i], m.bufs[i] = t, &buffer{t: t, refs: 1, owned: true}
	case []int:
		m.ints[i] = data
	default:
		return fmt.Errorf("input of type %T", data)
	}
	return nil
}

// offload queues a copy of node i's value into its pinned host buffer and drops the device value;
// the freed block may serve the next allocation at once, since the copy is queued before any
// later work on the one stream.
func (m *Machine) offload(i int) error {
	v := m.vals[i]
	if v == nil {
		return fmt.Errorf("offload of a value that is not live")
	}
	pb := m.pinned[i]
	if pb == nil || len(pb.Data()) < v.Len() {
		if pb != nil {
			if err := pb.Free(); err != nil {
				return err
			}
		}
		var err error
		if pb, err = m.dev.NewPinned(v.Len()); err != nil {
			return err
		}
		m.pinned[i] = pb
	}
	if err := m.dev.Offload(pb, v); err != nil {
		return err
	}
	m.counts.Offloads++
	m.counts.OffloadedBytes += uint64(v.Len()) * 4
	return m.drop(i)
}

// restore copies node i's offloaded value back into a fresh buffer.
func (m *Machine) restore(i int) error {
	t, err := m.dev.NewTensor([]int(m.nodes[i].Shape())...)
	if err != nil {
		return err
	}
	m.vals[i], m.bufs[i] = t, &buffer{t: t, refs: 1, owned: true}
	m.counts.Restores++
	return m.dev.Restore(t, m.pinned[i])
}

// drop ends node i's current value; its buffer is freed with the last value that uses it.
func (m *Machine) drop(i int) error {
	b := m.bufs[i]
	m.vals[i], m.bufs[i] = nil, nil
	if b == nil {
		delete(m.ints, i)
		return nil
	}
	if b.refs--; b.refs == 0 && b.owned {
		return b.t.Free()
	} else if b.refs == 0 && b.node != nil {
		return m.gather.Release(b.node, b.t)
	}
	return nil
}

// Value downloads the value of output n from the last Run.
func (m *Machine) Value(n *gorgonia.Node) ([]float32, error) {
	i, ok := m.index[n.ID()]
	if !ok || !m.output[i] || m.vals[i] == nil {
		return nil, fmt.Errorf("%w: %v", ErrNotOutput, n)
	}
	return m.vals[i].ToHost()
}

// Tensor is output n's device tensor from the last Run (valid until the next Run, Release or Close).
func (m *Machine) Tensor(n *gorgonia.Node) (*gpu.Tensor, error) {
	i, ok := m.index[n.ID()]
	if !ok || !m.output[i] || m.vals[i] == nil {
		return nil, fmt.Errorf("%w: %v", ErrNotOutput, n)
	}
	return m.vals[i], nil
}

// Release frees the values of the last Run's outputs (Run frees them itself before it runs again,
// and Close): a caller that keeps one Machine per shape releases each once it has read its outputs,
// so that the machines of shapes not running hold no device memory but their small tables. After
// it, Value and Tensor report ErrNotOutput until the next Run.
func (m *Machine) Release() error {
	var errs []error
	for i := range m.vals {
		if m.bufs[i] != nil {
			errs = append(errs, m.drop(i))
		}
	}
	clear(m.ints)
	return errors.Join(errs...)
}

// Close frees every buffer the Machine holds (outputs, cached tables and position ids).
func (m *Machine) Close() error {
	errs := []error{m.Release(), m.cnn.close()}
	for _, t := range m.tables {
		errs = append(errs, t[0].Free(), t[1].Free())
	}
	for _, ids := range m.posIDs {
		errs = append(errs, ids.Free())
	}
	for _, pb := range m.pinned {
		errs = append(errs, pb.Free())
	}
	clear(m.tables)
	clear(m.posIDs)
	clear(m.pinned)
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
