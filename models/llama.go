package models

import (
	"fmt"

	"github.com/gmlake/gmlake/models/ops"
	"gorgonia.org/gorgonia"
)

// Llama (Hugging Face LlamaForCausalLM):
//
//	x = embed_tokens[ids]
//	x = x + o_proj(attn(rope(q_proj(n)), rope(k_proj(n)), v_proj(n))),  n = input_layernorm(x)
//	x = x + down_proj(silu(gate_proj(n)) ⊙ up_proj(n)),                  n = post_attention_layernorm(x)
//	logits = norm(x)·lm_headᵀ (or embed_tokensᵀ when tied)
//
// Projections are nn.Linear, weights stored [out, in]; attention is grouped-query
// with num_key_value_heads key/value heads.

func (b *builder) llamaBlock(i int, x *gorgonia.Node) (*gorgonia.Node, error) {
	p := fmt.Sprintf("model.layers.%d.", i)
	c := b.cfg
	n, err := ops.RMSNorm(x, b.nodes[p+"input_layernorm.weight"], c.Eps)
	if err != nil {
		return nil, err
	}
	q, err := b.project(n, p+"self_attn.q_proj", outIn)
	if err != nil {
		return nil, err
	}
	k, err := b.project(n, p+"self_attn.k_proj", outIn)
	if err != nil {
		return nil, err
	}
	v, err := b.project(n, p+"self_attn.v_proj", outIn)
	if err != nil {
		return nil, err
	}
	if q, err = ops.RoPE(q, b.opts.Seq, c.Heads, c.HeadSize(), c.RopeTheta); err != nil {
		return nil, err
	}
	if k, err = ops.RoPE(k, b.opts.Seq, c.KVHeads, c.HeadSize(), c.RopeTheta); err != nil {
		return nil, err
	}
	shape := ops.AttentionShape{Batch: b.opts.Batch, Seq: b.opts.Seq, Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.HeadSize()}
	probs, err := ops.AttentionProbs(q, k, shape)
	if err != nil {
		return nil, err
	}
	ctx, err := ops.AttentionContext(probs, v, shape)
	if err != nil {
		return nil, err
	}
	attn, err := b.project(ctx, p+"self_attn.o_proj", outIn)
	if err != nil {
		return nil, err
	}
	if x, err = ops.Add(x, attn); err != nil {
		return nil, err
	}
	if n, err = ops.RMSNorm(x, b.nodes[p+"post_attention_layernorm.weight"], c.Eps); err != nil {
		return nil, err
	}
	gate, err := b.project(n, p+"mlp.gate_proj", outIn)
	if err != nil {
		return nil, err
	}
	up, err := b.project(n, p+"mlp.up_proj", outIn)
	if err != nil {
		return nil, err
	}
	if gate, err = b.activate(gate); err != nil {
		return nil, err
	}
	h, err := ops.Mul(gate, up)
	if err != nil {
		return nil, err
	}
	if h, err = b.project(h, p+"mlp.down_proj", outIn); err != nil {
		return nil, err
	}
	return ops.Add(x, h)
}
