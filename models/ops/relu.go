package ops

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// relu is max(x, 0); with backward set it computes dy·[x > 0] from (x, dy). The gradient reads
// x rather than y, which is the same test for a rectifier and lets y die early.
type relu struct {
	dims     int
	backward bool
}

// ReLU is the rectifier max(x, 0), elementwise.
func ReLU(x *gorgonia.Node) (*gorgonia.Node, error) { return apply(relu{dims: x.Dims()}, x) }

func (k relu) String() string { return fmt.Sprintf("ReLU{%d,backward=%t}", k.dims, k.backward) }

func (k relu) signature() ([]argType, argType) {
	if k.backward {
		return []argType{f32(k.dims), f32(k.dims)}, f32(k.dims)
	}
	return []argType{f32(k.dims)}, f32(k.dims)
}

func (k relu) outShape(in []tensor.Shape) (tensor.Shape, error) { return sameShape(k, in) }

func (k relu) forward(out []float32, in []*tensor.Dense) error {
	x := data(in[0])
	if !k.backward {
		for i, v := range x {
			out[i] = max(v, 0)
		}
		return nil
	}
	dy := data(in[1])
	for i, v := range x {
		if v > 0 {
			out[i] = dy[i]
		} else {
			out[i] = 0
		}
	}
	return nil
}

func (k relu) diffWRT() []bool {
	if k.backward {
		return []bool{false, false}
	}
	return []bool{true}
}

func (k relu) grads(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
	d, err := apply(relu{dims: k.dims, backward: true}, in[0], g)
	return gorgonia.Nodes{d}, err
}
