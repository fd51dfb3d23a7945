package ops

import (
	"fmt"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// matMul is C = op(A)·op(B) for matrices, op transposing when the flag is set.
type matMul struct{ transA, transB bool }

// MatMul multiplies two matrices, transposing either operand on the fly
// (no transposed copy is made). Projections use it directly: x·W for GPT-2's
// Conv1D weights stored [in, out], MatMul(x, W, false, true) for nn.Linear
// weights stored [out, in].
func MatMul(a, b *gorgonia.Node, transA, transB bool) (*gorgonia.Node, error) {
	return apply(matMul{transA, transB}, a, b)
}

func (k matMul) String() string { return fmt.Sprintf("MatMul{tA=%t,tB=%t}", k.transA, k.transB) }

func (k matMul) signature() ([]argType, argType) { return []argType{f32(2), f32(2)}, f32(2) }

func (k matMul) dims(a, b tensor.Shape) (m, inner, n int, err error) {
	if len(a) != 2 || len(b) != 2 {
		return 0, 0, 0, fmt.Errorf("%w: %v wants matrices, got %v and %v", ErrInput, k, a, b)
	}
	m, inner = a[0], a[1]
	if k.transA {
		m, inner = inner, m
	}
	innerB, n := b[0], b[1]
	if k.transB {
		innerB, n = n, innerB
	}
	if inner != innerB {
		return 0, 0, 0, fmt.Errorf("%w: %v: inner dimensions of %v and %v differ", ErrInput, k, a, b)
	}
	return m, inner, n, nil
}

func (k matMul) outShape(in []tensor.Shape) (tensor.Shape, error) {
	m, _, n, err := k.dims(in[0], in[1])
	return tensor.Shape{m, n}, err
}

func (k matMul) forward(out []float32, in []*tensor.Dense) error {
	a, b := in[0].Shape(), in[1].Shape()
	m, _, n, err := k.dims(a, b)
	if err != nil {
		return err
	}
	gemm(k.transA, k.transB, 1,
		blas32.General{Rows: a[0], Cols: a[1], Stride: a[1], Data: data(in[0])},
		blas32.General{Rows: b[0], Cols: b[1], Stride: b[1], Data: data(in[1])},
		0, blas32.General{Rows: m, Cols: n, Stride: n, Data: out})
	return nil
}

func (k matMul) diffWRT() []bool { return []bool{true, true} }

func (k matMul) grads(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
	a, b := in[0], in[1]
	var da, db *gorgonia.Node
	var err error
	switch {
	case !k.transA && !k.transB: // C = A·B
		if da, err = MatMul(g, b, false, true); err == nil {
			db, err = MatMul(a, g, true, false)
		}
	case !k.transA && k.transB: // C = A·Bᵀ
		if da, err = MatMul(g, b, false, false); err == nil {
			db, err = MatMul(g, a, true, false)
		}
	case k.transA && !k.transB: // C = Aᵀ·B
		if da, err = MatMul(b, g, false, true); err == nil {
			db, err = MatMul(a, g, false, false)
		}
	default: // C = Aᵀ·Bᵀ
		if da, err = MatMul(b, g, true, true); err == nil {
			db, err = MatMul(g, a, true, true)
		}
	}
	return gorgonia.Nodes{da, db}, err
}

// gemm is C = alpha·op(A)·op(B) + beta·C where A and B are given as stored.
func gemm(transA, transB bool, alpha float32, a, b blas32.General, beta float32, c blas32.General) {
	ta, tb := blas.NoTrans, blas.NoTrans
	if transA {
		ta = blas.Trans
	}
	if transB {
		tb = blas.Trans
	}
	blas32.Gemm(ta, tb, alpha, a, b, beta, c)
}
