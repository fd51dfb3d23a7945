package ops

import (
	"fmt"
	"math"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// activation is an elementwise nonlinearity f; with backward set it computes
// f'(x)·g from inputs (x, g) instead.
type activation struct {
	name     string // "gelu_new" or "silu"
	dims     int
	backward bool
}

// GELU is the tanh approximation Hugging Face calls "gelu_new" (GPT-2):
// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
func GELU(x *gorgonia.Node) (*gorgonia.Node, error) {
	return apply(activation{name: "gelu_new", dims: x.Dims()}, x)
}

// SiLU is x·σ(x) (Llama's MLP gate).
func SiLU(x *gorgonia.Node) (*gorgonia.Node, error) {
	return apply(activation{name: "silu", dims: x.Dims()}, x)
}

func (k activation) String() string {
	return fmt.Sprintf("Activation{%s,%d,backward=%t}", k.name, k.dims, k.backward)
}

func (k activation) signature() ([]argType, argType) {
	if k.backward {
		return []argType{f32(k.dims), f32(k.dims)}, f32(k.dims)
	}
	return []argType{f32(k.dims)}, f32(k.dims)
}

func (k activation) outShape(in []tensor.Shape) (tensor.Shape, error) { return sameShape(k, in) }

const sqrt2OverPi = 0.7978845608028654

func (k activation) forward(out []float32, in []*tensor.Dense) error {
	x := data(in[0])
	var g []float32
	if k.backward {
		g = data(in[1])
	}
	for i, xf := range x {
		v := float64(xf)
		var f, df float64
		switch k.name {
		case "gelu_new":
			u := sqrt2OverPi * (v + 0.044715*v*v*v)
			t := math.Tanh(u)
			f = 0.5 * v * (1 + t)
			df = 0.5*(1+t) + 0.5*v*(1-t*t)*sqrt2OverPi*(1+3*0.044715*v*v)
		case "silu":
			s := 1 / (1 + math.Exp(-v))
			f = v * s
			df = s * (1 + v*(1-s))
		}
		if k.backward {
			out[i] = float32(df * float64(g[i]))
		} else {
			out[i] = float32(f)
		}
	}
	return nil
}

func (k activation) diffWRT() []bool {
	if k.backward {
		return []bool{false, false}
	}
	return []bool{true}
}

func (k activation) grads(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
	b := k
	b.backward = true
	d, err := apply(b, in[0], g)
	return gorgonia.Nodes{d}, err
}
