package gpu

// GELU queues out = gelu(x), tanh approximation (GPT-2's gelu_new).
func (d *Device) GELU(out, x *Tensor) error { return d.pointwise("gelu_fwd_f32", out, x) }

// GELUBackward queues dx = dy * gelu'(x).
func (d *Device) GELUBackward(dx, x, dy *Tensor) error { return d.pointwise("gelu_bwd_f32", dx, x, dy) }

// SiLU queues out = x * sigmoid(x).
func (d *Device) SiLU(out, x *Tensor) error { return d.pointwise("silu_fwd_f32", out, x) }

// SiLUBackward queues dx = dy * silu'(x).
func (d *Device) SiLUBackward(dx, x, dy *Tensor) error { return d.pointwise("silu_bwd_f32", dx, x, dy) }

// SwiGLU queues out = silu(gate) * up.
func (d *Device) SwiGLU(out, gate, up *Tensor) error {
	return d.pointwise("swiglu_fwd_f32", out, gate, up)
}

// SwiGLUBackward queues dgate and dup, the gradients of SwiGLU given dy.
func (d *Device) SwiGLUBackward(dgate, dup, gate, up, dy *Tensor) error {
	return d.pointwise("swiglu_bwd_f32", dgate, dup, gate, up, dy)
}

// pointwise launches a kernel whose arguments are the tensors' pointers, then the element count.
func (d *Device) pointwise(kernel string, ts ...*Tensor) error {
	if err := sameContiguous(kernel, ts...); err != nil {
		return err
	}
	args := make([]any, 0, len(ts)+1)
	for _, t := range ts {
		args = append(args, t.ptr)
	}
	n := ts[0].Len()
	return d.launch(kernel, d.elementGrid(n), elementBlock, append(args, n)...)
}
