package cublas

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/internal/dl"
)

// fakeLibrary compiles testdata/fakecublas.c (the bound cuBLAS calls over host memory) and opens it
// as cuBLAS, so that the binding's argument passing (14 and 18 arguments, most on the stack,
// scalars by pointer) is checked without a GPU. It skips where no C compiler is found.
func fakeLibrary(t *testing.T) *Library {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler (%s) to build the fake cuBLAS: %v", cc, err)
	}
	so := filepath.Join(t.TempDir(), "libfakecublas.so")
	out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-Wall", "-o", so, "testdata/fakecublas.c").CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Setenv(EnvVar, so)
	l, err := Open()
	require.NoError(t, err)
	assert.Equal(t, so, l.Path())
	return l
}

// colMajor is an m×n column-major matrix with leading dimension ld (ld >= m), element (i, j) = f(i, j).
func colMajor(m, n, ld int, f func(i, j int) float32) []float32 {
	a := make([]float32, ld*n)
	for j := range n {
		for i := range m {
			a[i+j*ld] = f(i, j)
		}
	}
	return a
}

func addr(s []float32) uintptr { return uintptr(unsafe.Pointer(&s[0])) }

// reference computes alpha * op(A) * op(B) + beta * C in Go.
func reference(ta, tb Op, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int,
	beta float32, c []float32, ldc int) []float32 {
	at := func(x []float32, ld int, tr Op, i, j int) float32 {
		if tr == Trans {
			return x[j+i*ld]
		}
		return x[i+j*ld]
	}
	out := append([]float32(nil), c...)
	for j := range n {
		for i := range m {
			var s float32
			for p := range k {
				s += at(a, lda, ta, i, p) * at(b, ldb, tb, p, j)
			}
			out[i+j*ldc] = alpha*s + beta*c[i+j*ldc]
		}
	}
	return out
}

func TestFakeHandle(t *testing.T) {
	l := fakeLibrary(t)
	h, err := l.NewHandle()
	require.NoError(t, err)
	v, err := h.Version()
	require.NoError(t, err)
	assert.Equal(t, 130099, v)
	require.NoError(t, h.SetStream(0xdeadbeef0))
	lib, err := dl.Open("fake cuBLAS", "", []string{l.Path()})
	require.NoError(t, err)
	streamOf, err := lib.Symbol("fake_stream_of")
	require.NoError(t, err)
	assert.Equal(t, uintptr(0xdeadbeef0), dl.Call(streamOf, h.h), "the stream reached the handle")
	require.NoError(t, h.Close())
	require.NoError(t, h.Close(), "a second Close does nothing")
}

func TestFakeSgemm(t *testing.T) {
	l := fakeLibrary(t)
	h, err := l.NewHandle()
	require.NoError(t, err)
	defer func() { assert.NoError(t, h.Close()) }()
	const m, n, k = 5, 3, 4
	for _, tt := range []struct {
		name   string
		ta, tb Op
	}{{"NN", NoTrans, NoTrans}, {"TN", Trans, NoTrans}, {"NT", NoTrans, Trans}, {"TT", Trans, Trans}} {
		t.Run(tt.name, func(t *testing.T) {
			// Leading dimensions larger than the rows, so that a swapped argument shows.
			ar, ac := m, k
			if tt.ta == Trans {
				ar, ac = k, m
			}
			br, bc := k, n
			if tt.tb == Trans {
				br, bc = n, k
			}
			lda, ldb, ldc := ar+2, br+1, m+3
			a := colMajor(ar, ac, lda, func(i, j int) float32 { return float32(i+1) + 0.5*float32(j) })
			b := colMajor(br, bc, ldb, func(i, j int) float32 { return float32(2*i) - float32(j) })
			c := colMajor(m, n, ldc, func(i, j int) float32 { return float32(i * j) })
			want := reference(tt.ta, tt.tb, m, n, k, 1.5, a, lda, b, ldb, -0.25, c, ldc)
			require.NoError(t, h.Sgemm(tt.ta, tt.tb, m, n, k, 1.5, addr(a), lda, addr(b), ldb, -0.25, addr(c), ldc))
			runtime.KeepAlive(a)
			runtime.KeepAlive(b)
			assert.Equal(t, want, c)
		})
	}
	c := make([]float32, 4)
	err = h.Sgemm(NoTrans, NoTrans, 2, 2, 2, 1, addr(c), 1, addr(c), 2, 0, addr(c), 2)
	assert.ErrorIs(t, err, ErrCublas, "lda below m is refused")
	assert.ErrorContains(t, err, "CUBLAS_STATUS_INVALID_VALUE")
}

func TestFakeSgemmStridedBatched(t *testing.T) {
	l := fakeLibrary(t)
	h, err := l.NewHandle()
	require.NoError(t, err)
	defer func() { assert.NoError(t, h.Close()) }()
	const m, n, k, count = 3, 2, 4, 3
	lda, ldb, ldc := k+1, k, m+1 // A transposed: stored k×m
	sa, sb, sc := lda*m+3, ldb*n+5, ldc*n+2
	a := make([]float32, sa*count)
	b := make([]float32, sb*count)
	c := make([]float32, sc*count)
	for i := range a {
		a[i] = float32(i%7) - 3
	}
	for i := range b {
		b[i] = float32(i%5) * 0.5
	}
	for i := range c {
		c[i] = float32(i % 3)
	}
	want := append([]float32(nil), c...)
	for i := range count {
		got := reference(Trans, NoTrans, m, n, k, 2, a[i*sa:], lda, b[i*sb:], ldb, 0.5, c[i*sc:(i+1)*sc], ldc)
		copy(want[i*sc:], got)
	}
	require.NoError(t, h.SgemmStridedBatched(Trans, NoTrans, m, n, k, 2, addr(a), lda, int64(sa), addr(b), ldb,
		int64(sb), 0.5, addr(c), ldc, int64(sc), count))
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	assert.Equal(t, want, c)
}
