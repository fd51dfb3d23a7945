package vm

import (
	"errors"
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/gmlake/gmlake/train/plan"
)

// ErrGraph is wrapped by every error about a graph the Machine cannot run.
var ErrGraph = errors.New("vm: cannot compile graph")

// isLeaf: inputs, parameters and constants are the caller's values, read in place and never freed.
func isLeaf(n *gorgonia.Node) bool {
	if n.Op() == nil {
		return true
	}
	_, constant := n.Op().(interface{ Value() gorgonia.Value })
	return constant
}

// compile analyses g and compiles the program (package plan): the nodes the outputs need, leaves
// left out (the Machine reads them in place), with dead steps pruned.
func compile(g *gorgonia.ExprGraph, cfg *config) (*plan.Graph, []plan.Step, error) {
	forward := cfg.forward
	if len(forward) == 0 {
		forward = differentiatedRoots(g)
	}
	outputs := cfg.outputs
	if len(outputs) == 0 {
		outputs = append(roots(g), forward...)
	}
	if !cfg.noGrads {
		outputs = append(outputs, gradients(g)...)
	}
	blocks := cfg.blocks
	if len(cfg.boundaries) > 0 {
		if len(blocks.Of) > 0 {
			return nil, nil, fmt.Errorf("%w: both WithBlocks and WithBlockBoundaries", ErrBlocks)
		}
		var err error
		if blocks, err = blocksBetween(g, forward, cfg.boundaries); err != nil {
			return nil, nil, err
		}
	}
	if (cfg.recompute || cfg.offload) && (len(blocks.Of) == 0 || len(forward) == 0) {
		return nil, nil, fmt.Errorf("%w: recompute and offload work per block of the forward pass: name the blocks "+
			"(WithBlockBoundaries or WithBlocks) and the forward pass (WithForward, or differentiate the graph with gorgonia.Grad)", ErrBlocks)
	}
	gr, err := plan.Analyse(g, plan.Spec{Outputs: outputs, Forward: forward,
		BlockOf: blocks.Of, BlockInputs: blocks.Inputs, IsLeaf: isLeaf})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrGraph, err)
	}
	var outIdx []int
	for i, out := range gr.Output {
		if out {
			outIdx = append(outIdx, i)
		}
	}
	needed := gr.Ancestors(outIdx)
	var order []int
	for i := range gr.Nodes {
		if needed[i] && !gr.Leaf[i] {
			order = append(order, i)
		}
	}
	prog := gr.Compile(order, plan.Options{Recompute: cfg.recompute, Offload: cfg.offload, Prune: true})
	return gr, prog, nil
}

// roots are the nodes nothing reads.
func roots(g *gorgonia.ExprGraph) []*gorgonia.Node {
	var out []*gorgonia.Node
	for _, n := range g.AllNodes() {
		if g.To(n.ID()).Len() == 0 {
			out = append(out, n)
		}
	}
	return out
}
