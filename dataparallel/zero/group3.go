package zero

import (
	"fmt"
	"log/slog"
	"math"
)

// Group3 is N data-parallel ranks in one process at ZeRO stage 3: each rank holds only its shard
// of every unit (Units), its reduced gradient shard and the AdamW state of that shard. A rank's
// executor all-gathers a unit (GatherUnit) into a buffer of its own (typically from its device's
// pool) before the part of a pass that reads it and frees it after; after backward each rank's
// unit gradients are reduce-scattered (ReduceUnit) into the gradient shards, and Step updates the
// shards. The arithmetic is Group's at stage 2 on other shards: the same sums in the same rank
// order per element, the same AdamW per element, the global norm summed over other partial sums.
// dataparallel/gpudp runs the same schedule on GPUs over NCCL.
type Group3 struct {
	units *Units
	cfg   AdamW
	coll  Collectives
	log   *slog.Logger

	shards [][]float32 // per rank: ShardLen elements, its shard of every unit's parameters
	grads  [][]float32 // per rank: ShardLen elements, its reduced gradient shards
	opts   []*ShardOptimizer
	steps  int
}

// NewGroup3 makes units.Ranks ranks whose parameters all start as init (one slice per parameter,
// in the order Units was made with). Of the options WithLogger and WithCollectives apply.
func NewGroup3(units *Units, cfg AdamW, init [][]float32, opts ...GroupOption) (*Group3, error) {
	g2 := Group{coll: HostCollectives{}, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(&g2)
	}
	g := &Group3{units: units, cfg: cfg, coll: g2.coll, log: g2.log}
	for r := range units.Ranks {
		s := make([]float32, units.ShardLen)
		if err := units.Shard(r, s, init); err != nil {
			return nil, err
		}
		g.shards = append(g.shards, s)
		g.grads = append(g.grads, make([]float32, units.ShardLen))
		g.opts = append(g.opts, NewShardOptimizer(cfg, units.ShardLen))
	}
	return g, nil
}

// Units is the group's layout.
func (g *Group3) Units() *Units { return g.units }

// unitShards is every rank's part of unit k in bufs (per-rank shard buffers).
func (g *Group3) unitShards(k int, bufs [][]float32) [][]float32 {
	lo, n := g.units.ShardOff[k], g.units.Layouts[k].ShardLen
	out := make([][]float32, len(bufs))
	for r, b := range bufs {
		out[r] = b[lo : lo+n]
	}
	return out
}

// GatherUnit all-gathers unit k into dst[r] for every rank r: each dst[r] holds the unit's
// Padded elements laid out as Layouts[k] (Layouts[k].Params says where each parameter lies).
func (g *Group3) GatherUnit(k int, dst [][]float32) error {
	if k < 0 || k >= len(g.units.Layouts) {
		return fmt.Errorf("%w: unit %d of %d", ErrLayout, k, len(g.units.Layouts))
	}
	return g.coll.AllGather(g.unitShards(k, g.shards), dst)
}

// ReduceUnit reduce-scatters (sums) unit k's gradients, grads[r] being rank r's laid out as
// Layouts[k] with zero padding, into the ranks' gradient shards.
func (g *Group3) ReduceUnit(k int, grads [][]float32) error {
	if k < 0 || k >= len(g.units.Layouts) {
		return fmt.Errorf("%w: unit %d of %d", ErrLayout, k, len(g.units.Layouts))
	}
	return g.coll.ReduceScatterSum(grads, g.unitShards(k, g.grads))
}

// Step averages the reduced gradient shards over the ranks, clips by their global norm and
// updates every rank's parameter shards with AdamW; the next pass gathers the updated units. It
// returns the global norm before clipping and clears the gradient shards.
func (g *Group3) Step() (float64, error) {
	n := g.units.Ranks
	mean := float32(1) / float32(n)
	partial := make([]float64, n)
	for r, s := range g.grads {
		if n > 1 {
			for i := range s {
				s[i] *= mean
			}
		}
		partial[r] = sumSquares(s)
	}
	norm := math.Sqrt(g.coll.AllReduceSum64(partial))
	scale := clipScale(g.cfg, norm)
	for r := range n {
		g.opts[r].Step(g.shards[r], g.grads[r], scale)
		clear(g.grads[r])
	}
	g.steps++
	g.log.Debug("zero: step", "step", g.steps, "stage", Stage3, "ranks", n, "grad_norm", norm)
	return norm, nil
}

// Params assembles every parameter from the ranks' shards (one slice per parameter, in the order
// Units was made with).
func (g *Group3) Params() ([][]float32, error) {
	out := make([][]float32, len(g.units.UnitOf))
	for k, members := range g.units.Members {
		for j, i := range members {
			out[i] = make([]float32, g.units.Layouts[k].Params[j].Len)
		}
	}
	return out, g.units.Assemble(out, g.shards)
}
