package models

import (
	"fmt"
	"log/slog"
	"sort"

	"github.com/gmlake/gmlake/models/ops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Build creates the graph of w's model for one (Batch, Seq) shape: forward
// pass, loss and gradients. Its weight nodes bind the tensors of w itself, so
// graphs of several shapes share one set of weights (and of LoRA adapters,
// which the first Build that needs them adds to w).
func Build(w *Weights, opts BuildOptions) (*Graph, error) {
	if w == nil {
		return nil, fmt.Errorf("%w: nil weights", ErrInvalidConfig)
	}
	cfg := w.Config
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Batch <= 0 || opts.Seq < 2 || opts.Seq > cfg.MaxPositions {
		return nil, fmt.Errorf("%w: batch %d, seq %d (want batch > 0, 2 <= seq <= %d)", ErrBadShape, opts.Batch, opts.Seq, cfg.MaxPositions)
	}
	b := &builder{
		w: w, cfg: cfg, opts: opts,
		graph: &Graph{G: gorgonia.NewGraph(), Batch: opts.Batch, Seq: opts.Seq,
			BlockOf: make(map[int64]int), Forward: make(map[int64]bool)},
		nodes: make(map[string]*gorgonia.Node),
	}
	if err := b.bindWeights(); err != nil {
		return nil, err
	}
	if err := b.forward(); err != nil {
		return nil, err
	}
	for _, n := range b.graph.G.AllNodes() {
		b.graph.Forward[n.ID()] = true
	}
	grads, err := gorgonia.Grad(b.graph.Loss, b.graph.Params...)
	if err != nil {
		return nil, fmt.Errorf("models: gradients: %w", err)
	}
	b.graph.Grads = grads
	slog.Debug("models: built graph", "arch", cfg.Arch, "batch", opts.Batch, "seq", opts.Seq,
		"nodes", len(b.graph.G.AllNodes()), "params", len(b.graph.Params))
	return b.graph, nil
}

// builder carries the state of one Build call.
type builder struct {
	w     *Weights
	cfg   Config
	opts  BuildOptions
	graph *Graph
	nodes map[string]*gorgonia.Node // weight and adapter nodes by name
	lora  map[string]bool           // module paths that get adapters
}

// bindWeights makes an input node for every base weight (and adapter), bound
// to the tensor in w, and sorts them into Params and Frozen.
func (b *builder) bindWeights() error {
	g := b.graph.G
	var trainable []string
	for _, s := range paramSpecs(b.cfg) {
		t, ok := b.w.Tensors[s.name]
		if !ok || !sameShape(t.Shape(), s.shape) {
			return fmt.Errorf("%w: weight %s missing or not of shape %v", ErrBadCheckpoint, s.name, s.shape)
		}
		b.nodes[s.name] = bindTensor(g, s.name, t)
		if b.opts.LoRA == nil {
			trainable = append(trainable, s.name)
		} else {
			b.graph.Frozen = append(b.graph.Frozen, b.nodes[s.name])
		}
	}
	if b.opts.LoRA != nil {
		names, err := b.addAdapters()
		if err != nil {
			return err
		}
		trainable = names
	}
	sort.Strings(trainable)
	for _, name := range trainable {
		b.graph.Names = append(b.graph.Names, name)
		b.graph.Params = append(b.graph.Params, b.nodes[name])
	}
	ids := gorgonia.NewMatrix(g, tensor.Int, gorgonia.WithShape(b.opts.Batch, b.opts.Seq), gorgonia.WithName("input_ids"))
	b.graph.IDs = ids
	return nil
}

func bindTensor(g *gorgonia.ExprGraph, name string, t *tensor.Dense) *gorgonia.Node {
	return gorgonia.NewTensor(g, tensor.Float32, t.Dims(), gorgonia.WithShape(t.Shape()...),
		gorgonia.WithName(name), gorgonia.WithValue(t))
}

// forward builds embeddings, blocks, final norm, LM head and loss.
func (b *builder) forward() error {
	x, err := b.embed()
	if err != nil {
		return err
	}
	for i := 0; i < b.cfg.Layers; i++ {
		b.graph.BlockInputs = append(b.graph.BlockInputs, x)
		before := len(b.graph.G.AllNodes())
		if x, err = b.block(i, x); err != nil {
			return fmt.Errorf("models: block %d: %w", i, err)
		}
		for _, n := range b.graph.G.AllNodes()[before:] {
			if n.Op() != nil {
				b.graph.BlockOf[n.ID()] = i
			}
		}
	}
	logits, err := b.head(x)
	if err != nil {
		return err
	}
	if b.graph.Logits, err = gorgonia.Reshape(logits, tensor.Shape{b.opts.Batch, b.opts.Seq, b.cfg.Vocab}); err != nil {
		return fmt.Errorf("models: logits: %w", err)
	}
	b.graph.Loss, err = ops.CrossEntropy(logits, b.graph.IDs, b.opts.Batch, b.opts.Seq)
	return err
}

func (b *builder) embed() (*gorgonia.Node, error) {
	if b.cfg.Arch == ArchGPT2 {
		return b.gpt2Embed()
	}
	return ops.Embedding(b.graph.IDs, b.nodes["model.embed_tokens.weight"])
}

func (b *builder) block(i int, x *gorgonia.Node) (*gorgonia.Node, error) {
	if b.cfg.Arch == ArchGPT2 {
		return b.gpt2Block(i, x)
	}
	return b.llamaBlock(i, x)
}

// head applies the final norm and the LM head, giving logits [Batch*Seq, Vocab].
func (b *builder) head(x *gorgonia.Node) (*gorgonia.Node, error) {
	var h *gorgonia.Node
	var err error
	embedding := "model.embed_tokens.weight"
	if b.cfg.Arch == ArchGPT2 {
		embedding = "transformer.wte.weight"
		h, err = ops.LayerNorm(x, b.nodes["transformer.ln_f.weight"], b.nodes["transformer.ln_f.bias"], b.cfg.Eps)
	} else {
		h, err = ops.RMSNorm(x, b.nodes["model.norm.weight"], b.cfg.Eps)
	}
	if err != nil {
		return nil, err
	}
	lm := b.nodes["lm_head.weight"]
	if b.cfg.TiedEmbeddings {
		lm = b.nodes[embedding]
	}
	return ops.MatMul(h, lm, false, true)
}

// weightLayout says how a projection's weight is stored.
type weightLayout int

const (
	inOut weightLayout = iota // [in, out]: GPT-2 Conv1D
	outIn                     // [out, in]: nn.Linear
)

// project applies the projection module (its weight, optional bias and LoRA
// adapter) to x [tokens, in].
func (b *builder) project(x *gorgonia.Node, module string, layout weightLayout) (*gorgonia.Node, error) {
	y, err := ops.MatMul(x, b.nodes[module+".weight"], false, layout == outIn)
	if err != nil {
		return nil, err
	}
	if bias, ok := b.nodes[module+".bias"]; ok {
		if y, err = ops.AddBias(y, bias); err != nil {
			return nil, err
		}
	}
	if !b.lora[module] {
		return y, nil
	}
	xa, err := ops.MatMul(x, b.nodes[module+loraA], false, false)
	if err != nil {
		return nil, err
	}
	xab, err := ops.MatMul(xa, b.nodes[module+loraB], false, false)
	if err != nil {
		return nil, err
	}
	l := b.opts.LoRA
	if xab, err = ops.Scale(xab, float32(l.Alpha/float64(l.Rank))); err != nil {
		return nil, err
	}
	return ops.Add(y, xab)
}
