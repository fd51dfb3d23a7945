package ops

import (
	"fmt"
	"math"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// rope rotates each head of x [Batch*Seq, heads*headDim] by its position
// (Hugging Face Llama convention, rotate_half): for i < headDim/2, with
// angle θ = s·theta^(-2i/headDim),
//
//	out[i]         = x[i]·cos θ - x[i+headDim/2]·sin θ
//	out[i+headDim/2] = x[i+headDim/2]·cos θ + x[i]·sin θ
//
// The inverse rotation (sin negated) is the gradient.
type rope struct {
	seq, heads, headDim int
	theta               float64
	inverse             bool
}

// RoPE applies rotary position embeddings to x [batch*seq, heads*headDim],
// positions 0..seq-1 within each sequence.
func RoPE(x *gorgonia.Node, seq, heads, headDim int, theta float64) (*gorgonia.Node, error) {
	if headDim%2 != 0 {
		return nil, fmt.Errorf("%w: RoPE needs an even head size, got %d", ErrInput, headDim)
	}
	return apply(rope{seq: seq, heads: heads, headDim: headDim, theta: theta}, x)
}

func (k rope) String() string {
	return fmt.Sprintf("RoPE{s=%d,h=%d,d=%d,theta=%g,inv=%t}", k.seq, k.heads, k.headDim, k.theta, k.inverse)
}

func (k rope) signature() ([]argType, argType) { return []argType{f32(2)}, f32(2) }

func (k rope) outShape(in []tensor.Shape) (tensor.Shape, error) {
	x := in[0]
	if len(x) != 2 || x[1] != k.heads*k.headDim || x[0]%k.seq != 0 {
		return nil, fmt.Errorf("%w: %v: x %v", ErrInput, k, x)
	}
	return x.Clone(), nil
}

// tables returns cos and sin [seq, headDim/2], computed in float32 steps the
// way Hugging Face does (inverse frequencies, then position·frequency).
func (k rope) tables() (cos, sin []float32) {
	half := k.headDim / 2
	cos, sin = make([]float32, k.seq*half), make([]float32, k.seq*half)
	for i := 0; i < half; i++ {
		exp := float32(2*i) / float32(k.headDim)
		inv := 1 / float32(math.Pow(k.theta, float64(exp)))
		for s := 0; s < k.seq; s++ {
			angle := float64(float32(s) * inv)
			cos[s*half+i] = float32(math.Cos(angle))
			sin[s*half+i] = float32(math.Sin(angle))
		}
	}
	return cos, sin
}

func (k rope) forward(out []float32, in []*tensor.Dense) error {
	x := data(in[0])
	cos, sin := k.tables()
	half, width := k.headDim/2, k.heads*k.headDim
	sign := float32(1)
	if k.inverse {
		sign = -1
	}
	for tok := 0; tok < len(x)/width; tok++ {
		s := tok % k.seq
		c, sn := cos[s*half:(s+1)*half], sin[s*half:(s+1)*half]
		for h := 0; h < k.heads; h++ {
			base := tok*width + h*k.headDim
			for i := 0; i < half; i++ {
				a, b := x[base+i], x[base+half+i]
				out[base+i] = a*c[i] - sign*b*sn[i]
				out[base+half+i] = b*c[i] + sign*a*sn[i]
			}
		}
	}
	return nil
}

func (k rope) diffWRT() []bool { return []bool{true} }

func (k rope) grads(_ gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
	inv := k
	inv.inverse = !k.inverse
	d, err := apply(inv, g)
	return gorgonia.Nodes{d}, err
}
