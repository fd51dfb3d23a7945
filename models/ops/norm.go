package ops

import (
	"fmt"
	"math"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The norms normalize each row of x [N, F] and scale by a gain γ [F]:
//
//	LayerNorm: y = (x-μ)/√(σ²+ε) · γ + β
//	RMSNorm:   y = x/√(mean(x²)+ε) · γ        (Llama)
//
// Their backward passes recompute the row statistics from x rather than
// keeping them, so forward and backward stay pure functions of their inputs.

// normPart says what a norm kernel computes.
type normPart int

const (
	normForward  normPart = iota // y from (x, γ[, β])
	normGradX                    // dx from (x, γ, dy)
	normGradGain                 // dγ from (x, dy)
)

type norm struct {
	rms  bool
	eps  float64
	part normPart
}

// LayerNorm normalizes the rows of x with gain gamma and bias beta.
func LayerNorm(x, gamma, beta *gorgonia.Node, eps float64) (*gorgonia.Node, error) {
	return apply(norm{eps: eps}, x, gamma, beta)
}

// RMSNorm normalizes the rows of x by their root mean square, with gain gamma.
func RMSNorm(x, gamma *gorgonia.Node, eps float64) (*gorgonia.Node, error) {
	return apply(norm{rms: true, eps: eps}, x, gamma)
}

func (k norm) String() string {
	return fmt.Sprintf("Norm{rms=%t,eps=%g,part=%d}", k.rms, k.eps, k.part)
}

func (k norm) signature() ([]argType, argType) {
	switch {
	case k.part == normGradGain:
		return []argType{f32(2), f32(2)}, f32(1)
	case k.part == normGradX || k.rms:
		return []argType{f32(2), f32(1), f32(2)}[:k.arity()], f32(2)
	}
	return []argType{f32(2), f32(1), f32(1)}, f32(2)
}

func (k norm) arity() int {
	if k.part == normForward && k.rms {
		return 2
	}
	if k.part == normGradGain {
		return 2
	}
	return 3
}

func (k norm) outShape(in []tensor.Shape) (tensor.Shape, error) {
	x := in[0]
	if len(x) != 2 {
		return nil, fmt.Errorf("%w: %v wants a matrix, got %v", ErrInput, k, x)
	}
	if k.part == normGradGain {
		if !in[1].Eq(x) {
			return nil, fmt.Errorf("%w: %v: x %v and dy %v differ", ErrInput, k, x, in[1])
		}
		return tensor.Shape{x[1]}, nil
	}
	for _, s := range in[1:] {
		if (len(s) == 1 && s[0] != x[1]) || (len(s) == 2 && !s.Eq(x)) {
			return nil, fmt.Errorf("%w: %v: shape %v does not fit x %v", ErrInput, k, s, x)
		}
	}
	return x.Clone(), nil
}

// rowStats returns the row's mean (0 for RMSNorm) and 1/√(var+ε).
func (k norm) rowStats(row []float32) (mean, rstd float64) {
	n := float64(len(row))
	if !k.rms {
		for _, v := range row {
			mean += float64(v)
		}
		mean /= n
	}
	var ss float64
	for _, v := range row {
		d := float64(v) - mean
		ss += d * d
	}
	return mean, 1 / math.Sqrt(ss/n+k.eps)
}

func (k norm) forward(out []float32, in []*tensor.Dense) error {
	x := data(in[0])
	f := in[0].Shape()[1]
	switch k.part {
	case normForward:
		gamma := data(in[1])
		var beta []float32
		if !k.rms {
			beta = data(in[2])
		}
		for r := 0; r < len(x)/f; r++ {
			row, o := x[r*f:(r+1)*f], out[r*f:(r+1)*f]
			mean, rstd := k.rowStats(row)
			for j, v := range row {
				y := (float64(v) - mean) * rstd * float64(gamma[j])
				if beta != nil {
					y += float64(beta[j])
				}
				o[j] = float32(y)
			}
		}
	case normGradX:
		k.gradX(out, x, data(in[1]), data(in[2]), f)
	case normGradGain:
		dy := data(in[1])
		acc := make([]float64, f)
		for r := 0; r < len(x)/f; r++ {
			row := x[r*f : (r+1)*f]
			mean, rstd := k.rowStats(row)
			for j, v := range row {
				acc[j] += float64(dy[r*f+j]) * (float64(v) - mean) * rstd
			}
		}
		for j, v := range acc {
			out[j] = float32(v)
		}
	}
	return nil
}

// gradX: with x̂ = (x-μ)·rstd and h = dy·γ,
// LayerNorm dx = rstd·(h - mean(h) - x̂·mean(h·x̂)); RMSNorm drops the mean(h) term.
func (k norm) gradX(out, x, gamma, dy []float32, f int) {
	h := make([]float64, f)
	xhat := make([]float64, f)
	for r := 0; r < len(x)/f; r++ {
		row := x[r*f : (r+1)*f]
		mean, rstd := k.rowStats(row)
		var sumH, sumHX float64
		for j, v := range row {
			xhat[j] = (float64(v) - mean) * rstd
			h[j] = float64(dy[r*f+j]) * float64(gamma[j])
			sumH += h[j]
			sumHX += h[j] * xhat[j]
		}
		meanH, meanHX := sumH/float64(f), sumHX/float64(f)
		if k.rms {
			meanH = 0
		}
		for j := range row {
			out[r*f+j] = float32(rstd * (h[j] - meanH - xhat[j]*meanHX))
		}
	}
}

func (k norm) diffWRT() []bool {
	if k.part != normForward {
		return make([]bool, k.arity())
	}
	return []bool{true, true, true}[:k.arity()]
}

func (k norm) grads(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
	x, gamma := in[0], in[1]
	dx, err := apply(norm{rms: k.rms, eps: k.eps, part: normGradX}, x, gamma, g)
	if err != nil {
		return nil, err
	}
	dgamma, err := apply(norm{rms: k.rms, eps: k.eps, part: normGradGain}, x, g)
	if err != nil {
		return nil, err
	}
	if k.rms {
		return gorgonia.Nodes{dx, dgamma}, nil
	}
	dbeta, err := SumRows(g)
	return gorgonia.Nodes{dx, dgamma, dbeta}, err
}
