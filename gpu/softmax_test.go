package gpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// softmaxRef is softmax(scale*x) over rows of cols, causal when tq > 0.
func softmaxRef(x []float64, cols, tq int, scale float64) []float64 {
	out := make([]float64, len(x))
	for r := 0; r < len(x)/cols; r++ {
		visible := cols
		if tq > 0 {
			visible = min(r%tq+cols-tq+1, cols)
		}
		m := math.Inf(-1)
		for c := range visible {
			m = math.Max(m, scale*x[r*cols+c])
		}
		s := 0.0
		for c := range visible {
			s += math.Exp(scale*x[r*cols+c] - m)
		}
		for c := range visible {
			out[r*cols+c] = math.Exp(scale*x[r*cols+c]-m) / s
		}
	}
	return out
}

func TestSoftmaxForwardBackward(t *testing.T) {
	d := newDevice(t)
	r := rand.New(rand.NewPCG(15, 16))
	tests := []struct {
		name   string
		shape  []int
		causal bool
		scale  float64
	}{
		{"plain", []int{6, 37}, false, 1},
		{"wide", []int{3, 5000}, false, 1},
		{"causal square", []int{2, 3, 5, 5}, true, 0.125},
		{"causal tq<tk", []int{2, 4, 6}, true, 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, cols := numel(tt.shape), tt.shape[len(tt.shape)-1]
			tq := 0
			if tt.causal {
				tq = tt.shape[len(tt.shape)-2]
			}
			hx, hw := normalSlice(r, n), normalSlice(r, n)
			x, w := upload(t, d, hx, tt.shape...), upload(t, d, hw, tt.shape...)
			y, dx := empty(t, d, tt.shape...), empty(t, d, tt.shape...)
			if tt.causal {
				require.NoError(t, d.CausalSoftmax(y, x, float32(tt.scale)))
			} else {
				require.NoError(t, d.Softmax(y, x))
			}
			f := func(x []float64) []float64 { return softmaxRef(x, cols, tq, tt.scale) }
			assertClose(t, f(to64(hx)), download(t, y), tolElem, "softmax")

			require.NoError(t, d.SoftmaxBackward(dx, y, w, float32(tt.scale)))
			if n <= 200 {
				assertClose(t, numGrad(f, to64(hx), to64(hw)), download(t, dx), tolReduce, "softmax grad")
			}
		})
	}
}
