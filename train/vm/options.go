package vm

import (
	"log/slog"

	"gorgonia.org/gorgonia"
)

// Option configures a Machine.
type Option func(*config)

type config struct {
	outputs   []*gorgonia.Node
	forward   []*gorgonia.Node
	blocks    Blocks
	recompute bool
	offload   bool
	noMarks   bool
	logger    *slog.Logger
}

// Blocks tells the Machine how the forward pass divides into transformer blocks, for Recompute and
// Offload. models.Graph carries exactly this (BlockOf, BlockInputs).
type Blocks struct {
	// Of maps the ID of each forward node inside a block to the block's index. Nodes not in the map
	// (embeddings, the head, the loss, every backward node) belong to no block.
	Of map[int64]int
	// Inputs[k] is block k's input, the activation that is kept (or offloaded) when the block's other
	// forward values are dropped.
	Inputs []*gorgonia.Node
}

// WithOutputs names the nodes whose values the caller reads after RunAll (loss, gradients, logits).
// They stay live until the next RunAll, Reset or Close; everything else is freed at its last use.
// Nodes that no output depends on are not run. Without outputs, every root of the graph is one.
func WithOutputs(nodes ...*gorgonia.Node) Option {
	return func(c *config) { c.outputs = append(c.outputs, nodes...) }
}

// WithForward names the roots of the forward pass (typically the loss). Their ancestors run first;
// everything else (the gradients) runs after. Without it, the program is plain topological order
// and Recompute and Offload have no effect.
func WithForward(roots ...*gorgonia.Node) Option {
	return func(c *config) { c.forward = append(c.forward, roots...) }
}

// WithBlocks describes the transformer blocks for Recompute and Offload.
func WithBlocks(b Blocks) Option { return func(c *config) { c.blocks = b } }

// WithRecompute switches per-block activation recomputation on or off.
func WithRecompute(on bool) Option { return func(c *config) { c.recompute = on } }

// WithOffload switches per-block activation offload to host memory on or off.
func WithOffload(on bool) Option { return func(c *config) { c.offload = on } }

// WithIterationMarks says whether RunAll tells the allocator that an iteration begins, when the
// allocator takes the hint (gmlake's MarkIteration: a run of a shape seen before replays the last
// one's placements and makes no driver call). On by default; a caller that marks its own iterations
// (a training step that allocates outside the run too) turns it off.
func WithIterationMarks(on bool) Option { return func(c *config) { c.noMarks = !on } }

// WithLogger logs compilation and execution at debug level (off by default).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }
