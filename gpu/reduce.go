package gpu

// Sum queues out = the sum of in over axis (in contiguous; out contiguous with in's elements
// divided by in.Shape()[axis], e.g. in's shape without that axis or with it as 1).
func (d *Device) Sum(out, in *Tensor, axis int) error { return d.reduce("sum", out, in, axis) }

// Max queues out = the maximum of in over axis, shaped as for Sum.
func (d *Device) Max(out, in *Tensor, axis int) error { return d.reduce("max", out, in, axis) }

func (d *Device) reduce(kind string, out, in *Tensor, axis int) error {
	if axis < 0 || axis >= len(in.shape) {
		return shapeError(kind, "axis %d of %v", axis, in.shape)
	}
	if !in.Contiguous() || !out.Contiguous() {
		return shapeError(kind, "operands must be contiguous")
	}
	outer, inner := 1, 1
	for _, s := range in.shape[:axis] {
		outer *= s
	}
	for _, s := range in.shape[axis+1:] {
		inner *= s
	}
	length := in.shape[axis]
	if out.Len() != outer*inner {
		return shapeError(kind, "out %v for %v over axis %d", out.shape, in.shape, axis)
	}
	if inner == 1 {
		return d.launch(kind+"_last_f32", outer, rowBlock(length), out.ptr, in.ptr, outer, length)
	}
	return d.launch(kind+"_axis_f32", d.elementGrid(outer*inner), elementBlock, out.ptr, in.ptr, outer, length, inner)
}

// sumsqBlocks is the fixed grid of the squared-norm reduction: fixed so that its result does not
// depend on the device, and large enough to fill an H200 (132 SMs) several times.
const sumsqBlocks = 1024

// SumSquares queues acc += sum(x^2), acc a one-element tensor: called over every gradient, it
// accumulates the squared global norm that AdamW's clipping reads on the device (two passes,
// deterministic, no host round trip).
func (d *Device) SumSquares(acc, x *Tensor) error {
	if acc.Len() != 1 || !x.Contiguous() {
		return shapeError("SumSquares", "acc %v, x contiguous %v", acc.shape, x.Contiguous())
	}
	if d.partials == nil {
		p, err := d.NewTensor(sumsqBlocks)
		if err != nil {
			return err
		}
		d.partials = p
	}
	grid := min(d.elementGrid(x.Len()), sumsqBlocks)
	if err := d.launch("sumsq_partial_f32", grid, elementBlock, d.partials.ptr, x.ptr, x.Len()); err != nil {
		return err
	}
	return d.launch("sum_accumulate_f32", 1, 1024, acc.ptr, d.partials.ptr, grid)
}
