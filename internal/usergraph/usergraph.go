// Package usergraph builds the graphs a Gorgonia user writes, with Gorgonia's own ops only (no op of
// this project): a small MLP classifier and a transformer block (multi-head attention and a ReLU
// feed-forward, each with a hand-written layer norm and a residual). The tests of every executor
// (Gorgonia's TapeMachine on gmlake memory, train/vm, gpu/graphexec) train them and compare runs.
//
// A Net holds a graph, its loss, its learnables and the leaf values a step reads. Weights and data
// come from a seeded generator, so two Nets built with the same Spec start from the same bits.
// Build adds G.Grad's gradient nodes for every learnable.
package usergraph

import (
	"fmt"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Spec is the size of a Net. The zero value of a field takes its default.
type Spec struct {
	Batch  int    // rows of the input (MLP) or sequences (transformer), default 4
	Seq    int    // tokens per sequence (transformer), default 4
	Width  int    // model width (transformer) or input features (MLP), default 8
	Hidden int    // hidden units (MLP) or feed-forward width (transformer), default 16
	Heads  int    // attention heads (transformer), default 2
	Out    int    // classes (MLP), default 3
	Seed   uint64 // weights and data
}

func (s Spec) withDefaults() Spec {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&s.Batch, 4)
	def(&s.Seq, 4)
	def(&s.Width, 8)
	def(&s.Hidden, 16)
	def(&s.Heads, 2)
	def(&s.Out, 3)
	return s
}

// Net is one built graph.
type Net struct {
	G          *G.ExprGraph
	Loss       *G.Node   // a scalar
	Learnables G.Nodes   // the weights, in a fixed order
	Grads      G.Nodes   // G.Grad's gradient of Loss for each learnable, same order
	Input      *G.Node   // the data leaf
	Target     *G.Node   // the label (one-hot) or regression target leaf
	Forward    G.Nodes   // ancestors of Loss worth naming, for tests that read activations
	Blocks     []G.Nodes // the forward nodes of each layer, in order (for tests of block boundaries)
	// BlockInputs[k] is the activation layer k reads: the input, then each layer's output.
	BlockInputs G.Nodes
}

// MLP is a two-layer classifier: softmax(relu(x·W1 + b1)·W2 + b2), with the mean cross-entropy
// against one-hot labels as its loss.
func MLP(s Spec) (*Net, error) {
	s = s.withDefaults()
	rng := rand.New(rand.NewPCG(s.Seed, 1))
	g := G.NewGraph()
	n := &Net{G: g}
	x := leaf(g, rng, "x", 1, s.Batch, s.Width)
	y := oneHot(g, rng, "y", s.Batch, s.Out)
	w1 := n.param(g, rng, "w1", 1/math.Sqrt(float64(s.Width)), s.Width, s.Hidden)
	b1 := n.param(g, rng, "b1", 0.1, s.Hidden)
	w2 := n.param(g, rng, "w2", 1/math.Sqrt(float64(s.Hidden)), s.Hidden, s.Out)
	b2 := n.param(g, rng, "b2", 0.1, s.Out)
	var err error
	do := func(f func() (*G.Node, error)) *G.Node {
		if err != nil {
			return nil
		}
		var v *G.Node
		v, err = f()
		return v
	}
	z1 := do(func() (*G.Node, error) { return G.Mul(x, w1) })
	a1 := do(func() (*G.Node, error) { return G.BroadcastAdd(z1, b1, nil, []byte{0}) })
	h := do(func() (*G.Node, error) { return G.Rectify(a1) })
	z2 := do(func() (*G.Node, error) { return G.Mul(h, w2) })
	logits := do(func() (*G.Node, error) { return G.BroadcastAdd(z2, b2, nil, []byte{0}) })
	p := do(func() (*G.Node, error) { return G.SoftMax(logits) })
	logp := do(func() (*G.Node, error) { return G.Log(p) })
	picked := do(func() (*G.Node, error) { return G.HadamardProd(logp, y) })
	total := do(func() (*G.Node, error) { return G.Sum(picked) })
	loss := do(func() (*G.Node, error) { return G.Neg(total) })
	loss = do(func() (*G.Node, error) { return G.Div(loss, G.NewConstant(float32(s.Batch))) })
	if err != nil {
		return nil, fmt.Errorf("usergraph: MLP: %w", err)
	}
	n.Loss, n.Input, n.Target = loss, x, y
	n.Forward = G.Nodes{h, logits, p}
	n.Blocks = []G.Nodes{{z1, a1, h}, {z2, logits, p, logp}}
	n.BlockInputs = G.Nodes{x, h}
	return n, n.grad()
}

// TransformerBlock is one pre-norm transformer block over Batch sequences of Seq tokens of Width
// features: x + Attention(LN(x)), then + FFN(LN(·)), with FFN = relu(·W1)·W2. Attention has Heads
// heads (Reshape, Transpose, BatchedMatMul, SoftMax over the last axis); the loss is the mean
// squared error against a random target.
func TransformerBlock(s Spec) (*Net, error) {
	s = s.withDefaults()
	if s.Width%s.Heads != 0 {
		return nil, fmt.Errorf("usergraph: width %d is not a multiple of %d heads", s.Width, s.Heads)
	}
	rng := rand.New(rand.NewPCG(s.Seed, 2))
	g := G.NewGraph()
	n := &Net{G: g}
	rows, d, hd := s.Batch*s.Seq, s.Width, s.Width/s.Heads
	x := leaf(g, rng, "x", 1, rows, d)
	y := leaf(g, rng, "y", 1, rows, d)
	scale := 1 / math.Sqrt(float64(d))
	g1 := n.gain(g, "ln1_gain", d)
	wq := n.param(g, rng, "wq", scale, d, d)
	wk := n.param(g, rng, "wk", scale, d, d)
	wv := n.param(g, rng, "wv", scale, d, d)
	wo := n.param(g, rng, "wo", scale, d, d)
	g2 := n.gain(g, "ln2_gain", d)
	w1 := n.param(g, rng, "ffn_w1", scale, d, s.Hidden)
	w2 := n.param(g, rng, "ffn_w2", 1/math.Sqrt(float64(s.Hidden)), s.Hidden, d)

	b := &builder{}
	ln1 := b.layerNorm(x, g1)
	heads := func(m *G.Node) *G.Node { // (rows, d) -> (batch*heads, seq, hd)
		r := b.do(func() (*G.Node, error) { return G.Reshape(m, tensor.Shape{s.Batch, s.Seq, s.Heads, hd}) })
		t := b.do(func() (*G.Node, error) { return G.Transpose(r, 0, 2, 1, 3) })
		return b.do(func() (*G.Node, error) { return G.Reshape(t, tensor.Shape{s.Batch * s.Heads, s.Seq, hd}) })
	}
	q := heads(b.do(func() (*G.Node, error) { return G.Mul(ln1, wq) }))
	k := heads(b.do(func() (*G.Node, error) { return G.Mul(ln1, wk) }))
	v := heads(b.do(func() (*G.Node, error) { return G.Mul(ln1, wv) }))
	scores := b.do(func() (*G.Node, error) { return G.BatchedMatMul(q, k, false, true) })
	scaled := b.do(func() (*G.Node, error) { return G.Mul(scores, G.NewConstant(float32(1/math.Sqrt(float64(hd))))) })
	attn := b.do(func() (*G.Node, error) { return G.SoftMax(scaled) })
	ctx := b.do(func() (*G.Node, error) { return G.BatchedMatMul(attn, v) })
	merged := b.do(func() (*G.Node, error) { return G.Reshape(ctx, tensor.Shape{s.Batch, s.Heads, s.Seq, hd}) })
	merged = b.do(func() (*G.Node, error) { return G.Transpose(merged, 0, 2, 1, 3) })
	merged = b.do(func() (*G.Node, error) { return G.Reshape(merged, tensor.Shape{rows, d}) })
	proj := b.do(func() (*G.Node, error) { return G.Mul(merged, wo) })
	res1 := b.do(func() (*G.Node, error) { return G.Add(x, proj) })
	attnNodes := b.take()

	ln2 := b.layerNorm(res1, g2)
	hid := b.do(func() (*G.Node, error) { return G.Mul(ln2, w1) })
	act := b.do(func() (*G.Node, error) { return G.Rectify(hid) })
	ffn := b.do(func() (*G.Node, error) { return G.Mul(act, w2) })
	out := b.do(func() (*G.Node, error) { return G.Add(res1, ffn) })
	ffnNodes := b.take()

	diff := b.do(func() (*G.Node, error) { return G.Sub(out, y) })
	sq := b.do(func() (*G.Node, error) { return G.Square(diff) })
	loss := b.do(func() (*G.Node, error) { return G.Mean(sq) })
	if b.err != nil {
		return nil, fmt.Errorf("usergraph: transformer block: %w", b.err)
	}
	n.Loss, n.Input, n.Target = loss, x, y
	n.Forward = G.Nodes{attn, res1, out}
	n.Blocks = []G.Nodes{attnNodes, ffnNodes}
	n.BlockInputs = G.Nodes{x, res1}
	return n, n.grad()
}

// builder chains graph calls, keeping the first error and the nodes made since the last take.
type builder struct {
	err  error
	made G.Nodes
}

func (b *builder) do(f func() (*G.Node, error)) *G.Node {
	if b.err != nil {
		return nil
	}
	v, err := f()
	if err != nil {
		b.err = err
		return nil
	}
	b.made = append(b.made, v)
	return v
}

func (b *builder) take() G.Nodes {
	out := b.made
	b.made = nil
	return out
}

// layerNorm is (x - mean) / sqrt(var + 1e-5) * gain over the last axis of a matrix.
func (b *builder) layerNorm(x, gain *G.Node) *G.Node {
	mean := b.do(func() (*G.Node, error) { return G.Mean(x, 1) })
	centred := b.do(func() (*G.Node, error) { return G.BroadcastSub(x, mean, nil, []byte{1}) })
	sq := b.do(func() (*G.Node, error) { return G.Square(centred) })
	variance := b.do(func() (*G.Node, error) { return G.Mean(sq, 1) })
	eps := b.do(func() (*G.Node, error) { return G.Add(variance, G.NewConstant(float32(1e-5))) })
	std := b.do(func() (*G.Node, error) { return G.Sqrt(eps) })
	norm := b.do(func() (*G.Node, error) { return G.BroadcastHadamardDiv(centred, std, nil, []byte{1}) })
	return b.do(func() (*G.Node, error) { return G.BroadcastHadamardProd(norm, gain, nil, []byte{0}) })
}

// grad adds G.Grad's gradient nodes of the loss for every learnable.
func (n *Net) grad() error {
	grads, err := G.Grad(n.Loss, n.Learnables...)
	if err != nil {
		return fmt.Errorf("usergraph: gradients: %w", err)
	}
	n.Grads = grads
	return nil
}

// param is a learnable of the given shape, uniform in ±scale.
func (n *Net) param(g *G.ExprGraph, rng *rand.Rand, name string, scale float64, shape ...int) *G.Node {
	p := leaf(g, rng, name, scale, shape...)
	n.Learnables = append(n.Learnables, p)
	return p
}

// gain is a learnable vector of ones.
func (n *Net) gain(g *G.ExprGraph, name string, size int) *G.Node {
	data := make([]float32, size)
	for i := range data {
		data[i] = 1
	}
	p := G.NewVector(g, tensor.Float32, G.WithShape(size), G.WithName(name),
		G.WithValue(tensor.New(tensor.WithShape(size), tensor.WithBacking(data))))
	n.Learnables = append(n.Learnables, p)
	return p
}

// leaf is a float32 node of the given shape with values uniform in ±scale.
func leaf(g *G.ExprGraph, rng *rand.Rand, name string, scale float64, shape ...int) *G.Node {
	size := 1
	for _, d := range shape {
		size *= d
	}
	data := make([]float32, size)
	for i := range data {
		data[i] = float32((2*rng.Float64() - 1) * scale)
	}
	t := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
	return G.NodeFromAny(g, t, G.WithName(name))
}

// oneHot is a (rows, classes) matrix with one 1 per row at a random class.
func oneHot(g *G.ExprGraph, rng *rand.Rand, name string, rows, classes int) *G.Node {
	data := make([]float32, rows*classes)
	for r := range rows {
		data[r*classes+rng.IntN(classes)] = 1
	}
	t := tensor.New(tensor.WithShape(rows, classes), tensor.WithBacking(data))
	return G.NodeFromAny(g, t, G.WithName(name))
}
