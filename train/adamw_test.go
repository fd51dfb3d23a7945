package train

import (
	"math"
	"testing"

	"github.com/gmlake/gmlake/train/vm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"
)

// adamwReference is one AdamW step written out in float64 for a single element.
func adamwReference(cfg AdamW, w, g, m, v float64, step int, scale float64) (float64, float64, float64) {
	g *= scale
	m = cfg.Beta1*m + (1-cfg.Beta1)*g
	v = cfg.Beta2*v + (1-cfg.Beta2)*g*g
	mhat := m / (1 - math.Pow(cfg.Beta1, float64(step)))
	vhat := v / (1 - math.Pow(cfg.Beta2, float64(step)))
	return w - cfg.LR*mhat/(math.Sqrt(vhat)+cfg.Eps) - cfg.LR*cfg.WeightDecay*w, m, v
}

func TestAdamWMatchesReference(t *testing.T) {
	cases := []struct {
		name string
		clip float64
		grad []float32
	}{
		{"no clipping", 0, []float32{0.5, -2, 0.25}},
		{"clipped", 1, []float32{3, -4, 0}}, // norm 5, scaled by 1/5
		{"under the clip", 10, []float32{0.3, 0.4, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultAdamW
			cfg.ClipNorm = tc.clip
			alloc := &vm.GoAllocator{}
			opt := newOptimizer(cfg, alloc)
			p := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float32{1, -1, 0.5}))
			want := []float64{1, -1, 0.5}
			m, v := make([]float64, 3), make([]float64, 3)
			norm := globalNorm([][]float32{tc.grad})
			scale := 1.0
			if tc.clip > 0 && norm > tc.clip {
				scale = tc.clip / (norm + 1e-6)
			}
			for step := 1; step <= 3; step++ {
				got, err := opt.Step([]*tensor.Dense{p}, [][]float32{tc.grad})
				require.NoError(t, err)
				assert.InDelta(t, norm, got, 1e-6)
				for j := range want {
					want[j], m[j], v[j] = adamwReference(cfg, want[j], float64(tc.grad[j]), m[j], v[j], step, scale)
				}
			}
			for j, w := range p.Data().([]float32) {
				assert.InDelta(t, want[j], float64(w), 1e-6, "element %d", j)
			}
			assert.Equal(t, int64(2*3*4), alloc.LiveBytes(), "two moments in allocator memory")
			require.NoError(t, opt.Close())
			assert.Zero(t, alloc.LiveBytes())
		})
	}
}

func TestAdamWShapeMismatch(t *testing.T) {
	opt := newOptimizer(DefaultAdamW, &vm.GoAllocator{})
	p := tensor.New(tensor.WithShape(2), tensor.WithBacking([]float32{1, 2}))
	_, err := opt.Step([]*tensor.Dense{p}, [][]float32{{1}})
	assert.ErrorIs(t, err, ErrShape)
}
