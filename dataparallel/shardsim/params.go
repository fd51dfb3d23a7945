package shardsim

import (
	"fmt"

	"github.com/gmlake/gmlake/models"
)

// Element sizes: bf16 working parameters, gradients and activations; fp32 master weights,
// optimizer moments, norm statistics and the loss's upcast logits (mixed precision as DeepSpeed's
// bf16 mode and PyTorch autocast run it).
const (
	half   = 2
	single = 4
)

// param is one model parameter as the simulation sees it.
type param struct {
	name      string
	elems     int64
	trainable bool
	flat      int // index among the trainable parameters (the ZeRO layout order), -1 if frozen
}

// model lists a configuration's parameters (models' own names and shapes, plus LoRA adapters)
// and gives each transformer projection its index, for the op lists.
type model struct {
	cfg    models.Config
	params []param
	index  map[string]int
	lora   bool
	rank   int

	trainable int // trainable parameters so far (the next one's layout index)
}

// loraTargets are the projections adapted in LoRA mode: the attention projections PEFT targets by
// default (GPT-2's fused c_attn; Llama's q and v).
func loraTargets(arch string) map[string]bool {
	if arch == models.ArchLlama {
		return map[string]bool{"self_attn.q_proj": true, "self_attn.v_proj": true}
	}
	return map[string]bool{"attn.c_attn": true}
}

func newModel(cfg models.Config, lora bool, rank int) *model {
	m := &model{cfg: cfg, index: make(map[string]int), lora: lora, rank: rank}
	h, ff := int64(cfg.Hidden), int64(cfg.Intermediate)
	v := int64(cfg.Vocab)
	q, kv := int64(cfg.Heads*cfg.HeadSize()), int64(cfg.KVHeads*cfg.HeadSize())
	targets := loraTargets(cfg.Arch)
	// proj adds a projection's weight (and bias) and, in LoRA mode when targeted, its adapters.
	proj := func(prefix, module string, in, out int64, bias bool) {
		m.add(prefix+module+".weight", in*out, !lora)
		if bias {
			m.add(prefix+module+".bias", out, !lora)
		}
		if lora && targets[module] {
			m.add(prefix+module+".lora_A.weight", in*int64(rank), true)
			m.add(prefix+module+".lora_B.weight", int64(rank)*out, true)
		}
	}
	switch cfg.Arch {
	case models.ArchGPT2:
		m.add("transformer.wte.weight", v*h, !lora)
		m.add("transformer.wpe.weight", int64(cfg.MaxPositions)*h, !lora)
		for i := range cfg.Layers {
			p := fmt.Sprintf("transformer.h.%d.", i)
			m.add(p+"ln_1.weight", h, !lora)
			m.add(p+"ln_1.bias", h, !lora)
			proj(p, "attn.c_attn", h, 3*h, true)
			proj(p, "attn.c_proj", h, h, true)
			m.add(p+"ln_2.weight", h, !lora)
			m.add(p+"ln_2.bias", h, !lora)
			proj(p, "mlp.c_fc", h, ff, true)
			proj(p, "mlp.c_proj", ff, h, true)
		}
		m.add("transformer.ln_f.weight", h, !lora)
		m.add("transformer.ln_f.bias", h, !lora)
	case models.ArchLlama:
		m.add("model.embed_tokens.weight", v*h, !lora)
		for i := range cfg.Layers {
			p := fmt.Sprintf("model.layers.%d.", i)
			m.add(p+"input_layernorm.weight", h, !lora)
			proj(p, "self_attn.q_proj", h, q, false)
			proj(p, "self_attn.k_proj", h, kv, false)
			proj(p, "self_attn.v_proj", h, kv, false)
			proj(p, "self_attn.o_proj", q, h, false)
			m.add(p+"post_attention_layernorm.weight", h, !lora)
			proj(p, "mlp.gate_proj", h, ff, false)
			proj(p, "mlp.up_proj", h, ff, false)
			proj(p, "mlp.down_proj", ff, h, false)
		}
		m.add("model.norm.weight", h, !lora)
	}
	if !cfg.TiedEmbeddings {
		m.add("lm_head.weight", v*h, !lora)
	}
	return m
}

func (m *model) add(name string, elems int64, trainable bool) {
	p := param{name: name, elems: elems, trainable: trainable, flat: -1}
	if trainable {
		p.flat = m.trainable
		m.trainable++
	}
	m.index[name] = len(m.params)
	m.params = append(m.params, p)
}

// trainableSizes are the trainable parameters' sizes in layout order.
func (m *model) trainableSizes() []int {
	var out []int
	for _, p := range m.params {
		if p.trainable {
			out = append(out, int(p.elems))
		}
	}
	return out
}

// frozenElems is the number of elements of frozen parameters.
func (m *model) frozenElems() int64 {
	var n int64
	for _, p := range m.params {
		if !p.trainable {
			n += p.elems
		}
	}
	return n
}

// lookup returns the index of a parameter, -1 when the model has none of that name (a bias the
// architecture lacks, an adapter of an untargeted projection).
func (m *model) lookup(name string) int {
	if i, ok := m.index[name]; ok {
		return i
	}
	return -1
}
