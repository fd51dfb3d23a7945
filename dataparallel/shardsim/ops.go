package shardsim

import "fmt"

// opSpec is one operation of a segment's forward pass and, implicitly, of its backward pass.
// Values are numbered: 0 is the segment's input, i+1 the output of op i; the last op's output is
// the segment's output.
type opSpec struct {
	name    string
	out     int64 // output bytes
	in      []int // values read
	saveIn  bool  // backward needs the inputs (a matmul whose weight is trained needs X for dW)
	saveOut bool  // backward needs the output (softmax-like ops)
	stats   int64 // bytes of extra tensors saved for backward (norm statistics, attention LSE)
	bwork   int64 // transient workspace of the backward (flash attention's fp32 dQ accumulator)
	params  []int // parameters used (indices into model.params)
}

// segment is a run of ops checkpointed as a unit: the embedding, one transformer block, or the head.
type segment struct {
	name    string
	ops     []opSpec
	inBytes int64
	gradIn  bool // the input needs a gradient (false for token ids)
}

// segmentBuilder appends ops and hands out their value numbers.
type segmentBuilder struct {
	m   *model
	t   int64 // tokens: micro-batch × sequence length
	seg segment
}

func (b *segmentBuilder) op(o opSpec) int {
	b.seg.ops = append(b.seg.ops, o)
	return len(b.seg.ops)
}

// params returns the indices of the named parameters the model has.
func (b *segmentBuilder) params(names ...string) []int {
	var out []int
	for _, n := range names {
		if i := b.m.lookup(n); i >= 0 {
			out = append(out, i)
		}
	}
	return out
}

// linear is y = x·W (+ bias), with LoRA adapters y += (x·A)·B when the model has them.
func (b *segmentBuilder) linear(prefix, module string, x int, out int64) int {
	w := b.params(prefix+module+".weight", prefix+module+".bias")
	trained := b.m.params[w[0]].trainable
	y := b.op(opSpec{name: module, out: b.t * out * half, in: []int{x}, saveIn: trained, params: w})
	if a := b.params(prefix + module + ".lora_A.weight"); len(a) > 0 {
		xa := b.op(opSpec{name: module + ".lora_A", out: b.t * int64(b.m.rank) * half, in: []int{x}, saveIn: true, params: a})
		xab := b.op(opSpec{name: module + ".lora_B", out: b.t * out * half, in: []int{xa}, saveIn: true,
			params: b.params(prefix + module + ".lora_B.weight")})
		y = b.op(opSpec{name: module + ".lora_add", out: b.t * out * half, in: []int{y, xab}})
	}
	return y
}

// norm is LayerNorm (mean and rstd saved) or RMSNorm (rstd saved), in bf16 with fp32 statistics.
func (b *segmentBuilder) norm(name string, x int, stats int64, params ...string) int {
	h := int64(b.m.cfg.Hidden)
	return b.op(opSpec{name: name, out: b.t * h * half, in: []int{x}, saveIn: true, stats: b.t * stats * single,
		params: b.params(params...)})
}

func (b *segmentBuilder) add(name string, x, y int) int {
	return b.op(opSpec{name: name, out: b.t * int64(b.m.cfg.Hidden) * half, in: []int{x, y}})
}

// attention is flash attention: saves its inputs, its output and the log-sum-exp per head and
// token; the backward accumulates dQ in fp32.
func (b *segmentBuilder) attention(in []int) int {
	c := b.m.cfg
	q := int64(c.Heads * c.HeadSize())
	return b.op(opSpec{name: "attention", out: b.t * q * half, in: in, saveIn: true, saveOut: true,
		stats: b.t * int64(c.Heads) * single, bwork: b.t * q * single})
}

func newBuilder(m *model, name string, tokens int64, in int64, gradIn bool) *segmentBuilder {
	return &segmentBuilder{m: m, t: tokens, seg: segment{name: name, inBytes: in, gradIn: gradIn}}
}

// blockSegment is transformer block i for batch sequences of seq tokens.
func blockSegment(m *model, i, batch, seq int) segment {
	t := int64(batch * seq)
	c := m.cfg
	h, ff := int64(c.Hidden), int64(c.Intermediate)
	b := newBuilder(m, fmt.Sprintf("block %d", i), t, t*h*half, true)
	switch c.Arch {
	case "llama":
		p := fmt.Sprintf("model.layers.%d.", i)
		q, kv := int64(c.Heads*c.HeadSize()), int64(c.KVHeads*c.HeadSize())
		n1 := b.norm("input_layernorm", 0, 1, p+"input_layernorm.weight")
		xq := b.linear(p, "self_attn.q_proj", n1, q)
		xk := b.linear(p, "self_attn.k_proj", n1, kv)
		xv := b.linear(p, "self_attn.v_proj", n1, kv)
		rq := b.op(opSpec{name: "rope_q", out: t * q * half, in: []int{xq}})
		rk := b.op(opSpec{name: "rope_k", out: t * kv * half, in: []int{xk}})
		att := b.attention([]int{rq, rk, xv})
		o := b.linear(p, "self_attn.o_proj", att, h)
		r1 := b.add("residual_1", 0, o)
		n2 := b.norm("post_attention_layernorm", r1, 1, p+"post_attention_layernorm.weight")
		gate := b.linear(p, "mlp.gate_proj", n2, ff)
		up := b.linear(p, "mlp.up_proj", n2, ff)
		act := b.op(opSpec{name: "silu_mul", out: t * ff * half, in: []int{gate, up}, saveIn: true})
		down := b.linear(p, "mlp.down_proj", act, h)
		b.add("residual_2", r1, down)
	default:
		p := fmt.Sprintf("transformer.h.%d.", i)
		n1 := b.norm("ln_1", 0, 2, p+"ln_1.weight", p+"ln_1.bias")
		qkv := b.linear(p, "attn.c_attn", n1, 3*h)
		att := b.attention([]int{qkv})
		o := b.linear(p, "attn.c_proj", att, h)
		r1 := b.add("residual_1", 0, o)
		n2 := b.norm("ln_2", r1, 2, p+"ln_2.weight", p+"ln_2.bias")
		fc := b.linear(p, "mlp.c_fc", n2, ff)
		act := b.op(opSpec{name: "gelu", out: t * ff * half, in: []int{fc}, saveIn: true})
		down := b.linear(p, "mlp.c_proj", act, h)
		b.add("residual_2", r1, down)
	}
	return b.seg
}

// embedSegment maps token ids (int64) to the first hidden state.
func embedSegment(m *model, batch, seq int) segment {
	t := int64(batch * seq)
	h := int64(m.cfg.Hidden)
	b := newBuilder(m, "embedding", t, t*8, false)
	if m.cfg.Arch == "llama" {
		b.op(opSpec{name: "embed_tokens", out: t * h * half, in: []int{0}, params: b.params("model.embed_tokens.weight")})
		return b.seg
	}
	tok := b.op(opSpec{name: "wte", out: t * h * half, in: []int{0}, params: b.params("transformer.wte.weight")})
	pos := b.op(opSpec{name: "wpe", out: t * h * half, in: []int{0}, params: b.params("transformer.wpe.weight")})
	b.add("embed_add", tok, pos)
	return b.seg
}

// headSegment is the final norm, the LM head and the cross-entropy loss: logits in bf16, upcast to
// fp32 for a log-softmax whose output the backward keeps, a scalar loss.
func headSegment(m *model, batch, seq int) segment {
	t := int64(batch * seq)
	c := m.cfg
	h, v := int64(c.Hidden), int64(c.Vocab)
	b := newBuilder(m, "head", t, t*h*half, true)
	var n int
	headWeight := "lm_head.weight"
	if c.Arch == "llama" {
		n = b.norm("norm", 0, 1, "model.norm.weight")
		if c.TiedEmbeddings {
			headWeight = "model.embed_tokens.weight"
		}
	} else {
		n = b.norm("ln_f", 0, 2, "transformer.ln_f.weight", "transformer.ln_f.bias")
		if c.TiedEmbeddings {
			headWeight = "transformer.wte.weight"
		}
	}
	w := b.params(headWeight)
	logits := b.op(opSpec{name: "lm_head", out: t * v * half, in: []int{n}, saveIn: m.params[w[0]].trainable, params: w})
	up := b.op(opSpec{name: "upcast", out: t * v * single, in: []int{logits}})
	lsm := b.op(opSpec{name: "log_softmax", out: t * v * single, in: []int{up}, saveOut: true})
	b.op(opSpec{name: "nll_loss", out: single, in: []int{lsm}})
	return b.seg
}
