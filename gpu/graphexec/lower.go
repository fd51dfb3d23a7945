package graphexec

import (
	"errors"
	"fmt"
	"math"

	"github.com/gmlake/gmlake/gpu"
)

// exec runs op node i (described by desc) into out from its inputs (nil for integer inputs).
func (m *Machine) exec(i int, desc Desc, out *gpu.Tensor, in []*gpu.Tensor) error {
	d := m.dev
	switch desc.Kind {
	case KindAdd, KindAddBias:
		return d.Add(out, in[0], in[1])
	case KindMul:
		return d.Mul(out, in[0], in[1])
	case KindScale:
		return d.Scale(out, in[0], desc.C)
	case KindSumRows:
		return d.Sum(out, in[0], 0)
	case KindActivation:
		return m.activation(desc, out, in)
	case KindNorm:
		return m.norm(desc, out, in)
	case KindRoPE:
		return m.rope(desc, out, in[0])
	case KindEmbedding:
		return m.embedding(i, desc, out, in)
	case KindPositions:
		return m.positions(desc, out, in[0])
	case KindCrossEntropy:
		return m.crossEntropy(i, desc, out, in)
	case KindAttention:
		return m.attention(desc, out, in)
	}
	if lower, ok := lowerings[desc.Kind]; ok {
		return lower(m, i, desc, out, in)
	}
	if isStandard(desc.Kind) {
		return m.standard(i, desc, out, in)
	}
	return fmt.Errorf("%w: kind %v", ErrUnsupported, desc.Kind)
}

func (m *Machine) activation(desc Desc, out *gpu.Tensor, in []*gpu.Tensor) error {
	d := m.dev
	switch {
	case desc.Name == "gelu_new" && !desc.Backward:
		return d.GELU(out, in[0])
	case desc.Name == "gelu_new":
		return d.GELUBackward(out, in[0], in[1])
	case !desc.Backward:
		return d.SiLU(out, in[0])
	default:
		return d.SiLUBackward(out, in[0], in[1])
	}
}

// norm: part 0 is the forward pass (x, γ[, β]); part 1 dx from (x, γ, dy); part 2 dγ from (x, dy).
// The backward parts recompute the row statistics from x, as the CPU ops do.
func (m *Machine) norm(desc Desc, out *gpu.Tensor, in []*gpu.Tensor) (err error) {
	d, x, eps := m.dev, in[0], float32(desc.Eps)
	if desc.Part == 0 {
		if desc.RMS {
			return d.RMSNorm(out, nil, x, in[1], eps)
		}
		return d.LayerNorm(out, nil, nil, x, in[1], in[2], eps)
	}
	rows := x.Shape()[0]
	rstd, err := d.NewTensor(rows)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, rstd.Free()) }()
	var mean *gpu.Tensor
	if !desc.RMS {
		if mean, err = d.NewTensor(rows); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, mean.Free()) }()
	}
	if err := d.NormStats(mean, rstd, x, eps, desc.RMS); err != nil {
		return err
	}
	switch {
	case desc.Part == 1 && desc.RMS:
		return d.RMSNormBackward(out, nil, in[2], x, rstd, in[1])
	case desc.Part == 1:
		return d.LayerNormBackward(out, nil, nil, in[2], x, mean, rstd, in[1])
	case desc.RMS:
		return d.RMSNormBackward(nil, out, in[1], x, rstd, nil)
	default:
		return d.LayerNormBackward(nil, out, nil, in[1], x, mean, rstd, nil)
	}
}

// rope rotates x [tokens, heads*headDim]: rows of headDim, token t at position t % seq.
func (m *Machine) rope(desc Desc, out, x *gpu.Tensor) error {
	cos, sin, err := m.ropeTables(desc)
	if err != nil {
		return err
	}
	rows := x.Len() / desc.HeadDim
	xv, err := x.Reshape(rows, desc.HeadDim)
	if err != nil {
		return err
	}
	ov, err := out.Reshape(rows, desc.HeadDim)
	if err != nil {
		return err
	}
	if desc.Backward {
		return m.dev.RoPEBackward(ov, xv, cos, sin, desc.Heads)
	}
	return m.dev.RoPE(ov, xv, cos, sin, desc.Heads)
}

// ropeTables are the (seq, headDim) cos and sin tables, computed as models/ops computes them (in
// float32, halves duplicated as Hugging Face's emb = cat(freqs, freqs)) and cached per shape.
func (m *Machine) ropeTables(desc Desc) (cos, sin *gpu.Tensor, err error) {
	key := fmt.Sprintf("%d/%d/%g", desc.Seq, desc.HeadDim, desc.Theta)
	if t, ok := m.tables[key]; ok {
		return t[0], t[1], nil
	}
	half := desc.HeadDim / 2
	hc, hs := make([]float32, desc.Seq*desc.HeadDim), make([]float32, desc.Seq*desc.HeadDim)
	for i := range half {
		exp := float32(2*i) / float32(desc.HeadDim)
		inv := 1 / float32(math.Pow(desc.Theta, float64(exp)))
		for s := range desc.Seq {
			angle := float64(float32(s) * inv)
			c, sn := float32(math.Cos(angle)), float32(math.Sin(angle))
			hc[s*desc.HeadDim+i], hc[s*desc.HeadDim+half+i] = c, c
			hs[s*desc.HeadDim+i], hs[s*desc.HeadDim+half+i] = sn, sn
		}
	}
	if cos, err = m.dev.FromHost(hc, desc.Seq, desc.HeadDim); err != nil {
		return nil, nil, err
	}
	if sin, err = m.dev.FromHost(hs, desc.Seq, desc.HeadDim); err != nil {
		cos.Free()
		return nil, nil, err
	}
	m.tables[key] = [2]*gpu.Tensor{cos, sin}
	return cos, sin, nil
}

// embedding: forward (ids, table) gathers rows; the gradient (ids, dy) scatter-adds into zeros.
func (m *Machine) embedding(i int, desc Desc, out *gpu.Tensor, in []*gpu.Tensor) (err error) {
	ids, err := m.ids(m.inputs[i][0], toInt32, int32(desc.Rows))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, ids.Free()) }()
	if !desc.Grad {
		return m.dev.EmbeddingGather(out, in[1], ids)
	}
	if err := m.dev.Zero(out); err != nil {
		return err
	}
	return m.dev.EmbeddingScatterAdd(out, ids, in[1])
}

// positions: token b*seq+s reads row s of the table; the gradient sums over the batch.
func (m *Machine) positions(desc Desc, out, x *gpu.Tensor) error {
	key := fmt.Sprintf("%d/%d", desc.Batch, desc.Seq)
	ids, ok := m.posIDs[key]
	if !ok {
		pos := make([]int32, desc.Batch*desc.Seq)
		for t := range pos {
			pos[t] = int32(t % desc.Seq)
		}
		var err error
		if ids, err = m.dev.NewIds(pos, int32(desc.Rows)); err != nil {
			return err
		}
		m.posIDs[key] = ids
	}
	if !desc.Grad {
		return m.dev.EmbeddingGather(out, x, ids)
	}
	if err := m.dev.Zero(out); err != nil {
		return err
	}
	return m.dev.EmbeddingScatterAdd(out, ids, x)
}

// crossEntropy: the mean over batch*(seq-1) positions of the next-token loss, labels being the ids
// shifted left by one (the last position of each sequence predicts nothing). Inputs (logits, ids)
// or, for the gradient, (logits, ids, dloss).
func (m *Machine) crossEntropy(i int, desc Desc, out *gpu.Tensor, in []*gpu.Tensor) (err error) {
	d, logits := m.dev, in[0]
	rows, vocab := logits.Shape()[0], logits.Shape()[1]
	shift := func(ids []int) []int32 {
		t := make([]int32, len(ids))
		for r := range t {
			if r%desc.Seq == desc.Seq-1 || r+1 >= len(ids) {
				t[r] = gpu.IgnoreIndex
			} else {
				t[r] = int32(min(max(ids[r+1], -1), math.MaxInt32))
			}
		}
		return t
	}
	targets, err := m.ids(m.inputs[i][1], shift, int32(vocab), gpu.IgnoreIndex)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, targets.Free()) }()
	loss, err := d.NewTensor(rows)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, loss.Free()) }()
	lse, err := d.NewTensor(rows)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, lse.Free()) }()
	if err := d.CrossEntropy(loss, lse, logits, targets); err != nil {
		return err
	}
	scale := float32(1 / float64(desc.Batch*(desc.Seq-1)))
	if desc.Grad {
		return d.CrossEntropyBackward(out, logits, lse, targets, in[2], scale)
	}
	if err := d.Sum(out, loss, 0); err != nil {
		return err
	}
	return d.Scale(out, out, scale)
}
