package gpu

import "math"

// AdamWConfig holds AdamW's hyperparameters (PyTorch's names and defaults: betas 0.9/0.999, eps
// 1e-8, weight decay 0.01).
type AdamWConfig struct {
	LR, Beta1, Beta2, Eps, WeightDecay float32
	// MaxNorm > 0 clips the gradients to that global norm, read on the device from the squared norm
	// that SumSquares accumulated over every gradient of the step.
	MaxNorm float32
}

// AdamW queues one AdamW step (step counts from 1) on param with its gradient and moment buffers
// m and v (zero before the first step). normsq is the one-element squared global gradient norm, or
// nil for no clipping.
func (d *Device) AdamW(param, grad, m, v, normsq *Tensor, cfg AdamWConfig, step int) error {
	if err := sameContiguous("AdamW", param, grad, m, v); err != nil {
		return err
	}
	if normsq != nil && normsq.Len() != 1 {
		return shapeError("AdamW", "normsq %v must have one element", normsq.shape)
	}
	if step < 1 {
		return shapeError("AdamW", "step %d, steps count from 1", step)
	}
	bc1 := float32(1 - math.Pow(float64(cfg.Beta1), float64(step)))
	bc2 := float32(1 - math.Pow(float64(cfg.Beta2), float64(step)))
	n := param.Len()
	return d.launch("adamw_f32", d.elementGrid(n), elementBlock, param.ptr, grad.ptr, m.ptr, v.ptr, ptrOf(normsq), n,
		cfg.LR, cfg.Beta1, cfg.Beta2, cfg.Eps, cfg.WeightDecay, bc1, bc2, cfg.MaxNorm)
}
