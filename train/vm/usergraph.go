package vm

import (
	"errors"
	"fmt"

	"gorgonia.org/gorgonia"
)

// ErrBlocks is wrapped by New's error when Recompute or Offload cannot take effect (no blocks, no
// forward pass) or block boundaries do not describe a chain of blocks.
var ErrBlocks = errors.New("vm: cannot divide the graph into blocks")

// ErrNoGradient is returned by Grad (and the ValueGrads it backs) for a node the machine computes
// no gradient of, or whose gradient has been released (after Reset, Release or Close).
var ErrNoGradient = errors.New("vm: no gradient")

// gradients are the Deriv nodes of the leaves gorgonia.Grad differentiated, in graph order.
func gradients(g *gorgonia.ExprGraph) []*gorgonia.Node {
	var out []*gorgonia.Node
	for _, n := range g.AllNodes() {
		if d := n.Deriv(); d != nil && isLeaf(n) && !isLeaf(d) {
			out = append(out, d)
		}
	}
	return out
}

// differentiatedRoots are the forward roots of a graph gorgonia.Grad differentiated: op nodes that
// have a derivative and that no node with a derivative reads (the cost). Empty for a graph without
// gradients.
func differentiatedRoots(g *gorgonia.ExprGraph) []*gorgonia.Node {
	var out []*gorgonia.Node
	for _, n := range g.AllNodes() {
		if n.Deriv() == nil || isLeaf(n) {
			continue
		}
		root := true
		for it := g.To(n.ID()); it.Next(); {
			if it.Node().(*gorgonia.Node).Deriv() != nil {
				root = false
				break
			}
		}
		if root {
			out = append(out, n)
		}
	}
	return out
}

// blocksBetween assigns the forward op nodes to blocks from the blocks' inputs (see
// WithBlockBoundaries).
func blocksBetween(g *gorgonia.ExprGraph, forward, inputs []*gorgonia.Node) (Blocks, error) {
	sorted, err := gorgonia.Sort(g)
	if err != nil {
		return Blocks{}, fmt.Errorf("%w: sorting the graph: %w", ErrBlocks, err)
	}
	boundary := make(map[int64]int, len(inputs))
	for k, in := range inputs {
		if in == nil || in.Graph() != g {
			return Blocks{}, fmt.Errorf("%w: block input %d is not a node of the graph", ErrBlocks, k)
		}
		if _, dup := boundary[in.ID()]; dup {
			return Blocks{}, fmt.Errorf("%w: %v named twice", ErrBlocks, in)
		}
		boundary[in.ID()] = k
	}
	isForward := ancestorsOf(g, forward)
	// level[n] is the last block input n depends on, -1 for none; nodes come inputs first.
	level := make(map[int64]int, len(sorted))
	b := Blocks{Of: make(map[int64]int), Inputs: inputs}
	for i := len(sorted) - 1; i >= 0; i-- {
		n := sorted[i]
		lv := -1
		for it := g.From(n.ID()); it.Next(); {
			lv = max(lv, level[it.Node().ID()])
		}
		if k, ok := boundary[n.ID()]; ok {
			if lv != k-1 {
				return Blocks{}, fmt.Errorf("%w: block input %d (%v) depends on block input %d, not on the one before it", ErrBlocks, k, n, lv)
			}
			if k > 0 && isForward[n.ID()] {
				b.Of[n.ID()] = k - 1 // the output of the block before
			}
			level[n.ID()] = k
			continue
		}
		level[n.ID()] = lv
		if lv >= 0 && !isLeaf(n) && isForward[n.ID()] {
			b.Of[n.ID()] = lv
		}
	}
	for k, in := range inputs {
		if !isForward[in.ID()] {
			return Blocks{}, fmt.Errorf("%w: block input %d (%v) is not in the forward pass", ErrBlocks, k, in)
		}
	}
	return b, nil
}

// ancestorsOf is the set of nodes the roots depend on, the roots included; every node without roots.
func ancestorsOf(g *gorgonia.ExprGraph, roots []*gorgonia.Node) map[int64]bool {
	seen := make(map[int64]bool)
	if len(roots) == 0 {
		for _, n := range g.AllNodes() {
			seen[n.ID()] = true
		}
		return seen
	}
	stack := append([]*gorgonia.Node(nil), roots...)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[n.ID()] {
			continue
		}
		seen[n.ID()] = true
		for it := g.From(n.ID()); it.Next(); {
			stack = append(stack, it.Node().(*gorgonia.Node))
		}
	}
	return seen
}

// Grad is the gradient of leaf n computed by the last RunAll (gorgonia.Grad's Deriv node of n). It
// is valid until the next RunAll, Reset or Close; ErrNoGradient when there is none.
func (m *Machine) Grad(n *gorgonia.Node) (gorgonia.Value, error) {
	d := n.Deriv()
	if d == nil {
		return nil, fmt.Errorf("%w: %v was not differentiated (gorgonia.Grad)", ErrNoGradient, n)
	}
	if v := m.Value(d); v != nil {
		return v, nil
	}
	return nil, fmt.Errorf("%w: the gradient of %v is not live (no RunAll since the last Reset, or not an output)", ErrNoGradient, n)
}

// ValueGrads are the learnables with the gradients of the last RunAll, for a Gorgonia solver:
//
//	solver.Step(m.ValueGrads(learnables...))
//
// It stands for gorgonia.NodesToValueGrads, whose nodes read their gradients from dual values that
// only Gorgonia's own machines bind. A solver updates the learnables' values in place and may
// change the gradients' memory, which the next RunAll overwrites anyway.
func (m *Machine) ValueGrads(learnables ...*gorgonia.Node) []gorgonia.ValueGrad {
	out := make([]gorgonia.ValueGrad, len(learnables))
	for i, n := range learnables {
		out[i] = valueGrad{m: m, n: n}
	}
	return out
}

// valueGrad is a learnable and the Machine that computes its gradient.
type valueGrad struct {
	m *Machine
	n *gorgonia.Node
}

func (v valueGrad) Value() gorgonia.Value         { return v.n.Value() }
func (v valueGrad) Grad() (gorgonia.Value, error) { return v.m.Grad(v.n) }
func (v valueGrad) Name() string                  { return v.n.Name() }
