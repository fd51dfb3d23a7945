package gpu

// lastAxis returns rows × cols of a contiguous tensor viewed as rows of its last dimension.
func lastAxis(op string, ts ...*Tensor) (rows, cols int, err error) {
	if err := sameContiguous(op, ts...); err != nil {
		return 0, 0, err
	}
	t := ts[0]
	if len(t.shape) == 0 {
		return 0, 0, shapeError(op, "scalar operand")
	}
	cols = t.shape[len(t.shape)-1]
	if cols == 0 {
		return 0, 0, nil
	}
	return t.Len() / cols, cols, nil
}

// Softmax queues out = softmax(in) over the last axis.
func (d *Device) Softmax(out, in *Tensor) error {
	rows, cols, err := lastAxis("Softmax", out, in)
	if err != nil || rows == 0 {
		return err
	}
	return d.launch("softmax_f32", rows, rowBlock(cols), out.ptr, in.ptr, rows, cols)
}

// CausalSoftmax queues attention probabilities: in holds scores (..., tq, tk); out = softmax(scale
// * in) over keys, query q seeing keys k <= q + tk - tq, masked entries 0.
func (d *Device) CausalSoftmax(out, in *Tensor, scale float32) error {
	rows, cols, err := lastAxis("CausalSoftmax", out, in)
	if err != nil || rows == 0 {
		return err
	}
	if len(in.shape) < 2 {
		return shapeError("CausalSoftmax", "scores %v need (..., tq, tk)", in.shape)
	}
	tq := in.shape[len(in.shape)-2]
	return d.launch("causal_softmax_f32", rows, rowBlock(cols), out.ptr, in.ptr, rows, cols, tq, scale)
}

// SoftmaxBackward queues dx = scale * y * (dy - sum(dy * y)) over the last axis, the gradient of
// Softmax (scale 1) or CausalSoftmax (its scale) given its output y.
func (d *Device) SoftmaxBackward(dx, y, dy *Tensor, scale float32) error {
	rows, cols, err := lastAxis("SoftmaxBackward", dx, y, dy)
	if err != nil || rows == 0 {
		return err
	}
	return d.launch("softmax_backward_f32", rows, rowBlock(cols), dx.ptr, y.ptr, dy.ptr, rows, cols, scale)
}
