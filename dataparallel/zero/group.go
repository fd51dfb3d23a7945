package zero

import (
	"fmt"
	"log/slog"
	"math"
)

// Stage is how much of the training state is partitioned across ranks.
type Stage int

const (
	// Stage1 partitions the optimizer state; gradients are all-reduced in full on every rank.
	Stage1 Stage = 1
	// Stage2 partitions the optimizer state and the reduced gradients (reduce-scatter).
	Stage2 Stage = 2
	// Stage3 partitions the parameters as well (ZeRO-3, FSDP): each rank keeps only its shard of
	// every unit (Units); a unit is all-gathered before the part of a pass that reads it and
	// freed after. Group runs stages 1 and 2; dist/gpudp's Trainer runs 2 and 3 on GPUs.
	Stage3 Stage = 3
)

func (s Stage) String() string { return fmt.Sprintf("ZeRO-%d", int(s)) }

// Group is N data-parallel ranks in one process: each holds the full flat parameter buffer (a
// replica, as in ZeRO stages 1 and 2), a flat gradient buffer it fills from its micro-batch, and
// the optimizer state of its own shard.
type Group struct {
	layout *Layout
	stage  Stage
	cfg    AdamW
	coll   Collectives
	log    *slog.Logger

	params [][]float32 // per rank: Padded elements, the replica
	grads  [][]float32 // per rank: Padded elements, this rank's local gradient
	shards [][]float32 // per rank, Stage2: ShardLen elements, the reduced gradient shard
	opts   []*ShardOptimizer
	steps  int
}

// GroupOption configures a Group.
type GroupOption func(*Group)

// WithStage sets the ZeRO stage (default Stage2).
func WithStage(s Stage) GroupOption { return func(g *Group) { g.stage = s } }

// WithCollectives runs the group's collectives with c instead of HostCollectives.
func WithCollectives(c Collectives) GroupOption {
	return func(g *Group) {
		if c != nil {
			g.coll = c
		}
	}
}

// WithLogger logs each step's gradient norm at debug level. Default: none.
func WithLogger(l *slog.Logger) GroupOption {
	return func(g *Group) {
		if l != nil {
			g.log = l
		}
	}
}

// NewGroup makes layout.Ranks ranks whose parameters all start as init (one slice per parameter,
// in layout order).
func NewGroup(layout *Layout, cfg AdamW, init [][]float32, opts ...GroupOption) (*Group, error) {
	g := &Group{layout: layout, stage: Stage2, cfg: cfg, coll: HostCollectives{}, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(g)
	}
	if g.stage != Stage1 && g.stage != Stage2 {
		return nil, fmt.Errorf("%w: stage %d (have 1 and 2)", ErrLayout, int(g.stage))
	}
	for range layout.Ranks {
		p := make([]float32, layout.Padded)
		if err := layout.Flatten(p, init); err != nil {
			return nil, err
		}
		g.params = append(g.params, p)
		g.grads = append(g.grads, make([]float32, layout.Padded))
		g.opts = append(g.opts, NewShardOptimizer(cfg, layout.ShardLen))
		if g.stage == Stage2 {
			g.shards = append(g.shards, make([]float32, layout.ShardLen))
		}
	}
	return g, nil
}

// Layout is the group's layout.
func (g *Group) Layout() *Layout { return g.layout }

// Params is rank's flat parameter replica (Padded elements). Callers may bind views of it as the
// model's weights: Step updates it in place.
func (g *Group) Params(rank int) []float32 { return g.params[rank] }

// Grads is rank's flat gradient buffer, to be filled with the gradient of its micro-batch's loss
// before Step (padding must stay zero).
func (g *Group) Grads(rank int) []float32 { return g.grads[rank] }

// OptimizerBytes is the optimizer state one rank holds.
func (g *Group) OptimizerBytes() int64 { return g.opts[0].StateBytes() }

// Step averages the ranks' gradients, clips them by their global norm, updates each rank's shard
// with AdamW and all-gathers the shards into every replica. It returns the global norm of the
// averaged gradient before clipping.
func (g *Group) Step() (float64, error) {
	n := g.layout.Ranks
	mean := float32(1) / float32(n)
	gradShard := make([][]float32, n) // rank r's averaged gradient shard
	switch g.stage {
	case Stage1:
		if err := g.coll.AllReduceSum(g.grads); err != nil {
			return 0, err
		}
		for r := range n {
			lo, hi := g.layout.Shard(r)
			gradShard[r] = g.grads[r][lo:hi]
		}
	case Stage2:
		if err := g.coll.ReduceScatterSum(g.grads, g.shards); err != nil {
			return 0, err
		}
		copy(gradShard, g.shards)
	}
	partial := make([]float64, n)
	for r, s := range gradShard {
		if n > 1 {
			for i := range s {
				s[i] *= mean
			}
		}
		partial[r] = sumSquares(s)
	}
	norm := math.Sqrt(g.coll.AllReduceSum64(partial))
	scale := clipScale(g.cfg, norm)
	owned := make([][]float32, n)
	for r := range n {
		lo, hi := g.layout.Shard(r)
		owned[r] = g.params[r][lo:hi]
		g.opts[r].Step(owned[r], gradShard[r], scale)
	}
	if err := g.coll.AllGather(owned, g.params); err != nil {
		return norm, err
	}
	for _, gr := range g.grads {
		clear(gr)
	}
	g.steps++
	g.log.Debug("zero: step", "step", g.steps, "stage", g.stage, "ranks", n, "grad_norm", norm)
	return norm, nil
}
