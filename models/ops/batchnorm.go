package ops

import (
	"fmt"
	"math"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Batch normalization in training mode, over x [N, C, H, W] per channel c:
//
//	y = (x − μ_c)/√(σ²_c + ε) · γ_c + β_c
//
// with μ_c and σ²_c the mean and (biased) variance of channel c over N·H·W values: the
// statistics of the batch, as every framework normalizes while training. Running averages for
// inference are not kept. Like the row norms, the backward ops recompute the statistics from x,
// so every op stays a pure function of its inputs and an executor sees each buffer.

// bnPart says what a batch-norm kernel computes.
type bnPart int

const (
	bnForward   bnPart = iota // y from (x, γ, β)
	bnGradX                   // dx from (x, γ, dy)
	bnGradGamma               // dγ from (x, dy)
	bnGradBeta                // dβ from (dy): the sum of each channel
)

type batchNorm struct {
	eps  float64
	part bnPart
}

// BatchNorm normalizes x [N, C, H, W] with the batch's per-channel statistics, then scales by
// gamma [C] and shifts by beta [C].
func BatchNorm(x, gamma, beta *gorgonia.Node, eps float64) (*gorgonia.Node, error) {
	return apply(batchNorm{eps: eps}, x, gamma, beta)
}

func (k batchNorm) String() string { return fmt.Sprintf("BatchNorm{eps=%g,part=%d}", k.eps, k.part) }

func (k batchNorm) signature() ([]argType, argType) {
	switch k.part {
	case bnGradX:
		return []argType{f32(4), f32(1), f32(4)}, f32(4)
	case bnGradGamma:
		return []argType{f32(4), f32(4)}, f32(1)
	case bnGradBeta:
		return []argType{f32(4)}, f32(1)
	}
	return []argType{f32(4), f32(1), f32(1)}, f32(4)
}

func (k batchNorm) outShape(in []tensor.Shape) (tensor.Shape, error) {
	x := in[0]
	ok := len(x) == 4
	perChannel := func(s tensor.Shape) bool { return ok && s.Eq(tensor.Shape{x[1]}) }
	switch k.part {
	case bnForward:
		ok = perChannel(in[1]) && perChannel(in[2])
	case bnGradX:
		ok = perChannel(in[1]) && in[2].Eq(x)
	case bnGradGamma:
		ok = ok && in[1].Eq(x)
	}
	if !ok {
		return nil, fmt.Errorf("%w: %v: shapes %v", ErrInput, k, in)
	}
	if k.part == bnGradGamma || k.part == bnGradBeta {
		return tensor.Shape{x[1]}, nil
	}
	return x.Clone(), nil
}

// channels iterates over the N·H·W values of each channel of x [N, C, H, W]: f(c, i) for each
// flat index i of channel c.
func channels(shape tensor.Shape, c int, f func(i int)) {
	n, ch, hw := shape[0], shape[1], shape[2]*shape[3]
	for b := range n {
		base := (b*ch + c) * hw
		for i := base; i < base+hw; i++ {
			f(i)
		}
	}
}

// stats returns channel c's mean and 1/√(σ²+ε).
func (k batchNorm) stats(shape tensor.Shape, x []float32, c int) (mean, rstd float64) {
	m := float64(shape[0] * shape[2] * shape[3])
	var sum float64
	channels(shape, c, func(i int) { sum += float64(x[i]) })
	mean = sum / m
	var sq float64
	channels(shape, c, func(i int) { d := float64(x[i]) - mean; sq += d * d })
	return mean, 1 / math.Sqrt(sq/m+k.eps)
}

func (k batchNorm) forward(out []float32, in []*tensor.Dense) error {
	shape := in[0].Shape()
	if k.part == bnGradBeta {
		dy := data(in[0])
		for c := range shape[1] {
			var s float64
			channels(shape, c, func(i int) { s += float64(dy[i]) })
			out[c] = float32(s)
		}
		return nil
	}
	x := data(in[0])
	m := float64(shape[0] * shape[2] * shape[3])
	for c := range shape[1] {
		mean, rstd := k.stats(shape, x, c)
		switch k.part {
		case bnForward:
			g, b := float64(data(in[1])[c]), float64(data(in[2])[c])
			channels(shape, c, func(i int) { out[i] = float32((float64(x[i])-mean)*rstd*g + b) })
		case bnGradGamma:
			dy := data(in[1])
			var s float64
			channels(shape, c, func(i int) { s += float64(dy[i]) * (float64(x[i]) - mean) * rstd })
			out[c] = float32(s)
		case bnGradX: // dx = γ·rstd/M · (M·dy − Σdy − x̂·Σ dy·x̂)
			g, dy := float64(data(in[1])[c]), data(in[2])
			var sdy, sdyx float64
			channels(shape, c, func(i int) {
				sdy += float64(dy[i])
				sdyx += float64(dy[i]) * (float64(x[i]) - mean) * rstd
			})
			channels(shape, c, func(i int) {
				xh := (float64(x[i]) - mean) * rstd
				out[i] = float32(g * rstd / m * (m*float64(dy[i]) - sdy - xh*sdyx))
			})
		}
	}
	return nil
}

func (k batchNorm) diffWRT() []bool {
	if k.part != bnForward {
		in, _ := k.signature()
		return make([]bool, len(in))
	}
	return []bool{true, true, true}
}

func (k batchNorm) grads(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
	dx, err := apply(batchNorm{eps: k.eps, part: bnGradX}, in[0], in[1], g)
	if err != nil {
		return nil, err
	}
	dg, err := apply(batchNorm{eps: k.eps, part: bnGradGamma}, in[0], g)
	if err != nil {
		return nil, err
	}
	db, err := apply(batchNorm{eps: k.eps, part: bnGradBeta}, g)
	return gorgonia.Nodes{dx, dg, db}, err
}
