package gpudp

import (
	"errors"
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/gmlake/gmlake/dataparallel/nccl"
	"github.com/gmlake/gmlake/dataparallel/zero"
	"github.com/gmlake/gmlake/gpu"
	"github.com/gmlake/gmlake/models"
)

// unitLabels is, per trained parameter of g, the transformer block whose forward reads it, or -1
// when the forward outside blocks reads it (embeddings, final norm, head) or several blocks do.
func unitLabels(g *models.Graph) []int {
	index := make(map[*gorgonia.Node]int, len(g.Params))
	for i, p := range g.Params {
		index[p] = i
	}
	labels := make([]int, len(g.Params))
	seen := make([]bool, len(g.Params))
	for _, n := range g.G.AllNodes() {
		if n.Op() == nil || !g.Forward[n.ID()] {
			continue
		}
		k, ok := g.BlockOf[n.ID()]
		if !ok {
			k = -1
		}
		for it := g.G.From(n.ID()); it.Next(); {
			i, ok := index[it.Node().(*gorgonia.Node)]
			if !ok {
				continue
			}
			if seen[i] && labels[i] != k {
				k = -1
			}
			labels[i], seen[i] = k, true
		}
	}
	return labels
}

// sharded is a ZeRO-3 rank's parameter state: its shard of every unit (zero.Units) and, while a
// part of a pass reads a unit, the unit all-gathered into a buffer from the rank's pool. It is the
// rank's graphexec.Gatherer.
type sharded struct {
	rk     *rank
	units  *zero.Units
	shapes [][]int                // per parameter, its shape
	param  map[*gorgonia.Node]int // parameter node of any of the rank's graphs -> parameter index
	live   []*gpu.Tensor          // per unit, its gathered buffer (nil when not gathered)
	views  [][]*gpu.Tensor        // per unit, its parameters' views of the buffer
	refs   []int                  // per unit, gathered parameters not yet released
	// Gathers counts the all-gathers of units issued (two per unit and step: forward and backward).
	gathers int
}

func newSharded(rk *rank, units *zero.Units, shapes [][]int) *sharded {
	n := len(units.Layouts)
	return &sharded{rk: rk, units: units, shapes: shapes, param: map[*gorgonia.Node]int{},
		live: make([]*gpu.Tensor, n), views: make([][]*gpu.Tensor, n), refs: make([]int, n)}
}

// unitNodes registers g's parameter nodes and returns them grouped by unit.
func (s *sharded) unitNodes(g *models.Graph) [][]*gorgonia.Node {
	out := make([][]*gorgonia.Node, len(s.units.Members))
	for k, members := range s.units.Members {
		for _, i := range members {
			s.param[g.Params[i]] = i
			out[k] = append(out[k], g.Params[i])
		}
	}
	return out
}

// Gather returns parameter n's view of its unit, all-gathering the unit into a fresh buffer of the
// rank's pool first when no parameter of it is gathered now.
func (s *sharded) Gather(n *gorgonia.Node) (*gpu.Tensor, error) {
	i, ok := s.param[n]
	if !ok {
		return nil, fmt.Errorf("gpudp: rank %d: %v is no sharded parameter", s.rk.index, n)
	}
	k := s.units.UnitOf[i]
	if s.live[k] == nil {
		if err := s.gather(k); err != nil {
			return nil, err
		}
	}
	s.refs[k]++
	return s.views[k][s.units.Pos[i]], nil
}

func (s *sharded) gather(k int) error {
	l := s.units.Layouts[k]
	buf, err := s.rk.dev.NewTensor(l.Padded)
	if err != nil {
		return err
	}
	shard, err := s.rk.paramShard.Slice(s.units.ShardOff[k], s.units.ShardOff[k]+l.ShardLen)
	if err == nil {
		err = s.rk.comm.AllGather(shard.Ptr(), buf.Ptr(), l.ShardLen, nccl.Float32, uintptr(s.rk.dev.Stream()))
	}
	views := make([]*gpu.Tensor, len(s.units.Members[k]))
	for j, i := range s.units.Members[k] {
		if err != nil {
			break
		}
		slot := l.Params[j]
		if views[j], err = buf.Slice(slot.Offset, slot.Offset+slot.Len); err == nil {
			views[j], err = views[j].Reshape(s.shapes[i]...)
		}
	}
	if err != nil {
		return errors.Join(fmt.Errorf("gpudp: rank %d: gather unit %d: %w", s.rk.index, k, err), buf.Free())
	}
	s.live[k], s.views[k] = buf, views
	s.gathers++
	return nil
}

// Release ends one gathered parameter's use; the unit's buffer goes back to the pool (stream
// ordered: later work on the rank's stream may reuse it at once) with its last parameter.
func (s *sharded) Release(n *gorgonia.Node, _ *gpu.Tensor) error {
	i, ok := s.param[n]
	if !ok {
		return fmt.Errorf("gpudp: rank %d: %v is no sharded parameter", s.rk.index, n)
	}
	k := s.units.UnitOf[i]
	if s.refs[k] == 0 {
		return fmt.Errorf("gpudp: rank %d: unit %d released more often than gathered", s.rk.index, k)
	}
	if s.refs[k]--; s.refs[k] > 0 {
		return nil
	}
	buf := s.live[k]
	s.live[k], s.views[k] = nil, nil
	return buf.Free()
}

// reduceGrads reduce-scatters the gradients of the last Run unit by unit: each unit's gradients
// are copied into a staging buffer from the rank's pool laid out as the unit (padding zero),
// reduce-scattered (sum) into the unit's part of the rank's gradient shard, and the staging
// buffer is freed before the next unit's.
func (s *sharded) reduceGrads(sg *shapeGraph) error {
	rk := s.rk
	for k := len(s.units.Layouts) - 1; k >= 0; k-- { // backward produced the last blocks' first
		l := s.units.Layouts[k]
		staging, err := rk.dev.NewTensor(l.Padded)
		if err != nil {
			return err
		}
		err = s.reduceUnit(sg, k, staging)
		if ferr := staging.Free(); err == nil {
			err = ferr
		}
		if err != nil {
			return fmt.Errorf("gpudp: rank %d: reduce unit %d: %w", rk.index, k, err)
		}
	}
	return nil
}

func (s *sharded) reduceUnit(sg *shapeGraph, k int, staging *gpu.Tensor) error {
	rk, l := s.rk, s.units.Layouts[k]
	if l.Total < l.Padded {
		pad, err := staging.Slice(l.Total, l.Padded)
		if err != nil {
			return err
		}
		if err := rk.dev.Zero(pad); err != nil {
			return err
		}
	}
	for j, i := range s.units.Members[k] {
		gt, err := sg.m.Tensor(sg.g.Grads[i])
		if err != nil {
			return err
		}
		slot := l.Params[j]
		dst, err := staging.Slice(slot.Offset, slot.Offset+slot.Len)
		if err != nil {
			return err
		}
		if err := copyGrad(rk.dev, dst, gt); err != nil {
			return err
		}
	}
	shard, err := rk.gradShard.Slice(s.units.ShardOff[k], s.units.ShardOff[k]+l.ShardLen)
	if err != nil {
		return err
	}
	return rk.comm.ReduceScatter(staging.Ptr(), shard.Ptr(), l.ShardLen, nccl.Float32, nccl.Sum, uintptr(rk.dev.Stream()))
}

// close frees buffers still gathered (after a failed Run).
func (s *sharded) close() error {
	var errs []error
	for k, buf := range s.live {
		if buf != nil {
			errs = append(errs, buf.Free())
			s.live[k], s.views[k], s.refs[k] = nil, nil, 0
		}
	}
	return errors.Join(errs...)
}

// initUnits lays g's trained parameters out per unit for ZeRO-3 and gives every rank its shard
// buffers, its parameter shard uploaded from the host values.
func (t *Trainer) initUnits(g *models.Graph, sizes []int, host [][]float32) error {
	units, err := zero.NewUnits(sizes, unitLabels(g), len(t.ranks), 0)
	if err != nil {
		return err
	}
	shapes := make([][]int, len(g.Params))
	for i, p := range g.Params {
		shapes[i] = []int(p.Shape().Clone())
	}
	t.units = units
	for _, rk := range t.ranks {
		shard := make([]float32, units.ShardLen)
		if err := units.Shard(rk.index, shard, host); err != nil {
			return err
		}
		if rk.paramShard, err = rk.dev.FromHost(shard, units.ShardLen); err != nil {
			return fmt.Errorf("gpudp: rank %d: %w", rk.index, err)
		}
		if err := rk.allocateShards(units.ShardLen); err != nil {
			return fmt.Errorf("gpudp: rank %d: %w", rk.index, err)
		}
		rk.sharded = newSharded(rk, units, shapes)
	}
	return nil
}
