package models

import (
	"fmt"

	"github.com/gmlake/gmlake/models/ops"
	"gorgonia.org/gorgonia"
)

// GPT-2 (Hugging Face GPT2LMHeadModel, pre-LN):
//
//	x = wte[ids] + wpe[0..Seq)
//	x = x + c_proj(attn(c_attn(ln_1(x))))
//	x = x + mlp.c_proj(gelu(c_fc(ln_2(x))))
//	logits = ln_f(x)·wteᵀ (tied) or ·lm_headᵀ
//
// Projections are Conv1D, weights stored [in, out]; c_attn produces q|k|v
// packed, which the attention ops read in place.

func (b *builder) gpt2Embed() (*gorgonia.Node, error) {
	tok, err := ops.Embedding(b.graph.IDs, b.nodes["transformer.wte.weight"])
	if err != nil {
		return nil, err
	}
	pos, err := ops.Positions(b.nodes["transformer.wpe.weight"], b.opts.Batch, b.opts.Seq)
	if err != nil {
		return nil, err
	}
	return ops.Add(tok, pos)
}

func (b *builder) gpt2Block(i int, x *gorgonia.Node) (*gorgonia.Node, error) {
	p := fmt.Sprintf("transformer.h.%d.", i)
	c := b.cfg
	h, err := ops.LayerNorm(x, b.nodes[p+"ln_1.weight"], b.nodes[p+"ln_1.bias"], c.Eps)
	if err != nil {
		return nil, err
	}
	qkv, err := b.project(h, p+"attn.c_attn", inOut)
	if err != nil {
		return nil, err
	}
	shape := ops.AttentionShape{Batch: b.opts.Batch, Seq: b.opts.Seq, Heads: c.Heads, KVHeads: c.KVHeads,
		HeadDim: c.HeadSize(), Packed: true}
	probs, err := ops.AttentionProbs(qkv, nil, shape)
	if err != nil {
		return nil, err
	}
	ctx, err := ops.AttentionContext(probs, qkv, shape)
	if err != nil {
		return nil, err
	}
	attn, err := b.project(ctx, p+"attn.c_proj", inOut)
	if err != nil {
		return nil, err
	}
	if x, err = ops.Add(x, attn); err != nil {
		return nil, err
	}
	if h, err = ops.LayerNorm(x, b.nodes[p+"ln_2.weight"], b.nodes[p+"ln_2.bias"], c.Eps); err != nil {
		return nil, err
	}
	if h, err = b.project(h, p+"mlp.c_fc", inOut); err != nil {
		return nil, err
	}
	if h, err = b.activate(h); err != nil {
		return nil, err
	}
	if h, err = b.project(h, p+"mlp.c_proj", inOut); err != nil {
		return nil, err
	}
	return ops.Add(x, h)
}

// activate applies the configured MLP nonlinearity.
func (b *builder) activate(x *gorgonia.Node) (*gorgonia.Node, error) {
	if b.cfg.Activation == "silu" {
		return ops.SiLU(x)
	}
	return ops.GELU(x) // gelu_new and gelu_pytorch_tanh are the same tanh approximation
}
