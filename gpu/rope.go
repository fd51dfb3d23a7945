package gpu

// RoPE queues out = x * cos + rotate_half(x) * sin (Hugging Face's form) for x of rows of d
// elements; cos and sin are (t, d) tables, and row r of x is at position (r / inner) % t: inner = 1
// for (batch, heads, t, d) layouts, inner = heads for (batch, t, heads, d).
func (d *Device) RoPE(out, x, cos, sin *Tensor, inner int) error {
	return d.rope("rope_fwd_f32", out, x, cos, sin, inner)
}

// RoPEBackward queues dx, the gradient of RoPE given dy (same tables and layout).
func (d *Device) RoPEBackward(dx, dy, cos, sin *Tensor, inner int) error {
	return d.rope("rope_bwd_f32", dx, dy, cos, sin, inner)
}

func (d *Device) rope(kernel string, out, x, cos, sin *Tensor, inner int) error {
	rows, dim, err := lastAxis(kernel, out, x)
	if err != nil || rows == 0 {
		return err
	}
	if err := sameContiguous(kernel, cos, sin); err != nil {
		return err
	}
	if dim%2 != 0 || len(cos.shape) != 2 || cos.shape[1] != dim || inner < 1 {
		return shapeError(kernel, "x rows of %d, tables %v, inner %d", dim, cos.shape, inner)
	}
	t := cos.shape[0]
	return d.launch(kernel, d.elementGrid(rows*dim), elementBlock, out.ptr, x.ptr, cos.ptr, sin.ptr, rows, t, dim,
		inner)
}
