package gpu

import (
	"slices"
)

// BinaryOp names an elementwise binary operation.
type BinaryOp string

// The binary operations (kernels NAME_f32 and NAME_f32_c in elementwise.cu).
const (
	OpAdd BinaryOp = "add"
	OpSub BinaryOp = "sub"
	OpMul BinaryOp = "mul"
	OpDiv BinaryOp = "div"
)

// UnaryOp names an elementwise unary operation.
type UnaryOp string

// The unary operations (kernels NAME_f32 in elementwise.cu).
const (
	OpExp     UnaryOp = "exp"
	OpLog     UnaryOp = "log"
	OpNeg     UnaryOp = "neg"
	OpSquare  UnaryOp = "square"
	OpCube    UnaryOp = "cube"
	OpSqrt    UnaryOp = "sqrt"
	OpInverse UnaryOp = "inverse"
	OpTanh    UnaryOp = "tanh"
	OpSigmoid UnaryOp = "sigmoid"
	OpAbs     UnaryOp = "abs"
	OpReLU    UnaryOp = "relu"
)

// BroadcastShape is the shape numpy's broadcasting rules give a and b, or an error.
func BroadcastShape(a, b []int) ([]int, error) {
	n := max(len(a), len(b))
	out := make([]int, n)
	for i := range n {
		x, y := dimFromRight(a, n-1-i), dimFromRight(b, n-1-i)
		switch {
		case x == y || y == 1:
			out[i] = x
		case x == 1:
			out[i] = y
		default:
			return nil, shapeError("broadcast", "%v and %v", a, b)
		}
	}
	return out, nil
}

func dimFromRight(s []int, fromRight int) int {
	if i := len(s) - 1 - fromRight; i >= 0 {
		return s[i]
	}
	return 1
}

// Binary queues out = a OP b with broadcasting; out must be contiguous with the broadcast shape.
// a and b may be strided views.
func (d *Device) Binary(op BinaryOp, out, a, b *Tensor) error {
	shape, err := BroadcastShape(a.shape, b.shape)
	if err != nil {
		return err
	}
	if !sameLayout(out.shape, shape) || !out.Contiguous() {
		return shapeError(string(op), "out %v for operands %v and %v", out.shape, a.shape, b.shape)
	}
	n := out.Len()
	if n == 0 {
		return nil
	}
	name := string(op) + "_f32"
	if a.Contiguous() && b.Contiguous() && a.Len() == n && b.Len() == n {
		return d.launch(name+"_c", d.elementGrid(n), elementBlock, out.ptr, a.ptr, b.ptr, n)
	}
	as, err := broadcastStrides(a, shape)
	if err != nil {
		return err
	}
	bs, err := broadcastStrides(b, shape)
	if err != nil {
		return err
	}
	dims, strides, err := collapse(shape, as, bs)
	if err != nil {
		return shapeError(string(op), "%v", err)
	}
	sa, sb := strides[0], strides[1]
	return d.launch(name, d.elementGrid(n), elementBlock, out.ptr, a.ptr, b.ptr, n, dims[1], dims[2], dims[3],
		sa[0], sa[1], sa[2], sa[3], sb[0], sb[1], sb[2], sb[3])
}

// Add, Sub, Mul and Div are Binary with that operation.
func (d *Device) Add(out, a, b *Tensor) error { return d.Binary(OpAdd, out, a, b) }
func (d *Device) Sub(out, a, b *Tensor) error { return d.Binary(OpSub, out, a, b) }
func (d *Device) Mul(out, a, b *Tensor) error { return d.Binary(OpMul, out, a, b) }
func (d *Device) Div(out, a, b *Tensor) error { return d.Binary(OpDiv, out, a, b) }

// collapse merges the dimensions of shape (contiguous output, and operands at the given strides)
// into at most 4, padded on the left with 1s, returning them and each operand's strides. Adjacent
// dimensions merge when every operand steps through them as one; size-1 dimensions vanish.
func collapse(shape []int, operandStrides ...[]int) ([4]int, [][4]int, error) {
	type dim struct {
		size    int
		strides []int
	}
	var dims []dim
	for i, s := range shape {
		if s == 1 {
			continue
		}
		st := make([]int, len(operandStrides))
		for k, os := range operandStrides {
			st[k] = os[i]
		}
		if len(dims) > 0 {
			last := &dims[len(dims)-1]
			mergeable := true
			for k := range st {
				if last.strides[k] != st[k]*s {
					mergeable = false
				}
			}
			if mergeable {
				last.size *= s
				copy(last.strides, st)
				continue
			}
		}
		dims = append(dims, dim{size: s, strides: st})
	}
	var sizes [4]int
	strides := make([][4]int, len(operandStrides))
	if len(dims) > 4 {
		return sizes, nil, shapeError("collapse", "shape %v needs %d dimensions, kernels take 4", shape, len(dims))
	}
	pad := 4 - len(dims)
	for i := range pad {
		sizes[i] = 1
	}
	for i, dm := range dims {
		sizes[pad+i] = dm.size
		for k := range operandStrides {
			strides[k][pad+i] = dm.strides[k]
		}
	}
	return sizes, strides, nil
}

// Unary queues out = OP(a) elementwise; both contiguous with as many elements.
func (d *Device) Unary(op UnaryOp, out, a *Tensor) error {
	if err := sameContiguous(string(op), out, a); err != nil {
		return err
	}
	return d.launch(string(op)+"_f32", d.elementGrid(out.Len()), elementBlock, out.ptr, a.ptr, out.Len())
}

// Scale queues out = alpha * a.
func (d *Device) Scale(out, a *Tensor, alpha float32) error {
	if err := sameContiguous("Scale", out, a); err != nil {
		return err
	}
	return d.launch("scale_f32", d.elementGrid(out.Len()), elementBlock, out.ptr, a.ptr, alpha, out.Len())
}

// AddScalar queues out = a + s.
func (d *Device) AddScalar(out, a *Tensor, s float32) error {
	if err := sameContiguous("AddScalar", out, a); err != nil {
		return err
	}
	return d.launch("add_scalar_f32", d.elementGrid(out.Len()), elementBlock, out.ptr, a.ptr, s, out.Len())
}

// Axpy queues y += alpha * x (gradient accumulation).
func (d *Device) Axpy(y, x *Tensor, alpha float32) error {
	if err := sameContiguous("Axpy", y, x); err != nil {
		return err
	}
	return d.launch("axpy_f32", d.elementGrid(y.Len()), elementBlock, y.ptr, x.ptr, alpha, y.Len())
}

// Fill queues out = v.
func (d *Device) Fill(out *Tensor, v float32) error {
	if !out.Contiguous() {
		return shapeError("Fill", "strided tensor")
	}
	return d.launch("fill_f32", d.elementGrid(out.Len()), elementBlock, out.ptr, v, out.Len())
}

// Copy queues out = in, materialising any strided view of in (transpose, permutation, broadcast)
// into the contiguous out of the same shape.
func (d *Device) Copy(out, in *Tensor) error {
	if !slices.Equal(out.shape, in.shape) || !out.Contiguous() {
		return shapeError("Copy", "%v into %v", in.shape, out.shape)
	}
	n := out.Len()
	if n == 0 {
		return nil
	}
	if in.Contiguous() {
		return d.CopyDevice(out, in)
	}
	dims, st, err := collapse(in.shape, in.strides)
	if err != nil {
		return err
	}
	s := st[0]
	return d.launch("copy_strided_f32", d.elementGrid(n), elementBlock, out.ptr, in.ptr, n, dims[1], dims[2],
		dims[3], s[0], s[1], s[2], s[3])
}

// sameLayout reports whether two shapes lay out row-major the same way (equal up to size-1 dims).
func sameLayout(a, b []int) bool {
	squeeze := func(s []int) []int {
		return slices.DeleteFunc(slices.Clone(s), func(n int) bool { return n == 1 })
	}
	return slices.Equal(squeeze(a), squeeze(b))
}

// sameContiguous checks that every tensor is contiguous with as many elements as the first.
func sameContiguous(op string, ts ...*Tensor) error {
	for _, t := range ts {
		if t == nil {
			return shapeError(op, "missing operand")
		}
		if !t.Contiguous() || t.Len() != ts[0].Len() {
			return shapeError(op, "operands must be contiguous with %d elements, got %v (strides %v)",
				ts[0].Len(), t.shape, t.strides)
		}
	}
	return nil
}
