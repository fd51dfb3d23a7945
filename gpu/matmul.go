package gpu

import "github.com/gmlake/gmlake/gpu/cublas"

// MatMul queues out = alpha * op(a) @ op(b) + beta * out for row-major matrices, op transposing
// when asked (Gorgonia's transA/transB). a and b are contiguous 2-D tensors; out is (m, n).
//
// cuBLAS is column-major, and a row-major matrix is its transpose read column-major, so
// out^T = op(b)^T @ op(a)^T is one column-major GEMM with the operands swapped: no copies.
func (d *Device) MatMul(out, a, b *Tensor, transA, transB bool, alpha, beta float32) error {
	m, k, n, err := gemmShape("MatMul", out, a, b, 2, transA, transB)
	if err != nil {
		return err
	}
	lda, ldb := a.shape[1], b.shape[1]
	return d.withContext(func() error {
		return d.blas.Sgemm(op(transB), op(transA), n, m, k, alpha, b.ptr, ldb, a.ptr, lda, beta, out.ptr, n)
	})
}

// BatchedMatMul is MatMul over the leading dimension of 3-D tensors (batch, rows, cols): one
// strided-batched GEMM. For attention, fold batch and heads into the leading dimension.
func (d *Device) BatchedMatMul(out, a, b *Tensor, transA, transB bool, alpha, beta float32) error {
	m, k, n, err := gemmShape("BatchedMatMul", out, a, b, 3, transA, transB)
	if err != nil {
		return err
	}
	batch := a.shape[0]
	if b.shape[0] != batch || out.shape[0] != batch {
		return shapeError("BatchedMatMul", "batches %d, %d, %d", batch, b.shape[0], out.shape[0])
	}
	lda, ldb := a.shape[2], b.shape[2]
	sa, sb, so := int64(a.shape[1]*a.shape[2]), int64(b.shape[1]*b.shape[2]), int64(m*n)
	return d.withContext(func() error {
		return d.blas.SgemmStridedBatched(op(transB), op(transA), n, m, k, alpha, b.ptr, ldb, sb, a.ptr, lda, sa,
			beta, out.ptr, n, so, batch)
	})
}

func op(trans bool) cublas.Op {
	if trans {
		return cublas.Trans
	}
	return cublas.NoTrans
}

// gemmShape checks ranks, contiguity and inner dimensions; it returns op(a) = m×k, op(b) = k×n.
func gemmShape(name string, out, a, b *Tensor, rank int, transA, transB bool) (m, k, n int, err error) {
	for _, t := range []*Tensor{out, a, b} {
		if len(t.shape) != rank || !t.Contiguous() {
			return 0, 0, 0, shapeError(name, "operands must be contiguous of rank %d, got %v", rank, t.shape)
		}
	}
	r := rank - 2
	m, k = a.shape[r], a.shape[r+1]
	if transA {
		m, k = k, m
	}
	kb, n := b.shape[r], b.shape[r+1]
	if transB {
		kb, n = n, kb
	}
	if k != kb || out.shape[r] != m || out.shape[r+1] != n {
		return 0, 0, 0, shapeError(name, "%v (trans %v) @ %v (trans %v) into %v", a.shape, transA, b.shape, transB,
			out.shape)
	}
	return m, k, n, nil
}

// Matrix is a row-major matrix inside device memory, possibly a block of a wider one: Rows × Cols
// elements, consecutive rows Stride elements apart (Stride ≥ Cols). Attention reads each head's
// [seq, headDim] block of a token-major [tokens, heads*headDim] matrix this way, with no copies.
type Matrix struct {
	Ptr        uintptr
	Rows, Cols int
	Stride     int
}

// At is the block of m starting at element (row, col), of rows × cols.
func (m Matrix) At(row, col, rows, cols int) Matrix {
	return Matrix{Ptr: m.Ptr + uintptr((row*m.Stride+col)*4), Rows: rows, Cols: cols, Stride: m.Stride}
}

// AsMatrix views a contiguous 2-D tensor (or any contiguous tensor as rows of its last axis).
func (t *Tensor) AsMatrix() (Matrix, error) {
	if !t.Contiguous() || len(t.shape) == 0 {
		return Matrix{}, shapeError("AsMatrix", "tensor %v (contiguous %v)", t.shape, t.Contiguous())
	}
	cols := t.shape[len(t.shape)-1]
	return Matrix{Ptr: t.ptr, Rows: t.Len() / max(cols, 1), Cols: cols, Stride: cols}, nil
}

// Gemm queues c = alpha * op(a) @ op(b) + beta * c for count matrix triples, the i-th of each at
// its base plus i times its batch stride (elements): one strided-batched cuBLAS call (a plain GEMM
// when count is 1).
func (d *Device) Gemm(transA, transB bool, alpha float32, a, b Matrix, beta float32, c Matrix,
	count int, strideA, strideB, strideC int) error {
	m, k := a.Rows, a.Cols
	if transA {
		m, k = k, m
	}
	kb, n := b.Rows, b.Cols
	if transB {
		kb, n = n, kb
	}
	if k != kb || c.Rows != m || c.Cols != n || count < 1 {
		return shapeError("Gemm", "%dx%d (trans %v) @ %dx%d (trans %v) into %dx%d, count %d", a.Rows, a.Cols, transA,
			b.Rows, b.Cols, transB, c.Rows, c.Cols, count)
	}
	return d.withContext(func() error {
		if count == 1 {
			return d.blas.Sgemm(op(transB), op(transA), n, m, k, alpha, b.Ptr, b.Stride, a.Ptr, a.Stride, beta, c.Ptr,
				c.Stride)
		}
		return d.blas.SgemmStridedBatched(op(transB), op(transA), n, m, k, alpha, b.Ptr, b.Stride, int64(strideB),
			a.Ptr, a.Stride, int64(strideA), beta, c.Ptr, c.Stride, int64(strideC), count)
	})
}
