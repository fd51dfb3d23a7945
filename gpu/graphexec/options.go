package graphexec

import (
	"gorgonia.org/gorgonia"

	"github.com/gmlake/gmlake/gpu"
)

// Option configures a Machine (Compile) or a Trainer (NewTrainer).
type Option func(*config)

type config struct {
	outputs     []*gorgonia.Node
	forward     []*gorgonia.Node
	blockOf     map[int64]int
	blockInputs []*gorgonia.Node
	recompute   bool
	offload     bool
	gatherer    Gatherer
	gathered    [][]*gorgonia.Node
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

// Gatherer supplies the values of sharded parameters (ZeRO stage 3, FSDP) for the part of a pass
// that reads them. Gather returns input n's full value (all-gathered into a buffer of the
// gatherer's, typically from the device's pool); the Machine calls Release with the same tensor
// after the last step of that part of the pass that reads it, and never frees it itself.
// Both are called on the goroutine that runs the Machine, in program order.
type Gatherer interface {
	Gather(n *gorgonia.Node) (*gpu.Tensor, error)
	Release(n *gorgonia.Node, t *gpu.Tensor) error
}

// WithGather makes the inputs of each unit (a group of trained parameters, e.g. one transformer
// block's) come from g once per pass, the unit's members together: before the first forward step
// that reads one of them, and again before the first backward step (a recomputation included),
// each released right after that pass's last read (package plan's CompileGathered). A Gatherer
// that all-gathers a unit at its first Gather and frees it at its last Release gathers it at most
// twice per Run. A node both bound (Bind) and gathered is gathered.
func WithGather(g Gatherer, units ...[]*gorgonia.Node) Option {
	return func(c *config) { c.gatherer, c.gathered = g, append(c.gathered, units...) }
}
