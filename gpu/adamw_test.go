package gpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// adamWRef is torch.optim.AdamW after clip_grad_norm_(params, maxNorm), in float64.
func adamWRef(p, g, m, v []float64, cfg AdamWConfig, step int, norm float64) {
	clip := 1.0
	if cfg.MaxNorm > 0 {
		clip = math.Min(1, float64(cfg.MaxNorm)/(norm+1e-6))
	}
	lr, b1, b2 := float64(cfg.LR), float64(cfg.Beta1), float64(cfg.Beta2)
	bc1, bc2 := 1-math.Pow(b1, float64(step)), 1-math.Pow(b2, float64(step))
	for i := range p {
		gi := g[i] * clip
		p[i] *= 1 - lr*float64(cfg.WeightDecay)
		m[i] = b1*m[i] + (1-b1)*gi
		v[i] = b2*v[i] + (1-b2)*gi*gi
		p[i] -= lr / bc1 * m[i] / (math.Sqrt(v[i])/math.Sqrt(bc2) + float64(cfg.Eps))
	}
}

func TestAdamWWithClipping(t *testing.T) {
	d := newDevice(t)
	r := rand.New(rand.NewPCG(31, 32))
	cfg := AdamWConfig{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01}
	for _, maxNorm := range []float32{0, 0.5, 1e6} {
		cfg.MaxNorm = maxNorm
		const n1, n2 = 300, 77 // two parameter tensors share one global norm
		hp1, hp2 := normalSlice(r, n1), normalSlice(r, n2)
		p1, p2 := upload(t, d, hp1, n1), upload(t, d, hp2, n2)
		m1, v1, m2, v2 := empty(t, d, n1), empty(t, d, n1), empty(t, d, n2), empty(t, d, n2)
		for _, z := range []*Tensor{m1, v1, m2, v2} {
			require.NoError(t, d.Zero(z))
		}
		rp := append(to64(hp1), to64(hp2)...)
		rm, rv := make([]float64, n1+n2), make([]float64, n1+n2)
		normsq := empty(t, d, 1)
		for step := 1; step <= 3; step++ {
			hg1, hg2 := normalSlice(r, n1), normalSlice(r, n2)
			g1, g2 := upload(t, d, hg1, n1), upload(t, d, hg2, n2)
			require.NoError(t, d.Zero(normsq))
			require.NoError(t, d.SumSquares(normsq, g1))
			require.NoError(t, d.SumSquares(normsq, g2))
			require.NoError(t, d.AdamW(p1, g1, m1, v1, normsq, cfg, step))
			require.NoError(t, d.AdamW(p2, g2, m2, v2, normsq, cfg, step))
			g := append(to64(hg1), to64(hg2)...)
			adamWRef(rp, g, rm, rv, cfg, step, math.Sqrt(dot(g, g)))
		}
		got := append(download(t, p1), download(t, p2)...)
		assertClose(t, rp, got, tolReduce, "params")
	}
}
