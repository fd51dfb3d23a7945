package zero

import "github.com/gmlake/gmlake/internal/adamw"

// AdamW holds the optimizer's hyperparameters. Its fields are train.AdamW's, in the same order, so
// a train.AdamW converts directly: zero.AdamW(train.DefaultAdamW).
type AdamW struct {
	LR          float64
	Beta1       float64
	Beta2       float64
	Eps         float64
	WeightDecay float64
	ClipNorm    float64 // the gradients' global L2 norm is scaled down to this; 0: no clipping
}

// ShardOptimizer is AdamW over one rank's shard of the flat buffer: its moments cover ShardLen
// elements only.
type ShardOptimizer struct {
	cfg  AdamW
	step int
	m, v []float32
}

// NewShardOptimizer makes zeroed AdamW state for a shard of n elements.
func NewShardOptimizer(cfg AdamW, n int) *ShardOptimizer {
	return &ShardOptimizer{cfg: cfg, m: make([]float32, n), v: make([]float32, n)}
}

// StateBytes is the memory of the optimizer state: two float32 moments per element.
func (o *ShardOptimizer) StateBytes() int64 { return 8 * int64(len(o.m)) }

// clipScale is the factor gradients are multiplied by for a global norm of norm.
func clipScale(cfg AdamW, norm float64) float32 { return adamw.Params(cfg).ClipScale(norm) }

// Step applies one AdamW update to w (the rank's parameter shard) from g (its gradient shard),
// with g multiplied by scale (the clipping factor) first. The arithmetic is package train's
// (internal/adamw), operation for operation, in float32.
func (o *ShardOptimizer) Step(w, g []float32, scale float32) {
	o.step++
	adamw.Params(o.cfg).NewStep(o.step).Apply(w, g, o.m, o.v, scale)
}

// sumSquares is the float64 sum of squares of g, the rank's share of the global norm.
func sumSquares(g []float32) float64 {
	var s float64
	for _, x := range g {
		s += float64(x) * float64(x)
	}
	return s
}
