package zero

import "math"

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
func clipScale(cfg AdamW, norm float64) float32 {
	if cfg.ClipNorm > 0 && norm > cfg.ClipNorm {
		return float32(cfg.ClipNorm / (norm + 1e-6))
	}
	return 1
}

// Step applies one AdamW update to w (the rank's parameter shard) from g (its gradient shard),
// with g multiplied by scale (the clipping factor) first. The arithmetic is package train's,
// operation for operation, in float32.
func (o *ShardOptimizer) Step(w, g []float32, scale float32) {
	o.step++
	b1, b2 := float32(o.cfg.Beta1), float32(o.cfg.Beta2)
	c1 := float32(1 - math.Pow(o.cfg.Beta1, float64(o.step)))
	c2 := float32(1 - math.Pow(o.cfg.Beta2, float64(o.step)))
	lr, eps, decay := float32(o.cfg.LR), float32(o.cfg.Eps), float32(o.cfg.LR*o.cfg.WeightDecay)
	m, v := o.m[:len(w)], o.v[:len(w)]
	for j := range w {
		gj := g[j] * scale
		m[j] = b1*m[j] + (1-b1)*gj
		v[j] = b2*v[j] + (1-b2)*gj*gj
		mhat, vhat := m[j]/c1, v[j]/c2
		w[j] -= lr*mhat/(float32(math.Sqrt(float64(vhat)))+eps) + decay*w[j]
	}
}

// sumSquares is the float64 sum of squares of g, the rank's share of the global norm.
func sumSquares(g []float32) float64 {
	var s float64
	for _, x := range g {
		s += float64(x) * float64(x)
	}
	return s
}
