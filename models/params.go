package models

import "fmt"

// initKind says how InitWeights fills a parameter.
type initKind int

const (
	initNormal       initKind = iota // N(0, 0.02²), Hugging Face's initializer_range
	initOnes                         // norm gains
	initZeros                        // biases
	initKaiming                      // convolutions: N(0, 2/fan-out)
	initUniformFanIn                 // linear head: U(±1/√fan-in)
)

// paramSpec is one named parameter of an architecture, in Hugging Face naming.
type paramSpec struct {
	name  string
	shape []int
	init  initKind
}

// paramSpecs lists every base parameter of cfg in a stable order.
func paramSpecs(cfg Config) []paramSpec {
	switch cfg.Arch {
	case ArchGPT2:
		return gpt2Specs(cfg)
	case ArchLlama:
		return llamaSpecs(cfg)
	}
	return nil
}

func gpt2Specs(c Config) []paramSpec {
	h, ff := c.Hidden, c.Intermediate
	specs := []paramSpec{
		{"transformer.wte.weight", []int{c.Vocab, h}, initNormal},
		{"transformer.wpe.weight", []int{c.MaxPositions, h}, initNormal},
	}
	for i := 0; i < c.Layers; i++ {
		p := fmt.Sprintf("transformer.h.%d.", i)
		specs = append(specs,
			paramSpec{p + "ln_1.weight", []int{h}, initOnes},
			paramSpec{p + "ln_1.bias", []int{h}, initZeros},
			paramSpec{p + "attn.c_attn.weight", []int{h, 3 * h}, initNormal},
			paramSpec{p + "attn.c_attn.bias", []int{3 * h}, initZeros},
			paramSpec{p + "attn.c_proj.weight", []int{h, h}, initNormal},
			paramSpec{p + "attn.c_proj.bias", []int{h}, initZeros},
			paramSpec{p + "ln_2.weight", []int{h}, initOnes},
			paramSpec{p + "ln_2.bias", []int{h}, initZeros},
			paramSpec{p + "mlp.c_fc.weight", []int{h, ff}, initNormal},
			paramSpec{p + "mlp.c_fc.bias", []int{ff}, initZeros},
			paramSpec{p + "mlp.c_proj.weight", []int{ff, h}, initNormal},
			paramSpec{p + "mlp.c_proj.bias", []int{h}, initZeros},
		)
	}
	specs = append(specs,
		paramSpec{"transformer.ln_f.weight", []int{h}, initOnes},
		paramSpec{"transformer.ln_f.bias", []int{h}, initZeros})
	if !c.TiedEmbeddings {
		specs = append(specs, paramSpec{"lm_head.weight", []int{c.Vocab, h}, initNormal})
	}
	return specs
}

func llamaSpecs(c Config) []paramSpec {
	h, ff := c.Hidden, c.Intermediate
	q, kv := c.Heads*c.HeadSize(), c.KVHeads*c.HeadSize()
	specs := []paramSpec{{"model.embed_tokens.weight", []int{c.Vocab, h}, initNormal}}
	for i := 0; i < c.Layers; i++ {
		p := fmt.Sprintf("model.layers.%d.", i)
		specs = append(specs,
			paramSpec{p + "input_layernorm.weight", []int{h}, initOnes},
			paramSpec{p + "self_attn.q_proj.weight", []int{q, h}, initNormal},
			paramSpec{p + "self_attn.k_proj.weight", []int{kv, h}, initNormal},
			paramSpec{p + "self_attn.v_proj.weight", []int{kv, h}, initNormal},
			paramSpec{p + "self_attn.o_proj.weight", []int{h, q}, initNormal},
			paramSpec{p + "post_attention_layernorm.weight", []int{h}, initOnes},
			paramSpec{p + "mlp.gate_proj.weight", []int{ff, h}, initNormal},
			paramSpec{p + "mlp.up_proj.weight", []int{ff, h}, initNormal},
			paramSpec{p + "mlp.down_proj.weight", []int{h, ff}, initNormal},
		)
	}
	specs = append(specs, paramSpec{"model.norm.weight", []int{h}, initOnes})
	if !c.TiedEmbeddings {
		specs = append(specs, paramSpec{"lm_head.weight", []int{c.Vocab, h}, initNormal})
	}
	return specs
}

// ParamCount is the number of base parameters of cfg (tied embeddings counted once).
func (c Config) ParamCount() int64 {
	var n int64
	for _, s := range paramSpecs(c) {
		m := int64(1)
		for _, d := range s.shape {
			m *= int64(d)
		}
		n += m
	}
	return n
}
