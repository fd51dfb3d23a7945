package vm

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// testNet is a small residual network with attention-like blocks, built by hand so the machine can be
// tested without models/. It exercises prealloc ops (MatMul, elementwise, softmax), heap ops (Sum
// along an axis), aliases (Reshape), views (Slice, whose gradient needs a zeroed buffer) and scalars.
type testNet struct {
	g      *gorgonia.ExprGraph
	loss   *gorgonia.Node
	params gorgonia.Nodes
	grads  gorgonia.Nodes
	blocks Blocks
}

const (
	netBatch = 4
	netDim   = 8
)

// netFeatures switches on the parts of testNet that Gorgonia's TapeMachine gets wrong: with a Reshape
// whose input is read again later, its register reuse overwrites the aliased buffer and the gradients
// come out wrong (TestFiniteDifferences shows the Machine's are right).
type netFeatures struct {
	reshape bool // Reshape aliases in the middle of the block
	slice   bool // a slice view, whose gradient (sliceIncr) needs a zeroed buffer
}

var (
	tapeSafe = netFeatures{}
	allParts = netFeatures{reshape: true, slice: true}
)

func buildNet(t testing.TB, dt tensor.Dtype, nBlocks int, seed int64, f netFeatures) *testNet {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	g := gorgonia.NewGraph()
	value := func(shape ...int) *tensor.Dense {
		n := 1
		for _, s := range shape {
			n *= s
		}
		switch dt {
		case tensor.Float32:
			data := make([]float32, n)
			for i := range data {
				data[i] = float32(rng.NormFloat64() * 0.5)
			}
			return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
		default:
			data := make([]float64, n)
			for i := range data {
				data[i] = rng.NormFloat64() * 0.5
			}
			return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
		}
	}
	net := &testNet{g: g, blocks: Blocks{Of: map[int64]int{}}}
	x := gorgonia.NewMatrix(g, dt, gorgonia.WithShape(netBatch, netDim), gorgonia.WithName("x"), gorgonia.WithValue(value(netBatch, netDim)))
	y := gorgonia.NewMatrix(g, dt, gorgonia.WithShape(netBatch, netDim), gorgonia.WithName("y"), gorgonia.WithValue(value(netBatch, netDim)))
	param := func(name string, shape ...int) *gorgonia.Node {
		p := gorgonia.NewMatrix(g, dt, gorgonia.WithShape(shape...), gorgonia.WithName(name), gorgonia.WithValue(value(shape...)))
		net.params = append(net.params, p)
		return p
	}
	h := x
	for k := 0; k < nBlocks; k++ {
		w1, w2 := param("w1_"+string(rune('a'+k)), netDim, netDim), param("w2_"+string(rune('a'+k)), netDim, netDim)
		before := len(g.AllNodes())
		net.blocks.Inputs = append(net.blocks.Inputs, h)
		a := gorgonia.Must(gorgonia.Tanh(gorgonia.Must(gorgonia.Mul(h, w1))))
		scores := gorgonia.Must(gorgonia.Mul(a, gorgonia.Must(gorgonia.Transpose(h))))
		attn := gorgonia.Must(gorgonia.SoftMax(scores))
		ctx := gorgonia.Must(gorgonia.Mul(attn, a))
		back := gorgonia.Must(gorgonia.Square(ctx))
		if f.reshape {
			flat := gorgonia.Must(gorgonia.Reshape(ctx, tensor.Shape{netBatch * netDim / 2, 2}))
			back = gorgonia.Must(gorgonia.Reshape(gorgonia.Must(gorgonia.Square(flat)), tensor.Shape{netBatch, netDim}))
		}
		left := back
		if f.slice {
			left = gorgonia.Must(gorgonia.Slice(back, nil, gorgonia.S(0, netDim/2)))
		}
		gate := gorgonia.Must(gorgonia.Sigmoid(gorgonia.Must(gorgonia.Sum(left, 1))))
		mixed := gorgonia.Must(gorgonia.Mul(gorgonia.Must(gorgonia.HadamardProd(ctx, back)), w2))
		scaled := gorgonia.Must(gorgonia.BroadcastHadamardProd(mixed, gorgonia.Must(gorgonia.Reshape(gate, tensor.Shape{netBatch, 1})), nil, []byte{1}))
		h = gorgonia.Must(gorgonia.Add(h, scaled))
		for _, n := range g.AllNodes()[before:] {
			net.blocks.Of[n.ID()] = k
		}
	}
	diff := gorgonia.Must(gorgonia.Sub(h, y))
	net.loss = gorgonia.Must(gorgonia.Mean(gorgonia.Must(gorgonia.Square(diff))))
	grads, err := gorgonia.Grad(net.loss, net.params...)
	require.NoError(t, err)
	net.grads = grads
	return net
}

func (n *testNet) outputs() []*gorgonia.Node { return append([]*gorgonia.Node{n.loss}, n.grads...) }

// reference runs the net with Gorgonia's TapeMachine and returns the loss and gradients' data.
func (n *testNet) reference(t testing.TB) []any {
	t.Helper()
	m := gorgonia.NewTapeMachine(n.g)
	defer m.Close()
	require.NoError(t, m.RunAll())
	return n.read(t, func(x *gorgonia.Node) gorgonia.Value { return x.Value() })
}

func (n *testNet) read(t testing.TB, value func(*gorgonia.Node) gorgonia.Value) []any {
	t.Helper()
	var out []any
	for _, o := range n.outputs() {
		v := value(o)
		require.NotNil(t, v, "no value for %v", o)
		out = append(out, cloneData(v))
	}
	return out
}

func cloneData(v gorgonia.Value) any {
	switch x := v.Data().(type) {
	case []float32:
		return append([]float32(nil), x...)
	case []float64:
		return append([]float64(nil), x...)
	default:
		return x
	}
}
