package models

import (
	"errors"
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// LoRA configures low-rank adapters: for each targeted projection y = x·W,
// Build adds scale·(x·A)·B with A [in, Rank] drawn uniformly from ±1/√in
// (peft's kaiming-uniform), B [Rank, out] zeros and scale = Alpha/Rank, and
// freezes every base weight: Params are the adapters only.
//
// Targets name projections by suffix of their module path: Llama "q", "k",
// "v", "o", "gate", "up", "down" (or the full "q_proj" ...), GPT-2 "c_attn",
// "c_fc", "attn.c_proj", "mlp.c_proj" ("c_proj" matches both). A target that
// matches nothing is an error (ErrUnknownTarget).
//
// Adapter tensors are stored in Weights.Tensors as "<module>.lora_A.weight"
// and "<module>.lora_B.weight", created (from Seed) by the first Build that
// asks for them and shared by later graphs.
type LoRA struct {
	Rank    int
	Alpha   float64
	Targets []string
	Seed    int64
}

// BuildOptions fixes the shape of one graph.
type BuildOptions struct {
	Batch, Seq int
	LoRA       *LoRA         // nil: full fine-tuning
	Engine     tensor.Engine // allocates LoRA adapter tensors (nil: Go heap)
}

// Graph is one (Batch, Seq) instance of a model with its loss and gradients.
//
// Executing it: bind IDs (SetIDs), run every node of gorgonia.Sort(G) in
// reverse order. Forward nodes are those in Forward; every other op node
// belongs to the backward pass (gradient computation). BlockOf maps the op
// nodes of each transformer block's forward pass to the block's index; nodes
// outside blocks (embeddings, final norm, LM head, loss) and every input
// node (weights, adapters, IDs) are absent. BlockInputs[i] is the residual
// stream entering block i ([Batch*Seq, Hidden]), the tensor to keep when
// the block is recomputed.
type Graph struct {
	G *gorgonia.ExprGraph

	IDs    *gorgonia.Node // token ids, tensor.Int, shape [Batch, Seq]; labels are IDs shifted by one
	Logits *gorgonia.Node // [Batch, Seq, Vocab] (a Reshape of the LM head's [Batch*Seq, Vocab] output)
	Loss   *gorgonia.Node // float32 scalar: mean cross-entropy over Batch*(Seq-1) predicted tokens

	Params []*gorgonia.Node // trainable inputs (base weights, or only LoRA adapters), sorted by Names
	Names  []string         // Hugging Face-style name of each Param
	Frozen []*gorgonia.Node // base weights that are inputs but not trained (LoRA)
	Grads  []*gorgonia.Node // d Loss / d Params[i], in G

	BlockOf     map[int64]int // forward op node ID -> transformer block index
	BlockInputs []*gorgonia.Node
	Forward     map[int64]bool // IDs of every forward node (inputs included)

	Batch, Seq int
}

// Errors returned by Build.
var (
	ErrBadShape      = errors.New("models: bad graph shape")
	ErrUnknownTarget = errors.New("models: LoRA target matches no projection")
)

// SetIDs binds the token ids (row-major [Batch, Seq]) to the IDs node. The
// slice is used in place.
func (g *Graph) SetIDs(ids []int) error {
	if len(ids) != g.Batch*g.Seq {
		return fmt.Errorf("%w: %d ids for a [%d, %d] graph", ErrBadShape, len(ids), g.Batch, g.Seq)
	}
	return gorgonia.Let(g.IDs, tensor.New(tensor.WithShape(g.Batch, g.Seq), tensor.WithBacking(ids)))
}
