package ops

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas/blas32"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Causal grouped-query attention is split into two differentiable ops, as an
// eager framework would run it:
//
//	P   = AttentionProbs(q, k)   [Batch, Heads, Seq, Seq]: softmax over j ≤ i of scale·q_i·k_j, 0 for j > i
//	ctx = AttentionContext(P, v) [Batch*Seq, Heads*HeadDim]: Σ_j P_ij v_j
//
// q is [Batch*Seq, Heads*HeadDim]; k and v are [Batch*Seq, KVHeads*HeadDim];
// query head h reads key/value head h/(Heads/KVHeads) (Hugging Face repeat_kv).
// The probabilities P are the one saved activation, as in PyTorch's eager
// attention. Each (batch, head) pair is a strided BLAS matrix product over
// the token-major layout, so no transposed copies are made.

// AttentionShape fixes the dimensions of one attention layer.
type AttentionShape struct {
	Batch, Seq, Heads, KVHeads, HeadDim int
}

func (a AttentionShape) String() string {
	return fmt.Sprintf("b=%d,s=%d,h=%d,kv=%d,d=%d", a.Batch, a.Seq, a.Heads, a.KVHeads, a.HeadDim)
}

func (a AttentionShape) qWidth() int  { return a.Heads * a.HeadDim }
func (a AttentionShape) kvWidth() int { return a.KVHeads * a.HeadDim }
func (a AttentionShape) kvHead(h int) int {
	return h / (a.Heads / a.KVHeads)
}
func (a AttentionShape) probsShape() tensor.Shape {
	return tensor.Shape{a.Batch, a.Heads, a.Seq, a.Seq}
}
func (a AttentionShape) scale() float32 { return float32(1 / math.Sqrt(float64(a.HeadDim))) }

func (a AttentionShape) validate() error {
	if a.Batch <= 0 || a.Seq <= 0 || a.Heads <= 0 || a.KVHeads <= 0 || a.HeadDim <= 0 || a.Heads%a.KVHeads != 0 {
		return fmt.Errorf("%w: attention shape %v", ErrInput, a)
	}
	return nil
}

// tokens views rows of one sequence's head h in a token-major matrix of the given width.
func (a AttentionShape) head(buf []float32, b, h, width int) blas32.General {
	return blas32.General{Rows: a.Seq, Cols: a.HeadDim, Stride: width, Data: buf[b*a.Seq*width+h*a.HeadDim:]}
}

// square views P[b, h] as a [Seq, Seq] matrix.
func (a AttentionShape) square(buf []float32, b, h int) blas32.General {
	n := a.Seq * a.Seq
	return blas32.General{Rows: a.Seq, Cols: a.Seq, Stride: a.Seq, Data: buf[(b*a.Heads+h)*n : (b*a.Heads+h+1)*n]}
}

// attnPart says which attention computation a kernel performs.
type attnPart int

const (
	attnProbs        attnPart = iota // (q, k) -> P
	attnContext                      // (P, v) -> ctx
	attnContextGradP                 // (dctx, v) -> dP
	attnContextGradV                 // (P, dctx) -> dv
	attnSoftmaxGrad                  // (P, dP) -> dS, the gradient of the (scaled) scores
	attnScoresGradQ                  // (dS, k) -> dq
	attnScoresGradK                  // (dS, q) -> dk
)

type attention struct {
	shape AttentionShape
	part  attnPart
}

// AttentionProbs computes causal attention probabilities [Batch, Heads, Seq, Seq].
func AttentionProbs(q, k *gorgonia.Node, s AttentionShape) (*gorgonia.Node, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	return apply(attention{s, attnProbs}, q, k)
}

// AttentionContext weights the values v by the probabilities p.
func AttentionContext(p, v *gorgonia.Node, s AttentionShape) (*gorgonia.Node, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	return apply(attention{s, attnContext}, p, v)
}

func (k attention) String() string { return fmt.Sprintf("Attention{%v,part=%d}", k.shape, k.part) }

func (k attention) signature() ([]argType, argType) {
	switch k.part {
	case attnProbs, attnScoresGradQ, attnScoresGradK:
		if k.part == attnProbs {
			return []argType{f32(2), f32(2)}, f32(4)
		}
		return []argType{f32(4), f32(2)}, f32(2)
	case attnContext, attnContextGradV:
		if k.part == attnContext {
			return []argType{f32(4), f32(2)}, f32(2)
		}
		return []argType{f32(4), f32(2)}, f32(2)
	case attnContextGradP:
		return []argType{f32(2), f32(2)}, f32(4)
	}
	return []argType{f32(4), f32(4)}, f32(4) // attnSoftmaxGrad
}

// outShape checks every input against the layer's shape.
func (k attention) outShape(in []tensor.Shape) (tensor.Shape, error) {
	s := k.shape
	tokens := s.Batch * s.Seq
	q, kv, p := tensor.Shape{tokens, s.qWidth()}, tensor.Shape{tokens, s.kvWidth()}, s.probsShape()
	var want []tensor.Shape
	var out tensor.Shape
	switch k.part {
	case attnProbs:
		want, out = []tensor.Shape{q, kv}, p
	case attnContext:
		want, out = []tensor.Shape{p, kv}, q
	case attnContextGradP:
		want, out = []tensor.Shape{q, kv}, p
	case attnContextGradV:
		want, out = []tensor.Shape{p, q}, kv
	case attnSoftmaxGrad:
		want, out = []tensor.Shape{p, p}, p
	case attnScoresGradQ:
		want, out = []tensor.Shape{p, kv}, q
	case attnScoresGradK:
		want, out = []tensor.Shape{p, q}, kv
	}
	for i, w := range want {
		if !in[i].Eq(w) {
			return nil, fmt.Errorf("%w: %v: input %d has shape %v, want %v", ErrInput, k, i, in[i], w)
		}
	}
	return out, nil
}

func (k attention) forward(out []float32, in []*tensor.Dense) error {
	s := k.shape
	x, y := data(in[0]), data(in[1])
	qw, kvw := s.qWidth(), s.kvWidth()
	for b := 0; b < s.Batch; b++ {
		for h := 0; h < s.Heads; h++ {
			kh := s.kvHead(h)
			first := h%(s.Heads/s.KVHeads) == 0 // first query head of its kv group
			switch k.part {
			case attnProbs: // P = softmax(scale·Q·Kᵀ)
				p := s.square(out, b, h)
				gemm(false, true, s.scale(), s.head(x, b, h, qw), s.head(y, b, kh, kvw), 0, p)
				causalSoftmax(p.Data, s.Seq)
			case attnContext: // ctx = P·V
				gemm(false, false, 1, s.square(x, b, h), s.head(y, b, kh, kvw), 0, s.head(out, b, h, qw))
			case attnContextGradP: // dP = dctx·Vᵀ
				gemm(false, true, 1, s.head(x, b, h, qw), s.head(y, b, kh, kvw), 0, s.square(out, b, h))
			case attnContextGradV: // dV += Pᵀ·dctx over the group's query heads
				gemm(true, false, 1, s.square(x, b, h), s.head(y, b, h, qw), beta(first), s.head(out, b, kh, kvw))
			case attnSoftmaxGrad: // dS = P⊙(dP - rowsum(P⊙dP))
				softmaxGrad(s.square(out, b, h).Data, s.square(x, b, h).Data, s.square(y, b, h).Data, s.Seq)
			case attnScoresGradQ: // dq = scale·dS·K
				gemm(false, false, s.scale(), s.square(x, b, h), s.head(y, b, kh, kvw), 0, s.head(out, b, h, qw))
			case attnScoresGradK: // dk += scale·dSᵀ·Q over the group's query heads
				gemm(true, false, s.scale(), s.square(x, b, h), s.head(y, b, h, qw), beta(first), s.head(out, b, kh, kvw))
			}
		}
	}
	return nil
}

func beta(overwrite bool) float32 {
	if overwrite {
		return 0
	}
	return 1
}

// causalSoftmax turns each row i of the scores [n, n] into a softmax over
// columns 0..i and zeroes the columns after i.
func causalSoftmax(p []float32, n int) {
	for i := 0; i < n; i++ {
		row := p[i*n : (i+1)*n]
		max := row[0]
		for _, v := range row[1 : i+1] {
			if v > max {
				max = v
			}
		}
		var sum float64
		for j := 0; j <= i; j++ {
			e := math.Exp(float64(row[j] - max))
			row[j] = float32(e)
			sum += e
		}
		inv := 1 / sum
		for j := 0; j <= i; j++ {
			row[j] = float32(float64(row[j]) * inv)
		}
		clear(row[i+1:])
	}
}

func softmaxGrad(ds, p, dp []float32, n int) {
	for i := 0; i < n; i++ {
		pr, dr, out := p[i*n:(i+1)*n], dp[i*n:(i+1)*n], ds[i*n:(i+1)*n]
		var dot float64
		for j := range pr {
			dot += float64(pr[j]) * float64(dr[j])
		}
		for j := range pr {
			out[j] = float32(float64(pr[j]) * (float64(dr[j]) - dot))
		}
	}
}

func (k attention) diffWRT() []bool {
	d := k.part == attnProbs || k.part == attnContext
	return []bool{d, d}
}

func (k attention) grads(in gorgonia.Nodes, out, g *gorgonia.Node) (gorgonia.Nodes, error) {
	s := k.shape
	part := func(p attnPart, a, b *gorgonia.Node) (*gorgonia.Node, error) {
		return apply(attention{s, p}, a, b)
	}
	switch k.part {
	case attnContext: // inputs (P, v), g = dctx
		dp, err := part(attnContextGradP, g, in[1])
		if err != nil {
			return nil, err
		}
		dv, err := part(attnContextGradV, in[0], g)
		return gorgonia.Nodes{dp, dv}, err
	case attnProbs: // inputs (q, k), out = P, g = dP
		ds, err := part(attnSoftmaxGrad, out, g)
		if err != nil {
			return nil, err
		}
		dq, err := part(attnScoresGradQ, ds, in[1])
		if err != nil {
			return nil, err
		}
		dk, err := part(attnScoresGradK, ds, in[0])
		return gorgonia.Nodes{dq, dk}, err
	}
	return nil, fmt.Errorf("ops: %v is not differentiable", k)
}
