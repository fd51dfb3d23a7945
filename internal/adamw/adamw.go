// Package adamw is the arithmetic of one AdamW update (Adam with decoupled weight decay, Loshchilov
// & Hutter) over float32 slices, shared by the trainer (package train) and the sharded optimizer
// (dataparallel/zero), so that a sharded run computes exactly what an unsharded one does.
package adamw

import "math"

// Params are the optimizer's hyperparameters, in the order of train.AdamW and zero.AdamW, which
// convert to it directly.
type Params struct {
	LR          float64
	Beta1       float64
	Beta2       float64
	Eps         float64
	WeightDecay float64
	ClipNorm    float64 // the gradients' global L2 norm is scaled down to this; 0: no clipping
}

// ClipScale is the factor gradients are multiplied by for a global norm of norm.
func (p Params) ClipScale(norm float64) float32 {
	if p.ClipNorm > 0 && norm > p.ClipNorm {
		return float32(p.ClipNorm / (norm + 1e-6))
	}
	return 1
}

// Step is one update's constants: step t of the optimizer (from 1), in float32.
type Step struct {
	b1, b2, c1, c2, lr, eps, decay float32
}

// NewStep computes the constants of update t (bias corrections included).
func (p Params) NewStep(t int) Step {
	return Step{b1: float32(p.Beta1), b2: float32(p.Beta2),
		c1: float32(1 - math.Pow(p.Beta1, float64(t))), c2: float32(1 - math.Pow(p.Beta2, float64(t))),
		lr: float32(p.LR), eps: float32(p.Eps), decay: float32(p.LR * p.WeightDecay)}
}

// Apply updates the weights w and the moments m and v (each at least len(w) long) from the
// gradients g multiplied by scale.
func (s Step) Apply(w, g, m, v []float32, scale float32) {
	m, v, g = m[:len(w)], v[:len(w)], g[:len(w)]
	for j := range w {
		gj := g[j] * scale
		m[j] = s.b1*m[j] + (1-s.b1)*gj
		v[j] = s.b2*v[j] + (1-s.b2)*gj*gj
		mhat, vhat := m[j]/s.c1, v[j]/s.c2
		w[j] -= s.lr*mhat/(float32(math.Sqrt(float64(vhat)))+s.eps) + s.decay*w[j]
	}
}
