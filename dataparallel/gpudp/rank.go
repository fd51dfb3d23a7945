package gpudp

import (
	"errors"
	"fmt"
	"slices"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake/dataparallel/nccl"
	"github.com/gmlake/gmlake/dataparallel/zero"
	"github.com/gmlake/gmlake/gpu"
	"github.com/gmlake/gmlake/gpu/graphexec"
	"github.com/gmlake/gmlake/models"
)

// rank is one GPU's replica: device, communicator, flat buffers and one compiled graph per shape.
type rank struct {
	index int
	dev   *gpu.Device
	comm  *nccl.Comm

	flatParam, flatGrad *gpu.Tensor   // Padded elements each
	paramViews          []*gpu.Tensor // per trained parameter: its view of flatParam, in its shape
	gradViews           []*gpu.Tensor // per trained parameter: its slice of flatGrad
	paramShard          *gpu.Tensor   // ZeRO-2: this rank's slice of flatParam; ZeRO-3: its own buffer (Units.ShardLen)
	gradShard, m, v     *gpu.Tensor   // ShardLen elements each
	normsq              *gpu.Tensor   // one element
	sharded             *sharded      // ZeRO-3: the units' shards and gathers (nil at ZeRO-2)

	frozen  map[any]*gpu.Tensor // host tensor of a frozen weight -> its resident copy
	graphs  map[shapeKey]*shapeGraph
	current *shapeGraph // the graph of the last Step
}

type shapeKey struct{ batch, seq int }

type shapeGraph struct {
	g *models.Graph
	m *graphexec.Machine
}

// graph returns rank rk's compiled graph for ids' shape, building it (and, on the very first call,
// the parameter layout and every rank's flat buffers) when new.
func (t *Trainer) graph(rk *rank, ids [][]int) (*shapeGraph, error) {
	if len(ids) == 0 || len(ids[0]) < 2 {
		return nil, fmt.Errorf("%w: rank %d needs at least one sequence of two tokens", ErrBatch, rk.index)
	}
	for _, row := range ids {
		if len(row) != len(ids[0]) {
			return nil, fmt.Errorf("%w: rank %d has sequences of lengths %d and %d", ErrBatch, rk.index, len(ids[0]), len(row))
		}
	}
	key := shapeKey{batch: len(ids), seq: len(ids[0])}
	if sg, ok := rk.graphs[key]; ok {
		rk.current = sg
		return sg, nil
	}
	g, err := models.Build(t.w, models.BuildOptions{Batch: key.batch, Seq: key.seq, LoRA: t.opts.LoRA})
	if err != nil {
		return nil, fmt.Errorf("gpudp: build graph for batch %d seq %d: %w", key.batch, key.seq, err)
	}
	if t.names == nil {
		if err := t.initLayout(g); err != nil {
			return nil, err
		}
	}
	if !slices.Equal(g.Names, t.names) {
		return nil, fmt.Errorf("gpudp: graph trains %v, layout has %v", g.Names, t.names)
	}
	opts := []graphexec.Option{graphexec.WithOutputs(append([]*gorgonia.Node{g.Loss}, g.Grads...)...),
		graphexec.WithForward(g.Loss), graphexec.WithBlocks(g.BlockOf, g.BlockInputs),
		graphexec.WithRecompute(t.opts.Recompute)}
	if rk.sharded != nil {
		opts = append(opts, graphexec.WithGather(rk.sharded, rk.sharded.unitNodes(g)...))
	}
	m, err := graphexec.Compile(rk.dev, g.G, opts...)
	if err != nil {
		return nil, err
	}
	sg := &shapeGraph{g: g, m: m}
	rk.graphs[key] = sg // from here Close frees the machine
	for i, p := range g.Params {
		if rk.sharded != nil {
			break
		}
		if err := m.Bind(p, rk.paramViews[i]); err != nil {
			return nil, err
		}
	}
	for _, n := range g.Frozen {
		w, err := rk.resident(n)
		if err != nil {
			return nil, err
		}
		if err := m.Bind(n, w); err != nil {
			return nil, err
		}
	}
	rk.current = sg
	return sg, nil
}

// initLayout lays out g's trained parameters for all ranks and gives every rank its buffers, the
// parameters uploaded from their host values: at ZeRO-2 the flat replica and gradient buffers,
// at ZeRO-3 the shards of every unit (stage3.go).
func (t *Trainer) initLayout(g *models.Graph) error {
	sizes := make([]int, len(g.Params))
	host := make([][]float32, len(g.Params))
	for i, p := range g.Params {
		v, ok := p.Value().(*tensor.Dense)
		if !ok {
			return fmt.Errorf("gpudp: parameter %s has no tensor value", g.Names[i])
		}
		host[i] = v.Data().([]float32)
		sizes[i] = len(host[i])
	}
	if t.opts.Stage == zero.Stage3 {
		if err := t.initUnits(g, sizes, host); err != nil {
			return err
		}
		t.names = slices.Clone(g.Names)
		return nil
	}
	layout, err := zero.NewLayout(sizes, len(t.ranks), 0)
	if err != nil {
		return err
	}
	flat := make([]float32, layout.Padded)
	if err := layout.Flatten(flat, host); err != nil {
		return err
	}
	t.layout, t.names = layout, slices.Clone(g.Names)
	for _, rk := range t.ranks {
		if err := rk.allocate(layout, flat, g); err != nil {
			return fmt.Errorf("gpudp: rank %d: %w", rk.index, err)
		}
	}
	return nil
}

// allocate creates the rank's flat buffers and views; flat holds the initial parameters.
func (rk *rank) allocate(layout *zero.Layout, flat []float32, g *models.Graph) error {
	var err error
	if rk.flatParam, err = rk.dev.FromHost(flat, layout.Padded); err != nil {
		return err
	}
	if rk.flatGrad, err = rk.dev.NewTensor(layout.Padded); err != nil {
		return err
	}
	if err := rk.dev.Zero(rk.flatGrad); err != nil { // the padding stays zero
		return err
	}
	if err := rk.allocateShards(layout.ShardLen); err != nil {
		return err
	}
	lo, hi := layout.Shard(rk.index)
	if rk.paramShard, err = rk.flatParam.Slice(lo, hi); err != nil {
		return err
	}
	for i, s := range layout.Params {
		pv, err := rk.flatParam.Slice(s.Offset, s.Offset+s.Len)
		if err != nil {
			return err
		}
		if pv, err = pv.Reshape([]int(g.Params[i].Shape())...); err != nil {
			return err
		}
		gv, err := rk.flatGrad.Slice(s.Offset, s.Offset+s.Len)
		if err != nil {
			return err
		}
		rk.paramViews, rk.gradViews = append(rk.paramViews, pv), append(rk.gradViews, gv)
	}
	return nil
}

// allocateShards creates the rank's gradient shard and AdamW moments (n elements each, zeroed)
// and the norm's scalar.
func (rk *rank) allocateShards(n int) error {
	var err error
	for _, dst := range []**gpu.Tensor{&rk.gradShard, &rk.m, &rk.v} {
		if *dst, err = rk.dev.NewTensor(n); err != nil {
			return err
		}
		if err := rk.dev.Zero(*dst); err != nil {
			return err
		}
	}
	rk.normsq, err = rk.dev.NewTensor(1)
	return err
}

// resident returns the rank's device copy of a frozen weight node's tensor, uploading it once.
func (rk *rank) resident(n *gorgonia.Node) (*gpu.Tensor, error) {
	v, ok := n.Value().(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("gpudp: frozen weight %v has no tensor value", n)
	}
	if w, ok := rk.frozen[v]; ok {
		return w, nil
	}
	w, err := rk.dev.FromHost(v.Data().([]float32), []int(v.Shape())...)
	if err != nil {
		return nil, err
	}
	rk.frozen[v] = w
	return w, nil
}

// collectGrads copies the gradients of the last Run into the flat gradient buffer.
func (rk *rank) collectGrads(sg *shapeGraph) error {
	for i, gn := range sg.g.Grads {
		gt, err := sg.m.Tensor(gn)
		if err != nil {
			return err
		}
		if err := copyGrad(rk.dev, rk.gradViews[i], gt); err != nil {
			return err
		}
	}
	return nil
}

// copyGrad copies gradient gt into dst, a flat slice of its length.
func copyGrad(d *gpu.Device, dst, gt *gpu.Tensor) error {
	if gt.Contiguous() {
		return d.CopyDevice(dst, gt)
	}
	shaped, err := dst.Reshape(gt.Shape()...)
	if err != nil {
		return err
	}
	return d.Copy(shaped, gt)
}

func (rk *rank) close() error {
	var errs []error
	for _, sg := range rk.graphs {
		errs = append(errs, sg.m.Close())
	}
	rk.graphs = nil
	for _, w := range rk.frozen {
		errs = append(errs, w.Free())
	}
	rk.frozen = nil
	if rk.sharded != nil {
		errs = append(errs, rk.sharded.close())
	}
	// At ZeRO-2 paramShard is a view of flatParam (freeing it frees nothing); at ZeRO-3 it is the
	// rank's own buffer.
	for _, tt := range []*gpu.Tensor{rk.flatParam, rk.flatGrad, rk.paramShard, rk.gradShard, rk.m, rk.v, rk.normsq} {
		if tt != nil {
			errs = append(errs, tt.Free())
		}
	}
	if rk.comm != nil {
		errs = append(errs, rk.comm.Destroy())
	}
	if rk.dev != nil {
		errs = append(errs, rk.dev.Close())
	}
	return errors.Join(errs...)
}
