package models

import (
	"fmt"
	"log/slog"

	"github.com/gmlake/gmlake/models/ops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ResNetOptions fixes the input shape of one graph: Batch images of Height×Width pixels.
type ResNetOptions struct {
	Batch, Height, Width int
}

// ResNetGraph is one input shape of a ResNet with its loss and gradients. Multi-scale training
// keeps one per image size, all binding the same ResNetWeights.
//
// Executing it: bind Images and Labels (SetInputs), run every node of gorgonia.Sort(G) in reverse
// order. Forward holds the forward nodes; BlockOf maps the op nodes of each residual block's
// forward pass to the block's index and BlockInputs[i] is the activation entering block i, as
// Graph documents for the transformers (so the executors' recomputation and offload apply).
type ResNetGraph struct {
	G *gorgonia.ExprGraph

	Images *gorgonia.Node // float32 [Batch, InChannels, Height, Width]
	Labels *gorgonia.Node // tensor.Int [Batch], each in [0, Classes)
	Logits *gorgonia.Node // [Batch, Classes]
	Loss   *gorgonia.Node // float32 scalar: mean softmax cross-entropy

	Params []*gorgonia.Node // every parameter, sorted by Names
	Names  []string
	Grads  []*gorgonia.Node // d Loss / d Params[i]

	BlockOf     map[int64]int
	BlockInputs []*gorgonia.Node
	Forward     map[int64]bool

	Batch, Height, Width int

	view *Graph
}

// Graph is the same graph seen as a Graph (parameters, gradients, loss, blocks; IDs is nil and
// Seq 0), for executors written for the transformers that bind their inputs themselves. It is
// the same *Graph every call.
func (g *ResNetGraph) Graph() *Graph {
	if g.view == nil {
		g.view = &Graph{G: g.G, Logits: g.Logits, Loss: g.Loss, Params: g.Params, Names: g.Names, Grads: g.Grads,
			BlockOf: g.BlockOf, BlockInputs: g.BlockInputs, Forward: g.Forward, Batch: g.Batch}
	}
	return g.view
}

// BuildResNet creates the graph of w's network for one input shape: forward pass, loss and
// gradients of every parameter. Its parameter nodes bind w's tensors.
func BuildResNet(w *ResNetWeights, opts ResNetOptions) (*ResNetGraph, error) {
	if w == nil {
		return nil, fmt.Errorf("%w: nil weights", ErrResNetConfig)
	}
	c := w.Config
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if opts.Batch <= 0 || opts.Height <= 0 || opts.Width <= 0 {
		return nil, fmt.Errorf("%w: batch %d of %d×%d images", ErrBadShape, opts.Batch, opts.Height, opts.Width)
	}
	g := gorgonia.NewGraph()
	rg := &ResNetGraph{G: g, Batch: opts.Batch, Height: opts.Height, Width: opts.Width,
		BlockOf: make(map[int64]int), Forward: make(map[int64]bool)}
	b := &resnetBuilder{w: w, graph: rg, nodes: make(map[string]*gorgonia.Node)}
	for _, s := range resnetSpecs(c) {
		t, ok := w.Tensors[s.name]
		if !ok || !sameShape(t.Shape(), s.shape) {
			return nil, fmt.Errorf("%w: weight %s missing or not of shape %v", ErrBadCheckpoint, s.name, s.shape)
		}
		b.nodes[s.name] = bindTensor(g, s.name, t)
	}
	for _, name := range w.Names() {
		if _, ok := b.nodes[name]; !ok {
			return nil, fmt.Errorf("%w: weight %s is not a parameter of this network", ErrBadCheckpoint, name)
		}
		rg.Names = append(rg.Names, name)
		rg.Params = append(rg.Params, b.nodes[name])
	}
	rg.Images = gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(opts.Batch, c.InChannels, opts.Height, opts.Width),
		gorgonia.WithName("images"))
	rg.Labels = gorgonia.NewVector(g, tensor.Int, gorgonia.WithShape(opts.Batch), gorgonia.WithName("labels"))
	if err := b.forward(); err != nil {
		return nil, fmt.Errorf("models: resnet on %d×%d images: %w", opts.Height, opts.Width, err)
	}
	for _, n := range g.AllNodes() {
		rg.Forward[n.ID()] = true
	}
	grads, err := gorgonia.Grad(rg.Loss, rg.Params...)
	if err != nil {
		return nil, fmt.Errorf("models: resnet gradients: %w", err)
	}
	rg.Grads = grads
	slog.Debug("models: built resnet graph", "batch", opts.Batch, "height", opts.Height, "width", opts.Width,
		"nodes", len(g.AllNodes()))
	return rg, nil
}

// SetInputs binds images (row-major [Batch, InChannels, Height, Width]) and labels, used in place.
func (g *ResNetGraph) SetInputs(images []float32, labels []int) error {
	shape := g.Images.Shape()
	if len(images) != shape.TotalSize() || len(labels) != g.Batch {
		return fmt.Errorf("%w: %d pixels and %d labels for images %v", ErrBadShape, len(images), len(labels), shape)
	}
	if err := gorgonia.Let(g.Images, tensor.New(tensor.WithShape(shape...), tensor.WithBacking(images))); err != nil {
		return err
	}
	return gorgonia.Let(g.Labels, tensor.New(tensor.WithShape(g.Batch), tensor.WithBacking(labels)))
}

type resnetBuilder struct {
	w     *ResNetWeights
	graph *ResNetGraph
	nodes map[string]*gorgonia.Node
}

func (b *resnetBuilder) forward() error {
	c := b.w.Config
	x, err := b.convBN(b.graph.Images, c.stem(), true)
	if err != nil {
		return err
	}
	if x, err = ops.MaxPool2D(x, 3, 3, 2, 1); err != nil {
		return err
	}
	for i, rb := range c.blocks() {
		b.graph.BlockInputs = append(b.graph.BlockInputs, x)
		before := len(b.graph.G.AllNodes())
		if x, err = b.block(rb, x); err != nil {
			return fmt.Errorf("%s: %w", rb.convs[0].name, err)
		}
		for _, n := range b.graph.G.AllNodes()[before:] {
			if n.Op() != nil {
				b.graph.BlockOf[n.ID()] = i
			}
		}
	}
	pooled, err := ops.GlobalAvgPool(x)
	if err != nil {
		return err
	}
	logits, err := ops.MatMul(pooled, b.nodes["fc.weight"], false, true)
	if err != nil {
		return err
	}
	if b.graph.Logits, err = ops.AddBias(logits, b.nodes["fc.bias"]); err != nil {
		return err
	}
	b.graph.Loss, err = ops.ClassCrossEntropy(b.graph.Logits, b.graph.Labels)
	return err
}

// convBN is convolution, batch norm and (when relu) a rectifier.
func (b *resnetBuilder) convBN(x *gorgonia.Node, s convSpec, relu bool) (*gorgonia.Node, error) {
	y, err := ops.Conv2d(x, b.nodes[s.name], s.stride, s.stride, s.pad, s.pad)
	if err != nil {
		return nil, err
	}
	if y, err = ops.BatchNorm(y, b.nodes[s.bn+".weight"], b.nodes[s.bn+".bias"], b.w.Config.Eps); err != nil {
		return nil, err
	}
	if !relu {
		return y, nil
	}
	return ops.ReLU(y)
}

// block is one residual block: its convolutions, the shortcut (identity or projection), the sum
// and a rectifier.
func (b *resnetBuilder) block(rb resBlock, x *gorgonia.Node) (*gorgonia.Node, error) {
	y := x
	var err error
	for i, s := range rb.convs {
		if y, err = b.convBN(y, s, i < len(rb.convs)-1); err != nil {
			return nil, err
		}
	}
	shortcut := x
	if rb.down != nil {
		if shortcut, err = b.convBN(x, *rb.down, false); err != nil {
			return nil, err
		}
	}
	if y, err = ops.Add(y, shortcut); err != nil {
		return nil, err
	}
	return ops.ReLU(y)
}
