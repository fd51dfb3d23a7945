package gpu

import "slices"

// The binary operations of compare.cu: power, and comparisons giving 1 or 0.
const (
	OpPow BinaryOp = "pow"
	OpLt  BinaryOp = "lt"
	OpGt  BinaryOp = "gt"
	OpLte BinaryOp = "lte"
	OpGte BinaryOp = "gte"
	OpEq  BinaryOp = "eq"
	OpNe  BinaryOp = "ne"
)

// The unary operations of math.cu.
const (
	OpSign        UnaryOp = "sign"
	OpCeil        UnaryOp = "ceil"
	OpFloor       UnaryOp = "floor"
	OpSin         UnaryOp = "sin"
	OpCos         UnaryOp = "cos"
	OpLog2        UnaryOp = "log2"
	OpInverseSqrt UnaryOp = "inverse_sqrt"
	OpLog1p       UnaryOp = "log1p"
	OpExpm1       UnaryOp = "expm1"
	OpSoftplus    UnaryOp = "softplus"
)

// Narrow is a view of elements start, start+step, ... (below end) along axis.
func (t *Tensor) Narrow(axis, start, end, step int) (*Tensor, error) {
	if axis < 0 || axis >= len(t.shape) || start < 0 || end > t.shape[axis] || start > end || step < 1 {
		return nil, shapeError("Narrow", "axis %d [%d:%d:%d] of %v", axis, start, end, step, t.shape)
	}
	shape, strides := slices.Clone(t.shape), slices.Clone(t.strides)
	shape[axis] = (end - start + step - 1) / step
	strides[axis] *= step
	return &Tensor{dev: t.dev, ptr: t.ptr + uintptr(start*t.strides[axis]*4), shape: shape, strides: strides}, nil
}

// Assign queues out = in for two views of one shape, each at any strides (out must not overlap
// itself): slices, concatenation, repeats.
func (d *Device) Assign(out, in *Tensor) error { return d.strided("assign_strided_f32", out, in) }

// Accumulate queues out += in, as Assign.
func (d *Device) Accumulate(out, in *Tensor) error {
	return d.strided("accumulate_strided_f32", out, in)
}

func (d *Device) strided(kernel string, out, in *Tensor) error {
	if !slices.Equal(out.shape, in.shape) {
		return shapeError(kernel, "%v into %v", in.shape, out.shape)
	}
	n := out.Len()
	if n == 0 {
		return nil
	}
	dims, st, err := collapse(out.shape, out.strides, in.strides)
	if err != nil {
		return err
	}
	o, s := st[0], st[1]
	return d.launch(kernel, d.elementGrid(n), elementBlock, out.ptr, in.ptr, n, dims[1], dims[2], dims[3],
		o[0], o[1], o[2], o[3], s[0], s[1], s[2], s[3])
}

// axisLines views a contiguous tensor as (outer, len, inner) around axis.
func axisLines(op string, axis int, ts ...*Tensor) (outer, length, inner int, err error) {
	if err := sameContiguous(op, ts...); err != nil {
		return 0, 0, 0, err
	}
	shape := ts[0].shape
	for _, t := range ts[1:] {
		if !slices.Equal(t.shape, shape) {
			return 0, 0, 0, shapeError(op, "shapes %v and %v", shape, t.shape)
		}
	}
	if axis < 0 || axis >= len(shape) {
		return 0, 0, 0, shapeError(op, "axis %d of %v", axis, shape)
	}
	outer, inner = 1, 1
	for _, s := range shape[:axis] {
		outer *= s
	}
	for _, s := range shape[axis+1:] {
		inner *= s
	}
	return outer, shape[axis], inner, nil
}

func flag(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// SoftmaxAxis queues out = softmax(in) along axis, or log-softmax when log is set, one thread
// per line in the order of Gorgonia's CPU engine (softmax_axis.cu).
func (d *Device) SoftmaxAxis(out, in *Tensor, axis int, log bool) error {
	outer, length, inner, err := axisLines("SoftmaxAxis", axis, out, in)
	if err != nil || outer*inner*length == 0 {
		return err
	}
	return d.launch("softmax_axis_f32", d.elementGrid(outer*inner), elementBlock, out.ptr, in.ptr, outer, length,
		inner, flag(log))
}

// SoftmaxAxisBackward queues the gradient of SoftmaxAxis from its output y and the output's
// gradient dy.
func (d *Device) SoftmaxAxisBackward(dx, y, dy *Tensor, axis int, log bool) error {
	outer, length, inner, err := axisLines("SoftmaxAxisBackward", axis, dx, y, dy)
	if err != nil || outer*inner*length == 0 {
		return err
	}
	return d.launch("softmax_axis_bwd_f32", d.elementGrid(outer*inner), elementBlock, dx.ptr, y.ptr, dy.ptr, outer,
		length, inner, flag(log))
}

// Dropout queues out = mask != 0 ? x / keep : 0.
func (d *Device) Dropout(out, x, mask *Tensor, keep float32) error {
	if err := sameContiguous("Dropout", out, x, mask); err != nil {
		return err
	}
	return d.launch("dropout_f32", d.elementGrid(out.Len()), elementBlock, out.ptr, x.ptr, mask.ptr, keep, out.Len())
}

// DropoutBackward queues Gorgonia's dropout gradient: dx = dy / p where y != 0 (and p != 0), else 0.
func (d *Device) DropoutBackward(dx, y, dy *Tensor, p float32) error {
	if err := sameContiguous("DropoutBackward", dx, y, dy); err != nil {
		return err
	}
	return d.launch("dropout_bwd_f32", d.elementGrid(dx.Len()), elementBlock, dx.ptr, y.ptr, dy.ptr, p, dx.Len())
}
