package graphexec

import (
	"math"
	"math/rand/v2"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// userGraph is a graph a user writes with Gorgonia's own ops only: its loss, the learnables it
// trains, their gradient nodes (gorgonia.Grad) and the inputs a step feeds.
type userGraph struct {
	G      *gorgonia.ExprGraph
	Loss   *gorgonia.Node
	Params []*gorgonia.Node
	Grads  []*gorgonia.Node
	Inputs []*gorgonia.Node
}

func param(g *gorgonia.ExprGraph, r *rand.Rand, name string, scale float64, shape ...int) *gorgonia.Node {
	n := 1
	for _, s := range shape {
		n *= s
	}
	data := make([]float32, n)
	for i := range data {
		data[i] = float32(r.NormFloat64() * scale)
	}
	v := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
	return gorgonia.NewTensor(g, tensor.Float32, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name),
		gorgonia.WithValue(v))
}

func input(g *gorgonia.ExprGraph, name string, shape ...int) *gorgonia.Node {
	return gorgonia.NewTensor(g, tensor.Float32, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name))
}

func scalar(g *gorgonia.ExprGraph, v float32) *gorgonia.Node { return gorgonia.NewConstant(v) }

func finish(ug *userGraph) (*userGraph, error) {
	grads, err := gorgonia.Grad(ug.Loss, ug.Params...)
	if err != nil {
		return nil, err
	}
	ug.Grads = grads
	return ug, nil
}

// userMLP is a classifier: two hidden layers (ReLU, then tanh and sigmoid halves joined by
// Concat), bias by broadcasting, softmax and mean cross-entropy against one-hot labels.
func userMLP(batch, features, hidden, classes int, seed uint64) (*userGraph, error) {
	r := rand.New(rand.NewPCG(seed, 1))
	g := gorgonia.NewGraph()
	x := input(g, "x", batch, features)
	y := input(g, "y", batch, classes)
	w1 := param(g, r, "w1", 1/math.Sqrt(float64(features)), features, hidden)
	b1 := param(g, r, "b1", 0.1, hidden)
	w2 := param(g, r, "w2", 1/math.Sqrt(float64(hidden)), hidden, hidden)
	b2 := param(g, r, "b2", 0.1, hidden)
	w3 := param(g, r, "w3", 1/math.Sqrt(float64(hidden)), hidden, classes)
	b3 := param(g, r, "b3", 0.1, classes)
	var err error
	must := func(n *gorgonia.Node, e error) *gorgonia.Node {
		if err == nil && e != nil {
			err = e
		}
		return n
	}
	h1 := must(gorgonia.Rectify(must(gorgonia.BroadcastAdd(must(gorgonia.Mul(x, w1)), b1, nil, []byte{0}))))
	z2 := must(gorgonia.BroadcastAdd(must(gorgonia.Mul(h1, w2)), b2, nil, []byte{0}))
	half := hidden / 2
	left := must(gorgonia.Tanh(must(gorgonia.Slice(z2, nil, gorgonia.S(0, half)))))
	right := must(gorgonia.Sigmoid(must(gorgonia.Slice(z2, nil, gorgonia.S(half, hidden)))))
	h2 := must(gorgonia.Concat(1, left, right))
	logits := must(gorgonia.BroadcastAdd(must(gorgonia.Mul(h2, w3)), b3, nil, []byte{0}))
	prob := must(gorgonia.SoftMax(logits))
	ll := must(gorgonia.HadamardProd(must(gorgonia.Log(prob)), y))
	loss := must(gorgonia.Neg(must(gorgonia.Mean(must(gorgonia.Sum(ll, 1))))))
	if err != nil {
		return nil, err
	}
	return finish(&userGraph{G: g, Loss: loss, Params: []*gorgonia.Node{w1, b1, w2, b2, w3, b3},
		Inputs: []*gorgonia.Node{x, y}})
}

// userBlock is a pre-norm transformer block over batch sequences of seq tokens (width dim, heads
// heads), then a linear head and a max-stabilised log-softmax cross-entropy, all in Gorgonia ops:
// LayerNorm from Mean/Sub/Square/Sqrt/Div with broadcasting, attention with Reshape, Transpose,
// BatchedMatMul, a causal mask added by broadcasting and SoftMax, a tanh-GELU MLP, residuals.
func userBlock(batch, seq, dim, heads, classes int, seed uint64) (*userGraph, error) {
	r := rand.New(rand.NewPCG(seed, 2))
	g := gorgonia.NewGraph()
	tokens, hd := batch*seq, dim/heads
	x := input(g, "x", tokens, dim)
	y := input(g, "y", tokens, classes)
	mask := input(g, "mask", seq, seq)
	g1 := param(g, r, "ln1.g", 0.1, dim)
	be1 := param(g, r, "ln1.b", 0.1, dim)
	wqkv := param(g, r, "wqkv", 1/math.Sqrt(float64(dim)), dim, 3*dim)
	wo := param(g, r, "wo", 1/math.Sqrt(float64(dim)), dim, dim)
	g2 := param(g, r, "ln2.g", 0.1, dim)
	be2 := param(g, r, "ln2.b", 0.1, dim)
	wup := param(g, r, "wup", 1/math.Sqrt(float64(dim)), dim, 4*dim)
	bup := param(g, r, "bup", 0.1, 4*dim)
	wdown := param(g, r, "wdown", 1/math.Sqrt(float64(4*dim)), 4*dim, dim)
	whead := param(g, r, "whead", 1/math.Sqrt(float64(dim)), dim, classes)
	var err error
	must := func(n *gorgonia.Node, e error) *gorgonia.Node {
		if err == nil && e != nil {
			err = e
		}
		return n
	}
	layerNorm := func(x, gamma, beta *gorgonia.Node) *gorgonia.Node {
		mu := must(gorgonia.Mean(x, 1))
		xc := must(gorgonia.BroadcastSub(x, mu, nil, []byte{1}))
		variance := must(gorgonia.Mean(must(gorgonia.Square(xc)), 1))
		std := must(gorgonia.Sqrt(must(gorgonia.Add(variance, scalar(g, 1e-5)))))
		xn := must(gorgonia.BroadcastHadamardDiv(xc, std, nil, []byte{1}))
		return must(gorgonia.BroadcastAdd(must(gorgonia.BroadcastHadamardProd(xn, gamma, nil, []byte{0})), beta, nil,
			[]byte{0}))
	}
	splitHeads := func(t *gorgonia.Node) *gorgonia.Node { // [tokens, dim] -> [batch*heads, seq, hd]
		t = must(gorgonia.Reshape(t, tensor.Shape{batch, seq, heads, hd}))
		t = must(gorgonia.Transpose(t, 0, 2, 1, 3))
		return must(gorgonia.Reshape(t, tensor.Shape{batch * heads, seq, hd}))
	}
	h := layerNorm(x, g1, be1)
	qkv := must(gorgonia.Mul(h, wqkv))
	q := splitHeads(must(gorgonia.Slice(qkv, nil, gorgonia.S(0, dim))))
	k := splitHeads(must(gorgonia.Slice(qkv, nil, gorgonia.S(dim, 2*dim))))
	v := splitHeads(must(gorgonia.Slice(qkv, nil, gorgonia.S(2*dim, 3*dim))))
	scores := must(gorgonia.BatchedMatMul(q, k, false, true))
	scores = must(gorgonia.HadamardProd(scores, scalar(g, float32(1/math.Sqrt(float64(hd))))))
	scores = must(gorgonia.BroadcastAdd(scores, must(gorgonia.Reshape(mask, tensor.Shape{1, seq, seq})), nil,
		[]byte{0}))
	probs := must(gorgonia.SoftMax(scores))
	ctx := must(gorgonia.BatchedMatMul(probs, v))
	ctx = must(gorgonia.Reshape(ctx, tensor.Shape{batch, heads, seq, hd}))
	ctx = must(gorgonia.Transpose(ctx, 0, 2, 1, 3))
	ctx = must(gorgonia.Reshape(ctx, tensor.Shape{tokens, dim}))
	x1 := must(gorgonia.Add(x, must(gorgonia.Mul(ctx, wo))))
	u := must(gorgonia.BroadcastAdd(must(gorgonia.Mul(layerNorm(x1, g2, be2), wup)), bup, nil, []byte{0}))
	// GELU, tanh form: 0.5 u (1 + tanh(√(2/π) (u + 0.044715 u³)))
	cube := must(gorgonia.HadamardProd(must(gorgonia.Square(u)), u))
	inner := must(gorgonia.HadamardProd(must(gorgonia.Add(u, must(gorgonia.HadamardProd(cube, scalar(g, 0.044715))))),
		scalar(g, float32(math.Sqrt(2/math.Pi)))))
	gelu := must(gorgonia.HadamardProd(must(gorgonia.HadamardProd(u, scalar(g, 0.5))),
		must(gorgonia.Add(must(gorgonia.Tanh(inner)), scalar(g, 1)))))
	x2 := must(gorgonia.Add(x1, must(gorgonia.Mul(gelu, wdown))))
	logits := must(gorgonia.Mul(x2, whead))
	mx := must(gorgonia.Max(logits, 1))
	shifted := must(gorgonia.BroadcastSub(logits, mx, nil, []byte{1}))
	lse := must(gorgonia.Log(must(gorgonia.Sum(must(gorgonia.Exp(shifted)), 1))))
	logp := must(gorgonia.BroadcastSub(shifted, lse, nil, []byte{1}))
	loss := must(gorgonia.Neg(must(gorgonia.Mean(must(gorgonia.Sum(must(gorgonia.HadamardProd(logp, y)), 1))))))
	if err != nil {
		return nil, err
	}
	return finish(&userGraph{G: g, Loss: loss,
		Params: []*gorgonia.Node{g1, be1, wqkv, wo, g2, be2, wup, bup, wdown, whead},
		Inputs: []*gorgonia.Node{x, y, mask}})
}
