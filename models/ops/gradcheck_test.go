package ops

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// weightedSum is a test-only loss Σ x⊙r, with gradient r·g.
type weightedSum struct {
	dims     int
	backward bool
}

func (k weightedSum) String() string { return fmt.Sprintf("weightedSum{%d,%t}", k.dims, k.backward) }

func (k weightedSum) signature() ([]argType, argType) {
	if k.backward {
		return []argType{f32(k.dims), f32(0)}, f32(k.dims)
	}
	return []argType{f32(k.dims), f32(k.dims)}, f32(0)
}

func (k weightedSum) outShape(in []tensor.Shape) (tensor.Shape, error) {
	if k.backward {
		return in[0].Clone(), nil
	}
	return tensor.ScalarShape(), nil
}

func (k weightedSum) forward(out []float32, in []*tensor.Dense) error {
	if k.backward {
		g := scalar(in[1])
		for i, r := range data(in[0]) {
			out[i] = r * g
		}
		return nil
	}
	var s float64
	r := data(in[1])
	for i, x := range data(in[0]) {
		s += float64(x) * float64(r[i])
	}
	out[0] = float32(s)
	return nil
}

func (k weightedSum) diffWRT() []bool { return []bool{!k.backward, false} }

func (k weightedSum) grads(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
	d, err := apply(weightedSum{k.dims, true}, in[1], g)
	return gorgonia.Nodes{d, nil}, err
}

// input describes one input of an op under test: float32 values drawn
// uniformly from [-1, 1), or ints drawn from [0, maxInt) when maxInt > 0.
type input struct {
	shape  []int
	maxInt int
}

type gradCase struct {
	name   string
	inputs []input
	build  func(in []*gorgonia.Node) (*gorgonia.Node, error)
}

func gradCases() []gradCase {
	f := func(shape ...int) input { return input{shape: shape} }
	attn := func(s AttentionShape) func(in []*gorgonia.Node) (*gorgonia.Node, error) {
		return func(in []*gorgonia.Node) (*gorgonia.Node, error) {
			p, err := AttentionProbs(in[0], in[1], s)
			if err != nil {
				return nil, err
			}
			return AttentionContext(p, in[2], s)
		}
	}
	packed := func(s AttentionShape) func(in []*gorgonia.Node) (*gorgonia.Node, error) {
		return func(in []*gorgonia.Node) (*gorgonia.Node, error) {
			p, err := AttentionProbs(in[0], nil, s)
			if err != nil {
				return nil, err
			}
			return AttentionContext(p, in[0], s)
		}
	}
	gqa := AttentionShape{Batch: 2, Seq: 5, Heads: 4, KVHeads: 2, HeadDim: 3}
	mha := AttentionShape{Batch: 1, Seq: 4, Heads: 2, KVHeads: 2, HeadDim: 4}
	cases := []gradCase{
		{"Add", []input{f(3, 4), f(3, 4)}, func(in []*gorgonia.Node) (*gorgonia.Node, error) { return Add(in[0], in[1]) }},
		{"Mul", []input{f(3, 4), f(3, 4)}, func(in []*gorgonia.Node) (*gorgonia.Node, error) { return Mul(in[0], in[1]) }},
		{"Scale", []input{f(3, 4)}, func(in []*gorgonia.Node) (*gorgonia.Node, error) { return Scale(in[0], -2.5) }},
		{"AddBias", []input{f(3, 4), f(4)}, func(in []*gorgonia.Node) (*gorgonia.Node, error) { return AddBias(in[0], in[1]) }},
		{"GELU", []input{f(3, 5)}, func(in []*gorgonia.Node) (*gorgonia.Node, error) { return GELU(in[0]) }},
		{"SiLU", []input{f(3, 5)}, func(in []*gorgonia.Node) (*gorgonia.Node, error) { return SiLU(in[0]) }},
		{"LayerNorm", []input{f(4, 6), f(6), f(6)}, func(in []*gorgonia.Node) (*gorgonia.Node, error) {
			return LayerNorm(in[0], in[1], in[2], 1e-5)
		}},
		{"RMSNorm", []input{f(4, 6), f(6)}, func(in []*gorgonia.Node) (*gorgonia.Node, error) { return RMSNorm(in[0], in[1], 1e-5) }},
		{"Embedding", []input{{shape: []int{2, 3}, maxInt: 5}, f(5, 4)}, func(in []*gorgonia.Node) (*gorgonia.Node, error) {
			return Embedding(in[0], in[1])
		}},
		{"Positions", []input{f(7, 4)}, func(in []*gorgonia.Node) (*gorgonia.Node, error) { return Positions(in[0], 2, 5) }},
		{"RoPE", []input{f(6, 8)}, func(in []*gorgonia.Node) (*gorgonia.Node, error) { return RoPE(in[0], 3, 2, 4, 10000) }},
		{"AttentionGQA", []input{f(10, 12), f(10, 6), f(10, 6)}, attn(gqa)},
		{"AttentionMHA", []input{f(4, 8), f(4, 8), f(4, 8)}, attn(mha)},
		{"AttentionPacked", []input{f(8, 24)}, packed(AttentionShape{Batch: 2, Seq: 4, Heads: 2, KVHeads: 2, HeadDim: 4, Packed: true})},
		{"AttentionPackedGQA", []input{f(8, 24)}, packed(AttentionShape{Batch: 2, Seq: 4, Heads: 4, KVHeads: 2, HeadDim: 3, Packed: true})},
		{"CrossEntropy", []input{f(6, 7), {shape: []int{2, 3}, maxInt: 7}}, func(in []*gorgonia.Node) (*gorgonia.Node, error) {
			return CrossEntropy(in[0], in[1], 2, 3)
		}},
	}
	for _, t := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
		a, b := []int{3, 4}, []int{4, 5}
		if t[0] {
			a = []int{4, 3}
		}
		if t[1] {
			b = []int{5, 4}
		}
		tA, tB := t[0], t[1]
		cases = append(cases, gradCase{fmt.Sprintf("MatMul/tA=%t,tB=%t", tA, tB), []input{f(a...), f(b...)},
			func(in []*gorgonia.Node) (*gorgonia.Node, error) { return MatMul(in[0], in[1], tA, tB) }})
	}
	return cases
}

// harness is a built test graph: inputs, loss = Σ out⊙r, and the gradients
// of the loss with respect to the float inputs.
type harness struct {
	g      *gorgonia.ExprGraph
	inputs []*gorgonia.Node
	values []*tensor.Dense
	out    *gorgonia.Node
	loss   *gorgonia.Node
	wrt    []int // indices of float inputs
	grads  gorgonia.Nodes
}

func newHarness(t *testing.T, c gradCase, rng *rand.Rand) *harness {
	h := &harness{g: gorgonia.NewGraph()}
	for i, in := range c.inputs {
		var v *tensor.Dense
		if in.maxInt > 0 {
			ids := make([]int, tensor.Shape(in.shape).TotalSize())
			for j := range ids {
				ids[j] = rng.Intn(in.maxInt)
			}
			v = tensor.New(tensor.WithShape(in.shape...), tensor.WithBacking(ids))
		} else {
			v = tensor.New(tensor.WithShape(in.shape...), tensor.WithBacking(randFloats(rng, tensor.Shape(in.shape).TotalSize())))
			h.wrt = append(h.wrt, i)
		}
		n := gorgonia.NewTensor(h.g, v.Dtype(), len(in.shape), gorgonia.WithShape(in.shape...),
			gorgonia.WithName(fmt.Sprintf("in%d", i)), gorgonia.WithValue(v))
		h.inputs, h.values = append(h.inputs, n), append(h.values, v)
	}
	var err error
	h.out, err = c.build(h.inputs)
	require.NoError(t, err)
	r := tensor.New(tensor.WithShape(h.out.Shape()...), tensor.WithBacking(randFloats(rng, h.out.Shape().TotalSize())))
	rn := gorgonia.NewTensor(h.g, tensor.Float32, h.out.Dims(), gorgonia.WithShape(h.out.Shape()...), gorgonia.WithName("r"), gorgonia.WithValue(r))
	if h.out.IsScalar() {
		h.loss = h.out
	} else {
		h.loss, err = apply(weightedSum{dims: h.out.Dims()}, h.out, rn)
		require.NoError(t, err)
	}
	var wrt gorgonia.Nodes
	for _, i := range h.wrt {
		wrt = append(wrt, h.inputs[i])
	}
	h.grads, err = gorgonia.Grad(h.loss, wrt...)
	require.NoError(t, err)
	return h
}

func randFloats(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = rng.Float32()*2 - 1
	}
	return v
}

func (h *harness) run(t *testing.T, m gorgonia.VM) float64 {
	m.Reset()
	require.NoError(t, m.RunAll())
	return float64(lossValue(t, h.loss.Value()))
}

func lossValue(t *testing.T, v gorgonia.Value) float32 {
	d, err := asDense(v)
	require.NoError(t, err)
	return scalar(d)
}

// TestGradients compares each op's symbolic gradient with central finite
// differences of its forward pass (run through a stock TapeMachine).
func TestGradients(t *testing.T) {
	for _, c := range gradCases() {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(1))
			h := newHarness(t, c, rng)
			m := gorgonia.NewTapeMachine(h.g)
			defer m.Close()
			h.run(t, m)
			analytic := make([][]float32, len(h.grads))
			for i, g := range h.grads {
				d, err := asDense(g.Value())
				require.NoError(t, err)
				analytic[i] = append([]float32(nil), data(d)...)
			}
			const eps = 1e-2
			for gi, ii := range h.wrt {
				vals := data(h.values[ii])
				for j := range vals {
					orig := vals[j]
					vals[j] = orig + eps
					up := h.run(t, m)
					vals[j] = orig - eps
					down := h.run(t, m)
					vals[j] = orig
					numeric := (up - down) / (2 * eps)
					got := float64(analytic[gi][j])
					assert.InDelta(t, numeric, got, 2e-3+2e-2*math.Abs(numeric), "input %d element %d", ii, j)
				}
			}
		})
	}
}
