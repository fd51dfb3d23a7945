package graphexec

import (
	"math"

	"github.com/gmlake/gmlake/gpu"
)

// attnViews places the per-head [seq, headDim] blocks of the token-major q/k/v (or packed qkv) and
// context matrices, and the per-(batch, head) [seq, seq] probability matrices, as models/ops does.
type attnViews struct {
	a Attention
}

func (v attnViews) qWidth() int  { return v.a.Heads * v.a.HeadDim }
func (v attnViews) kvWidth() int { return v.a.KVHeads * v.a.HeadDim }

func (v attnViews) width(kind byte) int {
	if v.a.Packed && kind != 'c' {
		return v.qWidth() + 2*v.kvWidth()
	}
	if kind == 'k' || kind == 'v' {
		return v.kvWidth()
	}
	return v.qWidth()
}

// col is the first column of head h's block of q ('q'), k, v or the context ('c').
func (v attnViews) col(kind byte, h int) int {
	base := 0
	if v.a.Packed {
		switch kind {
		case 'k':
			base = v.qWidth()
		case 'v':
			base = v.qWidth() + v.kvWidth()
		}
	}
	return base + h*v.a.HeadDim
}

// block is head h of sequence b in the token-major matrix at ptr.
func (v attnViews) block(ptr uintptr, kind byte, b, h int) gpu.Matrix {
	w := v.width(kind)
	whole := gpu.Matrix{Ptr: ptr, Rows: v.a.Batch * v.a.Seq, Cols: w, Stride: w}
	return whole.At(b*v.a.Seq, v.col(kind, h), v.a.Seq, v.a.HeadDim)
}

// square is P[b, h] of probabilities at ptr.
func (v attnViews) square(ptr uintptr, b, h int) gpu.Matrix {
	s := v.a.Seq
	return gpu.Matrix{Ptr: ptr + uintptr((b*v.a.Heads+h)*s*s*4), Rows: s, Cols: s, Stride: s}
}

// attention runs one part of causal grouped-query attention (models/ops.attention). Each GEMM is
// batched over the kv heads: for sequence b and position g in the kv group, query head
// h = kh*group + g reads kv head kh, so consecutive batch items step group heads in q, the context
// and P, and one head in k and v. Parts that sum over a group's query heads accumulate (beta 1)
// from the group's second head on.
func (m *Machine) attention(desc Desc, out *gpu.Tensor, in []*gpu.Tensor) error {
	d, a := m.dev, desc.Attn
	v := attnViews{a}
	group := a.Heads / a.KVHeads
	scale := float32(1 / math.Sqrt(float64(a.HeadDim)))
	x := in[0].Ptr()
	y := x
	if len(in) > 1 {
		y = in[1].Ptr()
	}
	o := out.Ptr()
	dim, ss := a.HeadDim, a.Seq*a.Seq
	qStep, kStep, pStep := group*dim, dim, group*ss
	if a.Packed && (desc.Part == AttnContextGradV || desc.Part == AttnScoresGradQ) {
		if err := d.Zero(out); err != nil { // the blocks this part does not write are zero
			return err
		}
	}
	switch desc.Part {
	case AttnSoftmaxGrad: // dS = P ⊙ (dP − rowsum(P ⊙ dP)), over all rows at once
		return d.SoftmaxBackward(out, in[0], in[1], 1)
	}
	for b := range a.Batch {
		for g := range group {
			acc := float32(0)
			if g > 0 {
				acc = 1
			}
			var err error
			switch desc.Part {
			case AttnProbs: // scores = scale · q_h k_kh^T (softmax below)
				err = d.Gemm(false, true, scale, v.block(x, 'q', b, g), v.block(y, 'k', b, 0), 0, v.square(o, b, g),
					a.KVHeads, qStep, kStep, pStep)
			case AttnContext: // ctx_h = P_h v_kh
				err = d.Gemm(false, false, 1, v.square(x, b, g), v.block(y, 'v', b, 0), 0, v.block(o, 'c', b, g),
					a.KVHeads, pStep, kStep, qStep)
			case AttnContextGradP: // dP_h = dctx_h v_kh^T
				err = d.Gemm(false, true, 1, v.block(x, 'c', b, g), v.block(y, 'v', b, 0), 0, v.square(o, b, g),
					a.KVHeads, qStep, kStep, pStep)
			case AttnContextGradV: // dv_kh += P_h^T dctx_h
				err = d.Gemm(true, false, 1, v.square(x, b, g), v.block(y, 'c', b, g), acc, v.block(o, 'v', b, 0),
					a.KVHeads, pStep, qStep, kStep)
			case AttnScoresGradQ: // dq_h = scale · dS_h k_kh (packed: and dk_kh += scale · dS_h^T q_h)
				err = d.Gemm(false, false, scale, v.square(x, b, g), v.block(y, 'k', b, 0), 0, v.block(o, 'q', b, g),
					a.KVHeads, pStep, kStep, qStep)
				if err == nil && a.Packed {
					err = d.Gemm(true, false, scale, v.square(x, b, g), v.block(y, 'q', b, g), acc,
						v.block(o, 'k', b, 0), a.KVHeads, pStep, qStep, kStep)
				}
			case AttnScoresGradK: // dk_kh += scale · dS_h^T q_h
				err = d.Gemm(true, false, scale, v.square(x, b, g), v.block(y, 'q', b, g), acc, v.block(o, 'k', b, 0),
					a.KVHeads, pStep, qStep, kStep)
			}
			if err != nil {
				return err
			}
		}
	}
	if desc.Part == AttnProbs {
		return d.CausalSoftmax(out, out, 1)
	}
	return nil
}
