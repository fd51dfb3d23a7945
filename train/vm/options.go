package vm

import (
	"log/slog"

	"gorgonia.org/gorgonia"
)

// Option configures a Machine.
type Option func(*config)

type config struct {
	outputs    []*gorgonia.Node
	forward    []*gorgonia.Node
	blocks     Blocks
	boundaries []*gorgonia.Node
	noGrads    bool
	recompute  bool
	offload    bool
	noMarks    bool
	logger     *slog.Logger
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

// WithOutputs names the nodes whose values the caller reads after RunAll (loss, logits, anything).
// They stay live until the next RunAll, Reset or Close; everything else is freed at its last use.
// Nodes that no output depends on are not run. Without outputs, every root of the graph is one,
// and so is the loss. The gradients gorgonia.Grad added are outputs either way (see
// WithGradients).
func WithOutputs(nodes ...*gorgonia.Node) Option {
	return func(c *config) { c.outputs = append(c.outputs, nodes...) }
}

// WithForward names the roots of the forward pass (typically the loss). Their ancestors run first;
// everything else (the gradients) runs after. Without it, in a graph differentiated by
// gorgonia.Grad the roots are found: the differentiated nodes nothing differentiated reads (the
// loss). In a graph without gradients the program is plain topological order.
func WithForward(roots ...*gorgonia.Node) Option {
	return func(c *config) { c.forward = append(c.forward, roots...) }
}

// WithBlocks describes the transformer blocks for Recompute and Offload node by node (models.Graph
// carries it). For a graph of one's own, WithBlockBoundaries says the same in one line.
func WithBlocks(b Blocks) Option { return func(c *config) { c.blocks = b } }

// WithBlockBoundaries divides the forward pass into blocks for Recompute and Offload by naming the
// input of each block, in forward order: typically the residual stream between layers, the
// activation a layer reads and the next layer's input. Block k holds every forward op node that
// depends on inputs[k] and not on inputs[k+1] (the last block runs to the loss); inputs[k+1]
// itself, the output of block k, belongs to block k, and inputs[0] to none. Each input must depend
// on the one before (New fails with ErrBlocks otherwise).
func WithBlockBoundaries(inputs ...*gorgonia.Node) Option {
	return func(c *config) { c.boundaries = append(c.boundaries, inputs...) }
}

// WithGradients says whether the gradients gorgonia.Grad added to the graph (the Deriv node of
// every leaf it differentiated) are outputs, so that RunAll computes them and Grad and ValueGrads
// read them. On by default; an evaluation machine over a differentiated graph turns it off.
func WithGradients(on bool) Option { return func(c *config) { c.noGrads = !on } }

// WithRecompute switches per-block activation recomputation on or off. On, it needs blocks
// (WithBlocks or WithBlockBoundaries) and a forward pass (WithForward, or a graph differentiated
// by gorgonia.Grad): New fails with ErrBlocks without them rather than doing nothing.
func WithRecompute(on bool) Option { return func(c *config) { c.recompute = on } }

// WithOffload switches per-block activation offload to host memory on or off. Like Recompute it
// needs blocks and a forward pass, or New fails with ErrBlocks.
func WithOffload(on bool) Option { return func(c *config) { c.offload = on } }

// WithIterationMarks says whether RunAll tells the allocator that an iteration begins, when the
// allocator takes the hint (gmlake's MarkIteration: a run of a shape seen before replays the last
// one's placements and makes no driver call). On by default; a caller that marks its own iterations
// (a training step that allocates outside the run too) turns it off.
func WithIterationMarks(on bool) Option { return func(c *config) { c.noMarks = !on } }

// WithLogger logs compilation and execution at debug level (off by default).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }
