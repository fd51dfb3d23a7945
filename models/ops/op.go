package ops

import (
	"errors"
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ErrInput is wrapped by every error about an op's input values.
var ErrInput = errors.New("ops: bad input")

// argType is the type of one op argument or result: a float32 or int tensor
// of some rank; rank 0 is a float32 scalar.
type argType struct {
	dims  int
	dtype tensor.Dtype
}

func f32(dims int) argType  { return argType{dims, tensor.Float32} }
func ints(dims int) argType { return argType{dims, tensor.Int} }

func (a argType) hm() hm.Type {
	if a.dims == 0 {
		return a.dtype
	}
	return gorgonia.TensorType{Dims: a.dims, Of: a.dtype}
}

// kernel is what differs between the package's ops. The generic op type
// turns a kernel into a gorgonia.Op (plus SDOp and UsePreallocDoer).
type kernel interface {
	// String names the kernel with every parameter: ops hash by it, so two
	// kernels that compute different things must print differently.
	String() string
	signature() (in []argType, out argType)
	outShape(in []tensor.Shape) (tensor.Shape, error)
	// forward computes the result into out, overwriting every element (out
	// may hold anything). Inputs are contiguous float32 or int tensors.
	forward(out []float32, in []*tensor.Dense) error
}

// differentiable kernels give their gradients as graph nodes.
type differentiable interface {
	kernel
	diffWRT() []bool
	// grads returns one node per input (nil where diffWRT is false).
	grads(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error)
}

// op adapts a kernel to gorgonia.Op.
type op struct{ k kernel }

var (
	_ gorgonia.Op              = op{}
	_ gorgonia.SDOp            = op{}
	_ gorgonia.UsePreallocDoer = op{}
)

func apply(k kernel, children ...*gorgonia.Node) (*gorgonia.Node, error) {
	n, err := gorgonia.ApplyOp(op{k}, children...)
	if err != nil {
		return nil, fmt.Errorf("ops: %v: %w", k, err)
	}
	return n, nil
}

func (o op) Arity() int {
	in, _ := o.k.signature()
	return len(in)
}

func (o op) Type() hm.Type {
	in, out := o.k.signature()
	ts := make([]hm.Type, 0, len(in)+1)
	for _, a := range in {
		ts = append(ts, a.hm())
	}
	return hm.NewFnType(append(ts, out.hm())...)
}

func (o op) InferShape(ds ...gorgonia.DimSizer) (tensor.Shape, error) {
	shapes := make([]tensor.Shape, len(ds))
	for i, d := range ds {
		s, ok := d.(tensor.Shape)
		if !ok {
			return nil, fmt.Errorf("%w: %v: input %d has no shape", ErrInput, o.k, i)
		}
		shapes[i] = s
	}
	return o.k.outShape(shapes)
}

func (o op) Do(vals ...gorgonia.Value) (gorgonia.Value, error) {
	in, shape, err := o.prepare(vals)
	if err != nil {
		return nil, err
	}
	out := tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(shape...))
	return out, o.compute(out, in)
}

// compute runs the kernel into out; a scalar result goes through a one-element buffer
// because a 0-d tensor exposes no slice.
func (o op) compute(out *tensor.Dense, in []*tensor.Dense) error {
	if !out.IsScalar() {
		return o.k.forward(data(out), in)
	}
	var buf [1]float32
	if err := o.k.forward(buf[:], in); err != nil {
		return err
	}
	return out.SetAt(buf[0])
}

// UsePreallocDo computes into prealloc, a float32 *tensor.Dense of the
// result's size (its contents are overwritten, never read).
func (o op) UsePreallocDo(prealloc gorgonia.Value, vals ...gorgonia.Value) (gorgonia.Value, error) {
	in, shape, err := o.prepare(vals)
	if err != nil {
		return nil, err
	}
	out, ok := prealloc.(*tensor.Dense)
	if !ok || out.Dtype() != tensor.Float32 || out.Shape().TotalSize() != shape.TotalSize() || out.IsView() {
		return nil, fmt.Errorf("%w: %v: prealloc %T %v does not fit a float32 result of shape %v", ErrInput, o.k, prealloc, prealloc.Shape(), shape)
	}
	if !out.Shape().Eq(shape) && !out.IsScalar() {
		if err := out.Reshape(shape...); err != nil {
			return nil, err
		}
	}
	return out, o.compute(out, in)
}

// prepare checks the argument count, turns every argument into a contiguous
// *tensor.Dense and infers the result shape.
func (o op) prepare(vals []gorgonia.Value) ([]*tensor.Dense, tensor.Shape, error) {
	sig, _ := o.k.signature()
	if len(vals) != len(sig) {
		return nil, nil, fmt.Errorf("%w: %v takes %d inputs, got %d", ErrInput, o.k, len(sig), len(vals))
	}
	in := make([]*tensor.Dense, len(vals))
	shapes := make([]tensor.Shape, len(vals))
	for i, v := range vals {
		d, err := asDense(v)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %v input %d: %w", ErrInput, o.k, i, err)
		}
		if d.Dtype() != sig[i].dtype {
			return nil, nil, fmt.Errorf("%w: %v input %d is %v, want %v", ErrInput, o.k, i, d.Dtype(), sig[i].dtype)
		}
		in[i], shapes[i] = d, d.Shape()
	}
	shape, err := o.k.outShape(shapes)
	return in, shape, err
}

// asDense returns v as a contiguous dense tensor; scalars become 0-d tensors.
func asDense(v gorgonia.Value) (*tensor.Dense, error) {
	switch t := v.(type) {
	case *tensor.Dense:
		if t.IsView() {
			return t.Materialize().(*tensor.Dense), nil
		}
		return t, nil
	case *gorgonia.F32:
		return tensor.New(tensor.FromScalar(float32(*t))), nil
	case nil:
		return nil, errors.New("no value")
	}
	return nil, fmt.Errorf("unsupported value %T", v)
}

func (o op) ReturnsPtr() bool      { return false }
func (o op) CallsExtern() bool     { return false }
func (o op) OverwritesInput() int  { return -1 }
func (o op) String() string        { return o.k.String() }
func (o op) WriteHash(h hash.Hash) { fmt.Fprint(h, "gmlake/", o.k.String()) }

func (o op) Hashcode() uint32 {
	h := fnv.New32a()
	o.WriteHash(h)
	return h.Sum32()
}

func (o op) DiffWRT(n int) []bool {
	if d, ok := o.k.(differentiable); ok {
		return d.diffWRT()
	}
	return make([]bool, n)
}

func (o op) SymDiff(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	d, ok := o.k.(differentiable)
	if !ok {
		return nil, fmt.Errorf("ops: %v is not differentiable", o.k)
	}
	return d.grads(in, out, grad)
}

// data views a tensor's elements.
func data(t *tensor.Dense) []float32 { return t.Data().([]float32) }

func intData(t *tensor.Dense) []int { return t.Data().([]int) }

// scalar reads a 0-d (or one-element) float32 tensor.
func scalar(t *tensor.Dense) float32 {
	if v, ok := t.Data().(float32); ok {
		return v
	}
	return data(t)[0]
}
