package ops

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// sameShape checks that every input has the first input's shape and returns it.
func sameShape(name fmt.Stringer, in []tensor.Shape) (tensor.Shape, error) {
	for _, s := range in[1:] {
		if !s.Eq(in[0]) {
			return nil, fmt.Errorf("%w: %v: shapes %v and %v differ", ErrInput, name, in[0], s)
		}
	}
	return in[0].Clone(), nil
}

// add is a + b for equal shapes.
type add struct{ dims int }

// Add adds two tensors of equal shape.
func Add(a, b *gorgonia.Node) (*gorgonia.Node, error) { return apply(add{a.Dims()}, a, b) }

func (k add) String() string { return fmt.Sprintf("Add{%d}", k.dims) }
func (k add) signature() ([]argType, argType) {
	return []argType{f32(k.dims), f32(k.dims)}, f32(k.dims)
}
func (k add) outShape(in []tensor.Shape) (tensor.Shape, error) { return sameShape(k, in) }
func (k add) diffWRT() []bool                                  { return []bool{true, true} }

func (k add) forward(out []float32, in []*tensor.Dense) error {
	a, b := data(in[0]), data(in[1])
	for i := range out {
		out[i] = a[i] + b[i]
	}
	return nil
}

func (k add) grads(_ gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
	return gorgonia.Nodes{g, g}, nil
}

// mul is the elementwise product a ⊙ b for equal shapes.
type mul struct{ dims int }

// Mul multiplies two tensors of equal shape elementwise.
func Mul(a, b *gorgonia.Node) (*gorgonia.Node, error) { return apply(mul{a.Dims()}, a, b) }

func (k mul) String() string { return fmt.Sprintf("Mul{%d}", k.dims) }
func (k mul) signature() ([]argType, argType) {
	return []argType{f32(k.dims), f32(k.dims)}, f32(k.dims)
}
func (k mul) outShape(in []tensor.Shape) (tensor.Shape, error) { return sameShape(k, in) }
func (k mul) diffWRT() []bool                                  { return []bool{true, true} }

func (k mul) forward(out []float32, in []*tensor.Dense) error {
	a, b := data(in[0]), data(in[1])
	for i := range out {
		out[i] = a[i] * b[i]
	}
	return nil
}

func (k mul) grads(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
	da, err := Mul(g, in[1])
	if err != nil {
		return nil, err
	}
	db, err := Mul(g, in[0])
	return gorgonia.Nodes{da, db}, err
}

// scale is c·x for a constant c.
type scale struct {
	dims int
	c    float32
}

// Scale multiplies x by the constant c.
func Scale(x *gorgonia.Node, c float32) (*gorgonia.Node, error) { return apply(scale{x.Dims(), c}, x) }

func (k scale) String() string                                   { return fmt.Sprintf("Scale{%d,%g}", k.dims, k.c) }
func (k scale) signature() ([]argType, argType)                  { return []argType{f32(k.dims)}, f32(k.dims) }
func (k scale) outShape(in []tensor.Shape) (tensor.Shape, error) { return in[0].Clone(), nil }
func (k scale) diffWRT() []bool                                  { return []bool{true} }

func (k scale) forward(out []float32, in []*tensor.Dense) error {
	for i, v := range data(in[0]) {
		out[i] = k.c * v
	}
	return nil
}

func (k scale) grads(_ gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
	d, err := Scale(g, k.c)
	return gorgonia.Nodes{d}, err
}

// addBias is x + b with b [F] added to every row of x [N, F].
type addBias struct{}

// AddBias adds the vector b to every row of the matrix x.
func AddBias(x, b *gorgonia.Node) (*gorgonia.Node, error) { return apply(addBias{}, x, b) }

func (addBias) String() string                  { return "AddBias" }
func (addBias) signature() ([]argType, argType) { return []argType{f32(2), f32(1)}, f32(2) }
func (addBias) diffWRT() []bool                 { return []bool{true, true} }

func (k addBias) outShape(in []tensor.Shape) (tensor.Shape, error) {
	if len(in[0]) != 2 || len(in[1]) != 1 || in[0][1] != in[1][0] {
		return nil, fmt.Errorf("%w: %v: shapes %v and %v", ErrInput, k, in[0], in[1])
	}
	return in[0].Clone(), nil
}

func (addBias) forward(out []float32, in []*tensor.Dense) error {
	x, b := data(in[0]), data(in[1])
	f := len(b)
	for i := range out {
		out[i] = x[i] + b[i%f]
	}
	return nil
}

func (addBias) grads(_ gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
	db, err := SumRows(g)
	return gorgonia.Nodes{g, db}, err
}

// sumRows sums the rows of a matrix [N, F] into a vector [F].
type sumRows struct{}

// SumRows sums the rows of a matrix (the gradient of a broadcast bias).
func SumRows(x *gorgonia.Node) (*gorgonia.Node, error) { return apply(sumRows{}, x) }

func (sumRows) String() string                  { return "SumRows" }
func (sumRows) signature() ([]argType, argType) { return []argType{f32(2)}, f32(1) }

func (k sumRows) outShape(in []tensor.Shape) (tensor.Shape, error) {
	if len(in[0]) != 2 {
		return nil, fmt.Errorf("%w: %v wants a matrix, got %v", ErrInput, k, in[0])
	}
	return tensor.Shape{in[0][1]}, nil
}

func (sumRows) forward(out []float32, in []*tensor.Dense) error {
	f := len(out)
	acc := make([]float64, f)
	for i, v := range data(in[0]) {
		acc[i%f] += float64(v)
	}
	for i, v := range acc {
		out[i] = float32(v)
	}
	return nil
}
