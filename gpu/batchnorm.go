package gpu

import "errors"

// BatchNormBackward queues the gradients of training-mode batch normalization over x [N, C, H, W]
// (NCHW, contiguous): dx (may be nil; needs gamma [C]), dgamma and dbeta ([C] each, may be nil),
// from dy and x with eps as in the forward pass. The per-channel statistics are recomputed from x
// into a scratch tensor from the Device's allocator that lives for the call.
func (d *Device) BatchNormBackward(dx, dgamma, dbeta, dy, x, gamma *Tensor, eps float32) (err error) {
	s := x.Shape()
	if len(s) != 4 {
		return shapeError("BatchNormBackward", "x %v is not NCHW", s)
	}
	if err := sameContiguous("BatchNormBackward", dy, x); err != nil {
		return err
	}
	n, c, hw := s[0], s[1], s[2]*s[3]
	if n*hw >= 1<<32 {
		return shapeError("BatchNormBackward", "x %v: %d values per channel, the kernels take fewer than 2^32", s, n*hw)
	}
	for _, v := range []*Tensor{gamma, dgamma, dbeta} {
		if err := checkVec("BatchNormBackward", v, c); err != nil {
			return err
		}
	}
	if dx != nil {
		if gamma == nil {
			return shapeError("BatchNormBackward", "dx needs gamma")
		}
		if err := sameContiguous("BatchNormBackward", dx, dy); err != nil {
			return err
		}
	}
	stats, err := d.NewTensor(c, 4)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stats.Free()) }()
	if err := d.launch("batchnorm_stats_f32", c, 512, stats.ptr, x.ptr, dy.ptr, n, c, hw, eps); err != nil {
		return err
	}
	if dx != nil {
		if err := d.launch("batchnorm_bwd_dx_f32", d.elementGrid(x.Len()), elementBlock, dx.ptr, dy.ptr, x.ptr, gamma.ptr,
			stats.ptr, n, c, hw); err != nil {
			return err
		}
	}
	if dgamma == nil && dbeta == nil {
		return nil
	}
	return d.launch("batchnorm_bwd_params_f32", d.elementGrid(c), elementBlock, ptrOf(dgamma), ptrOf(dbeta), stats.ptr, c)
}
