package gpu

// ptrOf is t's device address, 0 (a null pointer for the kernel) for a nil tensor.
func ptrOf(t *Tensor) uintptr {
	if t == nil {
		return 0
	}
	return t.ptr
}

// checkVec checks an optional per-column or per-row vector.
func checkVec(op string, t *Tensor, n int) error {
	if t != nil && (!t.Contiguous() || t.Len() != n) {
		return shapeError(op, "vector %v, want %d contiguous elements", t.shape, n)
	}
	return nil
}

// LayerNorm queues out = (x - mean) / sqrt(var + eps) * gamma + beta over the last axis. gamma and
// beta may be nil; mean and rstd (one per row) receive the statistics the backward pass needs and
// may be nil when it will not run.
func (d *Device) LayerNorm(out, mean, rstd, x, gamma, beta *Tensor, eps float32) error {
	rows, cols, err := lastAxis("LayerNorm", out, x)
	if err != nil || rows == 0 {
		return err
	}
	for _, v := range []struct {
		t *Tensor
		n int
	}{{mean, rows}, {rstd, rows}, {gamma, cols}, {beta, cols}} {
		if err := checkVec("LayerNorm", v.t, v.n); err != nil {
			return err
		}
	}
	return d.launch("layernorm_fwd_f32", rows, rowBlock(cols), out.ptr, ptrOf(mean), ptrOf(rstd), x.ptr,
		ptrOf(gamma), ptrOf(beta), rows, cols, eps)
}

// LayerNormBackward queues the gradients of LayerNorm: dx (may be nil), dgamma and dbeta (each may
// be nil), from dy, the input x and the saved mean and rstd.
func (d *Device) LayerNormBackward(dx, dgamma, dbeta, dy, x, mean, rstd, gamma *Tensor) error {
	rows, cols, err := lastAxis("LayerNormBackward", dy, x)
	if err != nil || rows == 0 {
		return err
	}
	for _, v := range []struct {
		t *Tensor
		n int
	}{{mean, rows}, {rstd, rows}, {gamma, cols}, {dgamma, cols}, {dbeta, cols}} {
		if err := checkVec("LayerNormBackward", v.t, v.n); err != nil {
			return err
		}
	}
	if mean == nil || rstd == nil {
		return shapeError("LayerNormBackward", "mean and rstd are required")
	}
	if dx != nil {
		if err := sameContiguous("LayerNormBackward", dx, dy); err != nil {
			return err
		}
		if err := d.launch("layernorm_bwd_dx_f32", rows, rowBlock(cols), dx.ptr, dy.ptr, x.ptr, mean.ptr,
			rstd.ptr, ptrOf(gamma), rows, cols); err != nil {
			return err
		}
	}
	if dgamma == nil && dbeta == nil {
		return nil
	}
	return d.launch("layernorm_bwd_params_f32", d.elementGrid(cols), elementBlock, ptrOf(dgamma), ptrOf(dbeta),
		dy.ptr, x.ptr, mean.ptr, rstd.ptr, rows, cols)
}

// RMSNorm queues out = x / sqrt(mean(x^2) + eps) * gamma over the last axis (gamma may be nil);
// rstd (one per row, may be nil) receives what the backward pass needs.
func (d *Device) RMSNorm(out, rstd, x, gamma *Tensor, eps float32) error {
	rows, cols, err := lastAxis("RMSNorm", out, x)
	if err != nil || rows == 0 {
		return err
	}
	if err := checkVec("RMSNorm", rstd, rows); err != nil {
		return err
	}
	if err := checkVec("RMSNorm", gamma, cols); err != nil {
		return err
	}
	return d.launch("rmsnorm_fwd_f32", rows, rowBlock(cols), out.ptr, ptrOf(rstd), x.ptr, ptrOf(gamma), rows,
		cols, eps)
}

// RMSNormBackward queues the gradients of RMSNorm: dx and dgamma (each may be nil) from dy, x and
// the saved rstd.
func (d *Device) RMSNormBackward(dx, dgamma, dy, x, rstd, gamma *Tensor) error {
	rows, cols, err := lastAxis("RMSNormBackward", dy, x)
	if err != nil || rows == 0 {
		return err
	}
	if rstd == nil {
		return shapeError("RMSNormBackward", "rstd is required")
	}
	for _, v := range []struct {
		t *Tensor
		n int
	}{{rstd, rows}, {gamma, cols}, {dgamma, cols}} {
		if err := checkVec("RMSNormBackward", v.t, v.n); err != nil {
			return err
		}
	}
	if dx != nil {
		if err := sameContiguous("RMSNormBackward", dx, dy); err != nil {
			return err
		}
		if err := d.launch("rmsnorm_bwd_dx_f32", rows, rowBlock(cols), dx.ptr, dy.ptr, x.ptr, rstd.ptr,
			ptrOf(gamma), rows, cols); err != nil {
			return err
		}
	}
	if dgamma == nil {
		return nil
	}
	return d.launch("rmsnorm_bwd_gamma_f32", d.elementGrid(cols), elementBlock, dgamma.ptr, dy.ptr, x.ptr,
		rstd.ptr, rows, cols)
}

// NormStats queues the per-row statistics of x's rows (last axis): mean (may be nil) and rstd of
// LayerNorm, or with rms the rstd of RMSNorm, for backward passes that recompute them.
func (d *Device) NormStats(mean, rstd, x *Tensor, eps float32, rms bool) error {
	rows, cols, err := lastAxis("NormStats", x)
	if err != nil || rows == 0 {
		return err
	}
	if rstd == nil {
		return shapeError("NormStats", "rstd is required")
	}
	if err := checkVec("NormStats", mean, rows); err != nil {
		return err
	}
	if err := checkVec("NormStats", rstd, rows); err != nil {
		return err
	}
	var flag int32
	if rms {
		flag = 1
	}
	return d.launch("norm_stats_f32", rows, rowBlock(cols), ptrOf(mean), rstd.ptr, x.ptr, rows, cols, eps, flag)
}
