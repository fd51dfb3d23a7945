package gpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func geluRef(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

func siluRef(x float64) float64 { return x / (1 + math.Exp(-x)) }

func mapRef(f func(float64) float64) func([]float64) []float64 {
	return func(x []float64) []float64 {
		o := make([]float64, len(x))
		for i, v := range x {
			o[i] = f(v)
		}
		return o
	}
}

func TestGELUAndSiLU(t *testing.T) {
	d := newDevice(t)
	r := rand.New(rand.NewPCG(21, 22))
	tests := []struct {
		name     string
		fwd, bwd func(out, a, b *Tensor) error
		ref      func(float64) float64
	}{
		{"gelu", func(o, x, _ *Tensor) error { return d.GELU(o, x) }, d.GELUBackward, geluRef},
		{"silu", func(o, x, _ *Tensor) error { return d.SiLU(o, x) }, d.SiLUBackward, siluRef},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const n = 200
			hx, hw := randSlice(r, n, -5, 5), normalSlice(r, n)
			x, w := upload(t, d, hx, n), upload(t, d, hw, n)
			y, dx := empty(t, d, n), empty(t, d, n)
			require.NoError(t, tt.fwd(y, x, nil))
			assertClose(t, mapRef(tt.ref)(to64(hx)), download(t, y), tolElem, "forward")
			require.NoError(t, tt.bwd(dx, x, w))
			assertClose(t, numGrad(mapRef(tt.ref), to64(hx), to64(hw)), download(t, dx), tolReduce, "backward")
		})
	}
}

func TestSwiGLU(t *testing.T) {
	d := newDevice(t)
	r := rand.New(rand.NewPCG(23, 24))
	const n = 150
	hg, hu, hw := randSlice(r, n, -5, 5), normalSlice(r, n), normalSlice(r, n)
	g, u, w := upload(t, d, hg, n), upload(t, d, hu, n), upload(t, d, hw, n)
	y, dg, du := empty(t, d, n), empty(t, d, n), empty(t, d, n)
	g64, u64 := to64(hg), to64(hu)
	ref := func(g, u []float64) []float64 {
		o := make([]float64, n)
		for i := range o {
			o[i] = siluRef(g[i]) * u[i]
		}
		return o
	}
	require.NoError(t, d.SwiGLU(y, g, u))
	assertClose(t, ref(g64, u64), download(t, y), tolElem, "swiglu")
	require.NoError(t, d.SwiGLUBackward(dg, du, g, u, w))
	assertClose(t, numGrad(func(g []float64) []float64 { return ref(g, u64) }, g64, to64(hw)), download(t, dg), tolReduce, "dgate")
	assertClose(t, numGrad(func(u []float64) []float64 { return ref(g64, u) }, u64, to64(hw)), download(t, du), tolReduce, "dup")
}
