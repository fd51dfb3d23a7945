package graphexec

import "gorgonia.org/gorgonia"

// Option configures a Machine (Compile) or a Trainer (NewTrainer).
type Option func(*config)

type config struct {
	outputs     []*gorgonia.Node
	forward     []*gorgonia.Node
	blockOf     map[int64]int
	blockInputs []*gorgonia.Node
	recompute   bool
	offload     bool
	cnn         cnnConfig // options_cnn.go
}

// WithOutputs names the nodes whose values are read after Run (loss, gradients). They stay live
// until the next Run or Close; everything else is freed right after its last reader.
func WithOutputs(nodes ...*gorgonia.Node) Option {
	return func(c *config) { c.outputs = append(c.outputs, nodes...) }
}

// WithForward names the roots of the forward pass (the loss): their ancestors run first, the rest
// (the backward pass) after. Recompute and offload need it. NewTrainer sets it from the graph.
func WithForward(roots ...*gorgonia.Node) Option {
	return func(c *config) { c.forward = append(c.forward, roots...) }
}

// WithBlocks describes the transformer blocks (models.Graph's BlockOf and BlockInputs) for
// recomputation and offload. NewTrainer sets it from the graph.
func WithBlocks(of map[int64]int, inputs []*gorgonia.Node) Option {
	return func(c *config) { c.blockOf, c.blockInputs = of, inputs }
}

// WithRecompute drops each block's forward values (except its input) after their last forward
// use and runs the block's forward again right before backward first needs one of them.
func WithRecompute(on bool) Option { return func(c *config) { c.recompute = on } }

// WithOffload copies each block's forward values that backward reads (with recomputation: only
// the block input) to pinned host memory after the block's forward, frees them on the device, and
// copies them back into fresh buffers before backward first needs them.
func WithOffload(on bool) Option { return func(c *config) { c.offload = on } }
