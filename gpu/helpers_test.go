package gpu

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tolerances of the GPU tests: elementwise results within tolElem of the float64 CPU reference,
// reductions, matrix products and gradients within tolReduce, both relative to max(|want|, 1).
const (
	tolElem   = 1e-5
	tolReduce = 1e-4
)

// newDevice opens GPU 0, or skips the test where there is none.
func newDevice(t *testing.T, opts ...Option) *Device {
	t.Helper()
	n, err := DeviceCount()
	if errors.Is(err, ErrUnavailable) || (err == nil && n == 0) {
		t.Skipf("no GPU: %v", err)
	}
	require.NoError(t, err)
	d, err := New(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	return d
}

func randSlice(r *rand.Rand, n int, lo, hi float64) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(lo + (hi-lo)*r.Float64())
	}
	return s
}

func normalSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

func to64(s []float32) []float64 {
	o := make([]float64, len(s))
	for i, v := range s {
		o[i] = float64(v)
	}
	return o
}

// upload copies data to a new device tensor freed at the end of the test.
func upload(t *testing.T, d *Device, data []float32, shape ...int) *Tensor {
	t.Helper()
	x, err := d.FromHost(data, shape...)
	require.NoError(t, err)
	t.Cleanup(func() { x.Free() })
	return x
}

// empty allocates a device tensor freed at the end of the test.
func empty(t *testing.T, d *Device, shape ...int) *Tensor {
	t.Helper()
	x, err := d.NewTensor(shape...)
	require.NoError(t, err)
	t.Cleanup(func() { x.Free() })
	return x
}

func download(t *testing.T, x *Tensor) []float32 {
	t.Helper()
	h, err := x.ToHost()
	require.NoError(t, err)
	return h
}

// assertClose compares got with want elementwise within tol relative to max(|want|, 1).
func assertClose(t *testing.T, want []float64, got []float32, tol float64, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	bad := 0
	for i := range want {
		g := float64(got[i])
		if math.IsNaN(g) || math.Abs(g-want[i]) > tol*math.Max(math.Abs(want[i]), 1) {
			if bad < 5 {
				t.Errorf("%s[%d] = %v, want %v (tolerance %g)", what, i, g, want[i], tol)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d elements out of tolerance", what, bad, len(want))
	}
}

// numGrad is the gradient of sum(f(x) * w) at x by central differences, in float64.
func numGrad(f func(x []float64) []float64, x, w []float64) []float64 {
	const h = 1e-6
	g := make([]float64, len(x))
	xx := append([]float64(nil), x...)
	for i := range x {
		xx[i] = x[i] + h
		up := dot(f(xx), w)
		xx[i] = x[i] - h
		down := dot(f(xx), w)
		xx[i] = x[i]
		g[i] = (up - down) / (2 * h)
	}
	return g
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// strides of a row-major shape, and element index helpers for the references.
func rowMajor(shape []int) []int {
	st := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= shape[i]
	}
	return st
}

func numel(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

// unravel turns flat index i of shape into coordinates.
func unravel(i int, shape []int) []int {
	c := make([]int, len(shape))
	for k := len(shape) - 1; k >= 0; k-- {
		c[k] = i % shape[k]
		i /= shape[k]
	}
	return c
}

// broadcastIndex is the flat index into a row-major array of shape src for coordinates of out
// (numpy broadcasting).
func broadcastIndex(coord []int, src []int) int {
	off := len(coord) - len(src)
	st := rowMajor(src)
	idx := 0
	for k := range src {
		if src[k] != 1 {
			idx += coord[off+k] * st[k]
		}
	}
	return idx
}
