package ops

import (
	"fmt"
	"math"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// PoolShape is a 2-D pooling window over x [N, C, H, W]: output [N, C, P, Q] with
// P = (H + 2·PadH − R)/StrideH + 1 (likewise Q), as cuDNN and PyTorch compute it.
type PoolShape struct {
	N, C, H, W       int
	R, S             int // window
	StrideH, StrideW int
	PadH, PadW       int
}

// P and Q are the output height and width.
func (s PoolShape) P() int { return (s.H+2*s.PadH-s.R)/s.StrideH + 1 }
func (s PoolShape) Q() int { return (s.W+2*s.PadW-s.S)/s.StrideW + 1 }

func (s PoolShape) String() string {
	return fmt.Sprintf("x=%dx%dx%dx%d,window=%dx%d,stride=%dx%d,pad=%dx%d",
		s.N, s.C, s.H, s.W, s.R, s.S, s.StrideH, s.StrideW, s.PadH, s.PadW)
}

func (s PoolShape) inShape() tensor.Shape  { return tensor.Shape{s.N, s.C, s.H, s.W} }
func (s PoolShape) outShape() tensor.Shape { return tensor.Shape{s.N, s.C, s.P(), s.Q()} }

// window calls f(i) for the flat index of every input element of output (p, q) of plane
// (n, c), padding excluded.
func (s PoolShape) window(plane, p, q int, f func(i int)) {
	base := plane * s.H * s.W
	for r := range s.R {
		h := p*s.StrideH - s.PadH + r
		if h < 0 || h >= s.H {
			continue
		}
		for c := range s.S {
			w := q*s.StrideW - s.PadW + c
			if w >= 0 && w < s.W {
				f(base + h*s.W + w)
			}
		}
	}
}

// pool is max or average pooling, or with backward set its gradient dx from (x, y, dy): the
// arguments of cuDNN's pooling backward.
type pool struct {
	shape    PoolShape
	max      bool
	backward bool
}

// MaxPool2D takes the maximum of each r×s window (stride and zero padding the same in both
// dimensions, padding at most half the window, as PyTorch requires); padding never wins.
func MaxPool2D(x *gorgonia.Node, r, s, stride, pad int) (*gorgonia.Node, error) {
	return newPool(x, true, r, s, stride, pad)
}

// AvgPool2D averages each window over R·S elements, padding counted as zeros (PyTorch's
// count_include_pad, cuDNN's AVERAGE_COUNT_INCLUDE_PADDING).
func AvgPool2D(x *gorgonia.Node, r, s, stride, pad int) (*gorgonia.Node, error) {
	return newPool(x, false, r, s, stride, pad)
}

func newPool(x *gorgonia.Node, isMax bool, r, s, stride, pad int) (*gorgonia.Node, error) {
	xs := x.Shape()
	if len(xs) != 4 {
		return nil, fmt.Errorf("%w: pooling of %v", ErrInput, xs)
	}
	ps := PoolShape{N: xs[0], C: xs[1], H: xs[2], W: xs[3], R: r, S: s, StrideH: stride, StrideW: stride, PadH: pad, PadW: pad}
	if r <= 0 || s <= 0 || stride <= 0 || pad < 0 || pad > r/2 || pad > s/2 || ps.P() <= 0 || ps.Q() <= 0 {
		return nil, fmt.Errorf("%w: pooling %v", ErrInput, ps)
	}
	return apply(pool{shape: ps, max: isMax}, x)
}

func (k pool) String() string {
	return fmt.Sprintf("Pool{max=%t,%v,backward=%t}", k.max, k.shape, k.backward)
}

func (k pool) signature() ([]argType, argType) {
	if k.backward {
		return []argType{f32(4), f32(4), f32(4)}, f32(4)
	}
	return []argType{f32(4)}, f32(4)
}

func (k pool) outShape(in []tensor.Shape) (tensor.Shape, error) {
	ok := in[0].Eq(k.shape.inShape())
	if k.backward {
		ok = ok && in[1].Eq(k.shape.outShape()) && in[2].Eq(k.shape.outShape())
	}
	if !ok {
		return nil, fmt.Errorf("%w: %v: shapes %v", ErrInput, k, in)
	}
	if k.backward {
		return k.shape.inShape(), nil
	}
	return k.shape.outShape(), nil
}

func (k pool) forward(out []float32, in []*tensor.Dense) error {
	s := k.shape
	x := data(in[0])
	var y, dy []float32
	if k.backward {
		y, dy = data(in[1]), data(in[2])
		clear(out)
	}
	area := float32(s.R * s.S)
	for plane := range s.N * s.C {
		for p := range s.P() {
			for q := range s.Q() {
				o := (plane*s.P()+p)*s.Q() + q
				switch {
				case k.max && !k.backward:
					best := float32(math.Inf(-1))
					s.window(plane, p, q, func(i int) { best = max(best, x[i]) })
					out[o] = best
				case k.max: // the gradient goes to the first maximum of the window
					done := false
					s.window(plane, p, q, func(i int) {
						if !done && x[i] == y[o] {
							out[i] += dy[o]
							done = true
						}
					})
				case !k.backward:
					var sum float32
					s.window(plane, p, q, func(i int) { sum += x[i] })
					out[o] = sum / area
				default:
					g := dy[o] / area
					s.window(plane, p, q, func(i int) { out[i] += g })
				}
			}
		}
	}
	return nil
}

func (k pool) diffWRT() []bool {
	if k.backward {
		return []bool{false, false, false}
	}
	return []bool{true}
}

func (k pool) grads(in gorgonia.Nodes, out, g *gorgonia.Node) (gorgonia.Nodes, error) {
	b := k
	b.backward = true
	dx, err := apply(b, in[0], out, g)
	return gorgonia.Nodes{dx}, err
}

// globalAvgPool averages each channel of x [N, C, H, W] into [N, C] (the input of a linear
// head); with backward set it spreads dy [N, C] evenly back over H×W.
type globalAvgPool struct {
	h, w     int
	backward bool
}

// GlobalAvgPool averages every channel of x [N, C, H, W] over its H×W positions, giving [N, C].
func GlobalAvgPool(x *gorgonia.Node) (*gorgonia.Node, error) {
	xs := x.Shape()
	if len(xs) != 4 {
		return nil, fmt.Errorf("%w: global average pool of %v", ErrInput, xs)
	}
	return apply(globalAvgPool{h: xs[2], w: xs[3]}, x)
}

func (k globalAvgPool) String() string {
	return fmt.Sprintf("GlobalAvgPool{h=%d,w=%d,backward=%t}", k.h, k.w, k.backward)
}

func (k globalAvgPool) signature() ([]argType, argType) {
	if k.backward {
		return []argType{f32(2)}, f32(4)
	}
	return []argType{f32(4)}, f32(2)
}

func (k globalAvgPool) outShape(in []tensor.Shape) (tensor.Shape, error) {
	x := in[0]
	if k.backward && len(x) == 2 {
		return tensor.Shape{x[0], x[1], k.h, k.w}, nil
	}
	if !k.backward && len(x) == 4 && x[2] == k.h && x[3] == k.w {
		return tensor.Shape{x[0], x[1]}, nil
	}
	return nil, fmt.Errorf("%w: %v: input %v", ErrInput, k, x)
}

func (k globalAvgPool) forward(out []float32, in []*tensor.Dense) error {
	x, hw := data(in[0]), k.h*k.w
	if k.backward {
		for i := range out {
			out[i] = x[i/hw] / float32(hw)
		}
		return nil
	}
	for nc := range out {
		var sum float64
		for _, v := range x[nc*hw : (nc+1)*hw] {
			sum += float64(v)
		}
		out[nc] = float32(sum / float64(hw))
	}
	return nil
}

func (k globalAvgPool) diffWRT() []bool { return []bool{!k.backward} }

func (k globalAvgPool) grads(_ gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
	dx, err := apply(globalAvgPool{h: k.h, w: k.w, backward: true}, g)
	return gorgonia.Nodes{dx}, err
}
