package graphexec

import (
	"fmt"

	"github.com/gmlake/gmlake/gpu"
)

// deviceArrays runs the standard ops' lowering on a Device: views are gpu.Tensor views, the
// primitives its kernels and cuBLAS.
type deviceArrays struct{ d *gpu.Device }

func (deviceArrays) shape(t *gpu.Tensor) []int                            { return t.Shape() }
func (a deviceArrays) alloc(shape ...int) (*gpu.Tensor, error)            { return a.d.NewTensor(shape...) }
func (deviceArrays) free(t *gpu.Tensor) error                             { return t.Free() }
func (deviceArrays) reshape(t *gpu.Tensor, s ...int) (*gpu.Tensor, error) { return t.Reshape(s...) }
func (deviceArrays) permute(t *gpu.Tensor, p ...int) (*gpu.Tensor, error) { return t.Permute(p...) }
func (deviceArrays) narrow(t *gpu.Tensor, axis, start, end, step int) (*gpu.Tensor, error) {
	return t.Narrow(axis, start, end, step)
}
func (deviceArrays) broadcastTo(t *gpu.Tensor, s ...int) (*gpu.Tensor, error) {
	return t.BroadcastTo(s...)
}
func (a deviceArrays) assign(out, in *gpu.Tensor) error           { return a.d.Assign(out, in) }
func (a deviceArrays) accumulate(out, in *gpu.Tensor) error       { return a.d.Accumulate(out, in) }
func (a deviceArrays) fill(out *gpu.Tensor, v float32) error      { return a.d.Fill(out, v) }
func (deviceArrays) upload(out *gpu.Tensor, data []float32) error { return out.CopyFrom(data) }
func (a deviceArrays) binary(op string, out, x, y *gpu.Tensor) error {
	return a.d.Binary(gpu.BinaryOp(op), out, x, y)
}
func (a deviceArrays) unary(op string, out, x *gpu.Tensor) error {
	return a.d.Unary(gpu.UnaryOp(op), out, x)
}
func (a deviceArrays) reduce(max bool, out, in *gpu.Tensor, axis int) error {
	if max {
		return a.d.Max(out, in, axis)
	}
	return a.d.Sum(out, in, axis)
}
func (a deviceArrays) softmax(out, in *gpu.Tensor, axis int, log bool) error {
	return a.d.SoftmaxAxis(out, in, axis, log)
}
func (a deviceArrays) softmaxGrad(dx, y, dy *gpu.Tensor, axis int, log bool) error {
	return a.d.SoftmaxAxisBackward(dx, y, dy, axis, log)
}
func (a deviceArrays) gemm(out, x, y *gpu.Tensor, transA, transB bool) error {
	switch len(out.Shape()) {
	case 2:
		return a.d.MatMul(out, x, y, transA, transB, 1, 0)
	case 3:
		return a.d.BatchedMatMul(out, x, y, transA, transB, 1, 0)
	}
	return fmt.Errorf("%w: gemm into %v", gpu.ErrShape, out.Shape())
}
func (a deviceArrays) dropout(out, x, mask *gpu.Tensor, keep float32) error {
	return a.d.Dropout(out, x, mask, keep)
}
func (a deviceArrays) dropoutGrad(dx, y, dy *gpu.Tensor, p float32) error {
	return a.d.DropoutBackward(dx, y, dy, p)
}

// standard runs op node i, one of Gorgonia's own ops.
func (m *Machine) standard(i int, desc Desc, out *gpu.Tensor, in []*gpu.Tensor) error {
	return lowerStandard[*gpu.Tensor](deviceArrays{m.dev}, desc, m.nodes[i].Op(), out, in)
}
