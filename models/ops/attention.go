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
// In packed mode (GPT-2's fused c_attn) q, k and v are the column blocks of
// one [Batch*Seq, (Heads+2·KVHeads)·HeadDim] matrix qkv, passed as the single
// q/k/v input, and the gradients with respect to qkv come as two packed
// matrices (dq|dk|0 from the probabilities, 0|0|dv from the context) that
// Gorgonia sums.
//
// The probabilities P are the one saved activation, as in PyTorch's eager
// attention. Each (batch, head) pair is a strided BLAS matrix product over
// the token-major layout, so no transposed or split copies are made.

// AttentionShape fixes the dimensions of one attention layer.
type AttentionShape struct {
	Batch, Seq, Heads, KVHeads, HeadDim int
	Packed                              bool // q, k, v are column blocks of one qkv matrix
}

func (a AttentionShape) String() string {
	return fmt.Sprintf("b=%d,s=%d,h=%d,kv=%d,d=%d,packed=%t", a.Batch, a.Seq, a.Heads, a.KVHeads, a.HeadDim, a.Packed)
}

func (a AttentionShape) qWidth() int      { return a.Heads * a.HeadDim }
func (a AttentionShape) kvWidth() int     { return a.KVHeads * a.HeadDim }
func (a AttentionShape) packedWidth() int { return a.qWidth() + 2*a.kvWidth() }
func (a AttentionShape) kvHead(h int) int { return h / (a.Heads / a.KVHeads) }
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

// block views the [Seq, HeadDim] matrix at column col of sequence b in a
// token-major matrix of the given width.
func (a AttentionShape) block(buf []float32, b, col, width int) blas32.General {
	return blas32.General{Rows: a.Seq, Cols: a.HeadDim, Stride: width, Data: buf[b*a.Seq*width+col:]}
}

// q, k and v view one head of the query, key or value matrix (or of the
// packed qkv matrix, or of a gradient laid out like them).
func (a AttentionShape) q(buf []float32, b, h int) blas32.General {
	if a.Packed {
		return a.block(buf, b, h*a.HeadDim, a.packedWidth())
	}
	return a.block(buf, b, h*a.HeadDim, a.qWidth())
}

func (a AttentionShape) k(buf []float32, b, kh int) blas32.General {
	if a.Packed {
		return a.block(buf, b, a.qWidth()+kh*a.HeadDim, a.packedWidth())
	}
	return a.block(buf, b, kh*a.HeadDim, a.kvWidth())
}

func (a AttentionShape) v(buf []float32, b, kh int) blas32.General {
	if a.Packed {
		return a.block(buf, b, a.qWidth()+a.kvWidth()+kh*a.HeadDim, a.packedWidth())
	}
	return a.block(buf, b, kh*a.HeadDim, a.kvWidth())
}

// ctx views one head of the context (or its gradient), [Batch*Seq, Heads*HeadDim].
func (a AttentionShape) ctx(buf []float32, b, h int) blas32.General {
	return a.block(buf, b, h*a.HeadDim, a.qWidth())
}

// square views P[b, h] as a [Seq, Seq] matrix.
func (a AttentionShape) square(buf []float32, b, h int) blas32.General {
	n := a.Seq * a.Seq
	return blas32.General{Rows: a.Seq, Cols: a.Seq, Stride: a.Seq, Data: buf[(b*a.Heads+h)*n : (b*a.Heads+h+1)*n]}
}

// attnPart says which attention computation a kernel performs.
type attnPart int

const (
	attnProbs        attnPart = iota // (q, k) or (qkv) -> P
	attnContext                      // (P, v) -> ctx
	attnContextGradP                 // (dctx, v) -> dP
	attnContextGradV                 // (P, dctx) -> dv (packed: 0|0|dv)
	attnSoftmaxGrad                  // (P, dP) -> dS, the gradient of the scaled scores
	attnScoresGradQ                  // (dS, k) -> dq (packed: (dS, qkv) -> dq|dk|0)
	attnScoresGradK                  // (dS, q) -> dk
)

type attention struct {
	shape AttentionShape
	part  attnPart
}

// AttentionProbs computes causal attention probabilities [Batch, Heads, Seq,
// Seq]. In packed mode pass the qkv matrix as q and nil as k.
func AttentionProbs(q, k *gorgonia.Node, s AttentionShape) (*gorgonia.Node, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	if s.Packed {
		return apply(attention{s, attnProbs}, q)
	}
	return apply(attention{s, attnProbs}, q, k)
}

// AttentionContext weights the values v (packed mode: the qkv matrix) by the
// probabilities p.
func AttentionContext(p, v *gorgonia.Node, s AttentionShape) (*gorgonia.Node, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	return apply(attention{s, attnContext}, p, v)
}

func (k attention) String() string { return fmt.Sprintf("Attention{%v,part=%d}", k.shape, k.part) }

// shapes returns the input shapes the kernel expects and its output shape.
func (k attention) shapes() ([]tensor.Shape, tensor.Shape) {
	s := k.shape
	tokens := s.Batch * s.Seq
	q, kv, p := tensor.Shape{tokens, s.qWidth()}, tensor.Shape{tokens, s.kvWidth()}, s.probsShape()
	qIn, kIn, vIn := q, kv, kv
	if s.Packed {
		packed := tensor.Shape{tokens, s.packedWidth()}
		qIn, kIn, vIn = packed, packed, packed
	}
	switch k.part {
	case attnProbs:
		if s.Packed {
			return []tensor.Shape{qIn}, p
		}
		return []tensor.Shape{qIn, kIn}, p
	case attnContext:
		return []tensor.Shape{p, vIn}, q
	case attnContextGradP:
		return []tensor.Shape{q, vIn}, p
	case attnContextGradV:
		return []tensor.Shape{p, q}, vIn
	case attnSoftmaxGrad:
		return []tensor.Shape{p, p}, p
	case attnScoresGradQ:
		return []tensor.Shape{p, kIn}, qIn
	default: // attnScoresGradK
		return []tensor.Shape{p, qIn}, kIn
	}
}

func (k attention) signature() ([]argType, argType) {
	in, out := k.shapes()
	types := make([]argType, len(in))
	for i, s := range in {
		types[i] = f32(len(s))
	}
	return types, f32(len(out))
}

func (k attention) outShape(in []tensor.Shape) (tensor.Shape, error) {
	want, out := k.shapes()
	for i, w := range want {
		if !in[i].Eq(w) {
			return nil, fmt.Errorf("%w: %v: input %d has shape %v, want %v", ErrInput, k, i, in[i], w)
		}
	}
	return out.Clone(), nil
}

func (k attention) forward(out []float32, in []*tensor.Dense) error {
	s := k.shape
	x := data(in[0])
	y := x
	if len(in) > 1 {
		y = data(in[1])
	}
	if s.Packed && (k.part == attnContextGradV || k.part == attnScoresGradQ) {
		clear(out) // the blocks this kernel does not write are zero
	}
	group := s.Heads / s.KVHeads
	for b := 0; b < s.Batch; b++ {
		for h := 0; h < s.Heads; h++ {
			kh := s.kvHead(h)
			acc := beta(h%group != 0) // accumulate over a kv group's query heads
			switch k.part {
			case attnProbs: // P = softmax(scale·Q·Kᵀ)
				p := s.square(out, b, h)
				gemm(false, true, s.scale(), s.q(x, b, h), s.k(y, b, kh), 0, p)
				causalSoftmax(p.Data, s.Seq)
			case attnContext: // ctx = P·V
				gemm(false, false, 1, s.square(x, b, h), s.v(y, b, kh), 0, s.ctx(out, b, h))
			case attnContextGradP: // dP = dctx·Vᵀ
				gemm(false, true, 1, s.ctx(x, b, h), s.v(y, b, kh), 0, s.square(out, b, h))
			case attnContextGradV: // dV += Pᵀ·dctx
				gemm(true, false, 1, s.square(x, b, h), s.ctx(y, b, h), acc, s.v(out, b, kh))
			case attnSoftmaxGrad: // dS = P⊙(dP - rowsum(P⊙dP))
				softmaxGrad(s.square(out, b, h).Data, s.square(x, b, h).Data, s.square(y, b, h).Data, s.Seq)
			case attnScoresGradQ: // dq = scale·dS·K (packed: and dk)
				gemm(false, false, s.scale(), s.square(x, b, h), s.k(y, b, kh), 0, s.q(out, b, h))
				if s.Packed {
					gemm(true, false, s.scale(), s.square(x, b, h), s.q(y, b, h), acc, s.k(out, b, kh))
				}
			case attnScoresGradK: // dk += scale·dSᵀ·Q
				gemm(true, false, s.scale(), s.square(x, b, h), s.q(y, b, h), acc, s.k(out, b, kh))
			}
		}
	}
	return nil
}

func beta(accumulate bool) float32 {
	if accumulate {
		return 1
	}
	return 0
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
	in, _ := k.shapes()
	d := make([]bool, len(in))
	if k.part == attnProbs || k.part == attnContext {
		for i := range d {
			d[i] = true
		}
	}
	return d
}

func (k attention) grads(in gorgonia.Nodes, out, g *gorgonia.Node) (gorgonia.Nodes, error) {
	part := func(p attnPart, a, b *gorgonia.Node) (*gorgonia.Node, error) {
		return apply(attention{k.shape, p}, a, b)
	}
	switch k.part {
	case attnContext: // inputs (P, v), g = dctx
		dp, err := part(attnContextGradP, g, in[1])
		if err != nil {
			return nil, err
		}
		dv, err := part(attnContextGradV, in[0], g)
		return gorgonia.Nodes{dp, dv}, err
	case attnProbs: // inputs (q, k) or (qkv), out = P, g = dP
		ds, err := part(attnSoftmaxGrad, out, g)
		if err != nil {
			return nil, err
		}
		if k.shape.Packed {
			dqk, err := part(attnScoresGradQ, ds, in[0])
			return gorgonia.Nodes{dqk}, err
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
