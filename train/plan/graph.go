package plan

import (
	"errors"
	"fmt"
	"slices"

	"gorgonia.org/gorgonia"
)

// ErrNotInGraph is wrapped by Analyse's error for an output or forward root that is not a node of
// the graph. A block input that is not in the graph is ignored.
var ErrNotInGraph = errors.New("plan: node is not in the graph")

// Spec names the nodes of a graph the analysis needs.
type Spec struct {
	// Outputs are the nodes whose values the caller reads after the run; their last instances are
	// never released.
	Outputs []*gorgonia.Node
	// Forward are the roots of the forward pass (the loss). Without them every node is forward.
	Forward []*gorgonia.Node
	// BlockOf maps the ID of each forward node inside a transformer block to the block's index
	// (models.Graph's BlockOf).
	BlockOf map[int64]int
	// BlockInputs[k] is block k's input, kept (or offloaded) when the block is recomputed.
	BlockInputs []*gorgonia.Node
	// IsLeaf says which nodes are leaves; nil means nodes without an op.
	IsLeaf func(*gorgonia.Node) bool
}

// Graph is the device-independent view of a graph. Nodes are referred to by their index in Nodes;
// everything but Nodes and Index is plain data, so a test can write a Graph by hand.
type Graph struct {
	Nodes   []*gorgonia.Node // every node after its inputs
	Index   map[int64]int    // node ID -> index
	Inputs  [][]int          // per node, its inputs in argument order, duplicates kept
	Leaf    []bool           // an input, parameter or constant, owned by the caller
	Output  []bool           // kept after the run
	Forward []bool           // an ancestor of a forward root (every node without roots)
	Block   []int            // block index of a forward node that is no leaf, -1 if none
	InputOf []int            // k if the node is block k's input, else -1
}

// Analyse sorts g and records what the compiler needs about every node.
func Analyse(g *gorgonia.ExprGraph, s Spec) (*Graph, error) {
	sorted, err := gorgonia.Sort(g)
	if err != nil {
		return nil, fmt.Errorf("plan: sorting the graph: %w", err)
	}
	slices.Reverse(sorted) // Sort puts roots first
	n := len(sorted)
	gr := &Graph{Nodes: sorted, Index: make(map[int64]int, n), Inputs: make([][]int, n),
		Leaf: make([]bool, n), Output: make([]bool, n), Block: make([]int, n), InputOf: make([]int, n)}
	for i, nd := range sorted {
		gr.Index[nd.ID()] = i
	}
	isLeaf := s.IsLeaf
	if isLeaf == nil {
		isLeaf = func(nd *gorgonia.Node) bool { return nd.Op() == nil }
	}
	for i, nd := range sorted {
		gr.Leaf[i] = isLeaf(nd)
		gr.Block[i], gr.InputOf[i] = -1, -1
		for it := g.From(nd.ID()); it.Next(); {
			gr.Inputs[i] = append(gr.Inputs[i], gr.Index[it.Node().ID()])
		}
	}
	outputs, err := gr.indices("output", s.Outputs)
	if err != nil {
		return nil, err
	}
	for _, i := range outputs {
		gr.Output[i] = true
	}
	roots, err := gr.indices("forward root", s.Forward)
	if err != nil {
		return nil, err
	}
	gr.Forward = gr.Ancestors(roots)
	if len(roots) == 0 {
		for i := range gr.Forward {
			gr.Forward[i] = true
		}
	}
	for i, nd := range sorted {
		if k, ok := s.BlockOf[nd.ID()]; ok && gr.Forward[i] && !gr.Leaf[i] {
			gr.Block[i] = k
		}
	}
	for k, in := range s.BlockInputs {
		if i, ok := gr.Index[in.ID()]; ok && gr.Nodes[i] == in {
			gr.InputOf[i] = k
		}
	}
	return gr, nil
}

func (gr *Graph) indices(what string, nodes []*gorgonia.Node) ([]int, error) {
	out := make([]int, 0, len(nodes))
	for _, nd := range nodes {
		i, ok := gr.Index[nd.ID()]
		if !ok || gr.Nodes[i] != nd { // IDs are per graph: another graph's node may share one
			return nil, fmt.Errorf("%w: %s %v", ErrNotInGraph, what, nd)
		}
		out = append(out, i)
	}
	return out, nil
}

// Len is the number of nodes.
func (gr *Graph) Len() int { return len(gr.Inputs) }

// Ancestors marks the given nodes and everything they depend on.
func (gr *Graph) Ancestors(from []int) []bool {
	seen := make([]bool, gr.Len())
	stack := slices.Clone(from)
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !seen[i] {
			seen[i] = true
			stack = append(stack, gr.Inputs[i]...)
		}
	}
	return seen
}

// Droppable says whether a forward value may be dropped and recomputed: it lies inside a block, is
// not the block's kept input and is not an output.
func (gr *Graph) Droppable(i int) bool {
	return gr.Block[i] >= 0 && gr.InputOf[i] < 0 && !gr.Output[i]
}
