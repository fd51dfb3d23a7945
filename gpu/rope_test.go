package gpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// ropeTables are Hugging Face's cos/sin for positions 0..t-1: inv_freq = theta^(-2i/d),
// emb = concat(freqs, freqs).
func ropeTables(t, dim int, theta float64) (cos, sin []float32) {
	cos, sin = make([]float32, t*dim), make([]float32, t*dim)
	for p := range t {
		for i := range dim / 2 {
			f := float64(p) * math.Pow(theta, -2*float64(i)/float64(dim))
			for _, j := range []int{i, i + dim/2} {
				cos[p*dim+j], sin[p*dim+j] = float32(math.Cos(f)), float32(math.Sin(f))
			}
		}
	}
	return cos, sin
}

func ropeRef(x, cos, sin []float64, t, dim, inner int) []float64 {
	out := make([]float64, len(x))
	h := dim / 2
	for r := 0; r < len(x)/dim; r++ {
		p := (r / inner) % t
		for j := range dim {
			var rot float64
			if j < h {
				rot = -x[r*dim+j+h]
			} else {
				rot = x[r*dim+j-h]
			}
			out[r*dim+j] = x[r*dim+j]*cos[p*dim+j] + rot*sin[p*dim+j]
		}
	}
	return out
}

func TestRoPE(t *testing.T) {
	d := newDevice(t)
	r := rand.New(rand.NewPCG(25, 26))
	const batch, heads, seq, dim = 2, 3, 5, 8
	hc, hs := ropeTables(seq, dim, 10000)
	cos, sin := upload(t, d, hc, seq, dim), upload(t, d, hs, seq, dim)
	for _, tt := range []struct {
		name  string
		shape []int
		inner int
	}{
		{"batch-heads-t-d", []int{batch, heads, seq, dim}, 1},
		{"batch-t-heads-d", []int{batch, seq, heads, dim}, heads},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := numel(tt.shape)
			hx, hw := normalSlice(r, n), normalSlice(r, n)
			x, w := upload(t, d, hx, tt.shape...), upload(t, d, hw, tt.shape...)
			y, dx := empty(t, d, tt.shape...), empty(t, d, tt.shape...)
			f := func(x []float64) []float64 { return ropeRef(x, to64(hc), to64(hs), seq, dim, tt.inner) }
			require.NoError(t, d.RoPE(y, x, cos, sin, tt.inner))
			assertClose(t, f(to64(hx)), download(t, y), tolElem, "rope")
			require.NoError(t, d.RoPEBackward(dx, w, cos, sin, tt.inner))
			assertClose(t, numGrad(f, to64(hx), to64(hw)), download(t, dx), tolReduce, "rope grad")
		})
	}
}
