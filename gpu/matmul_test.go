package gpu

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// matmulRef is alpha * op(a) @ op(b) + beta * c for row-major a (stored ra×ca), b (rb×cb).
func matmulRef(a []float32, ra, ca int, b []float32, rb, cb int, ta, tb bool, alpha, beta float64, c []float32) []float64 {
	at := func(i, k int) float64 {
		if ta {
			return float64(a[k*ca+i])
		}
		return float64(a[i*ca+k])
	}
	bt := func(k, j int) float64 {
		if tb {
			return float64(b[j*cb+k])
		}
		return float64(b[k*cb+j])
	}
	m, k, n := ra, ca, cb
	if ta {
		m, k = ca, ra
	}
	if tb {
		n = rb
	}
	out := make([]float64, m*n)
	for i := range m {
		for j := range n {
			s := 0.0
			for l := range k {
				s += at(i, l) * bt(l, j)
			}
			out[i*n+j] = alpha*s + beta*float64(c[i*n+j])
		}
	}
	return out
}

func TestMatMul(t *testing.T) {
	d := newDevice(t)
	r := rand.New(rand.NewPCG(33, 34))
	const m, k, n = 37, 64, 23
	for _, tc := range []struct{ ta, tb bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		ra, ca := m, k
		if tc.ta {
			ra, ca = k, m
		}
		rb, cb := k, n
		if tc.tb {
			rb, cb = n, k
		}
		ha, hb, hc := normalSlice(r, m*k), normalSlice(r, k*n), normalSlice(r, m*n)
		a, b, c := upload(t, d, ha, ra, ca), upload(t, d, hb, rb, cb), upload(t, d, hc, m, n)
		require.NoError(t, d.MatMul(c, a, b, tc.ta, tc.tb, 0.5, 2))
		assertClose(t, matmulRef(ha, ra, ca, hb, rb, cb, tc.ta, tc.tb, 0.5, 2, hc), download(t, c), tolReduce, "matmul")
	}
}

func TestBatchedMatMul(t *testing.T) {
	d := newDevice(t)
	r := rand.New(rand.NewPCG(35, 36))
	const batch, m, k, n = 6, 9, 16, 9 // attention: (b*h, t, d) @ (b*h, t, d)^T
	ha, hb := normalSlice(r, batch*m*k), normalSlice(r, batch*n*k)
	a, b := upload(t, d, ha, batch, m, k), upload(t, d, hb, batch, n, k)
	out := empty(t, d, batch, m, n)
	require.NoError(t, d.BatchedMatMul(out, a, b, false, true, 0.25, 0))
	got := download(t, out)
	zero := make([]float32, m*n)
	for i := range batch {
		want := matmulRef(ha[i*m*k:(i+1)*m*k], m, k, hb[i*n*k:(i+1)*n*k], n, k, false, true, 0.25, 0, zero)
		assertClose(t, want, got[i*m*n:(i+1)*m*n], tolReduce, "batched matmul")
	}
}

// Gemm over column blocks of token-major matrices, batched over heads: the attention pattern
// (scores[h] = q_h @ k_h^T with q_h the h-th [seq, dim] column block).
func TestGemmOnBlocks(t *testing.T) {
	d := newDevice(t)
	r := rand.New(rand.NewPCG(43, 44))
	const seq, heads, dim = 7, 3, 8
	width := heads * dim
	hq, hk := normalSlice(r, seq*width), normalSlice(r, seq*width)
	q, k := upload(t, d, hq, seq, width), upload(t, d, hk, seq, width)
	scores := empty(t, d, heads, seq, seq)
	qm, err := q.AsMatrix()
	require.NoError(t, err)
	km, err := k.AsMatrix()
	require.NoError(t, err)
	sm, err := scores.AsMatrix() // rows of seq
	require.NoError(t, err)
	require.NoError(t, d.Gemm(false, true, 0.5, qm.At(0, 0, seq, dim), km.At(0, 0, seq, dim), 0, sm.At(0, 0, seq, seq),
		heads, dim, dim, seq*seq))
	got := download(t, scores)
	for h := range heads {
		for i := range seq {
			for j := range seq {
				s := 0.0
				for c := range dim {
					s += float64(hq[i*width+h*dim+c]) * float64(hk[j*width+h*dim+c])
				}
				assertClose(t, []float64{0.5 * s}, got[(h*seq+i)*seq+j:(h*seq+i)*seq+j+1], tolReduce, "block gemm")
			}
		}
	}
}
