package adamw

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// One step from zero moments moves each weight by about lr against its gradient's sign (Adam's
// bias correction makes the first step's size lr), plus the decay.
func TestFirstStep(t *testing.T) {
	p := Params{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01}
	w := []float32{1, -1, 0.5}
	g := []float32{2, -3, 0}
	m, v := make([]float32, 3), make([]float32, 3)
	p.NewStep(1).Apply(w, g, m, v, 1)
	assert.InDelta(t, 1-0.1-0.1*0.01*1, w[0], 1e-6)
	assert.InDelta(t, -1+0.1+0.1*0.01*1, w[1], 1e-6)
	assert.InDelta(t, 0.5-0.1*0.01*0.5, w[2], 1e-6, "no gradient: decay only")
	assert.InDelta(t, 0.2, m[0], 1e-6)
	assert.InDelta(t, 0.004, v[0], 1e-6)
}

func TestClipScale(t *testing.T) {
	assert.Equal(t, float32(1), Params{}.ClipScale(10), "no clipping")
	assert.Equal(t, float32(1), Params{ClipNorm: 1}.ClipScale(0.5))
	assert.InDelta(t, 0.5, Params{ClipNorm: 1}.ClipScale(2), 1e-6)
	assert.False(t, math.IsNaN(float64(Params{ClipNorm: 1}.ClipScale(0))))
}
