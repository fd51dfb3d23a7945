package vm

import (
	"errors"
	"fmt"
	"slices"

	"gorgonia.org/gorgonia"
)

// ErrGraph is wrapped by every error about a graph the Machine cannot run.
var ErrGraph = errors.New("vm: cannot compile graph")

type opcode uint8

const (
	opExec    opcode = iota // run the node's op
	opOffload               // copy the node's value to host memory and drop the device instance
	opRestore               // copy the node's value back from host memory into a fresh buffer
)

func (c opcode) String() string {
	return [...]string{"exec", "offload", "restore"}[c]
}

// instr is one program step. Node and input references are indices into Machine.nodes.
type instr struct {
	code      opcode
	node      int
	inputs    []int // exec only: the op's inputs in order, duplicates kept
	recompute bool  // an exec repeating a forward computation in backward
	release   []int // nodes whose current instance dies after this step
}

// graphInfo is the static view of the graph the compiler works on.
type graphInfo struct {
	nodes    []*gorgonia.Node
	index    map[int64]int
	children [][]int
	leaf     []bool
	output   []bool
	forward  []bool // an ancestor of a forward root
	block    []int  // block index of a forward node, -1 if none
	inputOf  []int  // k if the node is Blocks.Inputs[k], else -1
	topo     []int  // needed computed nodes, children before parents
}

func isLeaf(n *gorgonia.Node) bool {
	if n.Op() == nil {
		return true
	}
	_, constant := n.Op().(interface{ Value() gorgonia.Value })
	return constant
}

func analyse(g *gorgonia.ExprGraph, cfg *config) (*graphInfo, error) {
	sorted, err := gorgonia.Sort(g)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrGraph, err)
	}
	gi := &graphInfo{index: make(map[int64]int, len(sorted))}
	for i := len(sorted) - 1; i >= 0; i-- { // Sort puts roots first
		gi.index[sorted[i].ID()] = len(gi.nodes)
		gi.nodes = append(gi.nodes, sorted[i])
	}
	n := len(gi.nodes)
	gi.children = make([][]int, n)
	gi.leaf, gi.output, gi.forward = make([]bool, n), make([]bool, n), make([]bool, n)
	gi.block, gi.inputOf = make([]int, n), make([]int, n)
	for i, nd := range gi.nodes {
		gi.leaf[i] = isLeaf(nd)
		gi.block[i], gi.inputOf[i] = -1, -1
		for it := g.From(nd.ID()); it.Next(); {
			gi.children[i] = append(gi.children[i], gi.index[it.Node().ID()])
		}
	}
	outputs := cfg.outputs
	if len(outputs) == 0 {
		for _, nd := range gi.nodes {
			if g.To(nd.ID()).Len() == 0 {
				outputs = append(outputs, nd)
			}
		}
	}
	var outIdx []int
	for _, o := range outputs {
		i, ok := gi.index[o.ID()]
		if !ok {
			return nil, fmt.Errorf("%w: output %v is not in the graph", ErrGraph, o)
		}
		gi.output[i] = true
		outIdx = append(outIdx, i)
	}
	needed := gi.ancestors(outIdx)
	var fwdIdx []int
	for _, r := range cfg.forward {
		i, ok := gi.index[r.ID()]
		if !ok {
			return nil, fmt.Errorf("%w: forward root %v is not in the graph", ErrGraph, r)
		}
		fwdIdx = append(fwdIdx, i)
	}
	gi.forward = gi.ancestors(fwdIdx)
	for i := range gi.nodes {
		if needed[i] && !gi.leaf[i] {
			gi.topo = append(gi.topo, i)
		}
		if k, ok := cfg.blocks.Of[gi.nodes[i].ID()]; ok && gi.forward[i] {
			gi.block[i] = k
		}
	}
	for k, in := range cfg.blocks.Inputs {
		if i, ok := gi.index[in.ID()]; ok {
			gi.inputOf[i] = k
		}
	}
	return gi, nil
}

// ancestors marks the given nodes and everything they depend on.
func (gi *graphInfo) ancestors(from []int) []bool {
	seen := make([]bool, len(gi.nodes))
	stack := slices.Clone(from)
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[i] {
			continue
		}
		seen[i] = true
		stack = append(stack, gi.children[i]...)
	}
	return seen
}

// droppable says whether a forward value may be dropped and recomputed: it lies inside a block, is
// not the block's kept input and is not an output.
func (gi *graphInfo) droppable(i int) bool {
	return gi.block[i] >= 0 && gi.inputOf[i] < 0 && !gi.output[i]
}

// compile turns the analysed graph into a program with release points.
func compile(gi *graphInfo, cfg *config) []instr {
	var fwd, bwd []int
	for _, i := range gi.topo {
		if gi.forward[i] {
			fwd = append(fwd, i)
		} else {
			bwd = append(bwd, i)
		}
	}
	prog := make([]instr, 0, len(gi.topo))
	for _, i := range fwd {
		prog = append(prog, gi.exec(i, false))
	}
	nFwd := len(prog)
	if cfg.recompute && len(cfg.blocks.Of) > 0 {
		prog = append(prog, gi.backwardWithRecompute(fwd, bwd)...)
	} else {
		for _, i := range bwd {
			prog = append(prog, gi.exec(i, false))
		}
	}
	if cfg.offload && len(cfg.blocks.Of) > 0 {
		prog = gi.insertOffload(prog, nFwd)
	}
	for {
		uses := gi.useAnalysis(prog)
		pruned := prog[:0:0]
		for p, in := range prog {
			if in.code == opExec && !in.recompute && uses.dead[p] {
				continue
			}
			pruned = append(pruned, in)
		}
		if len(pruned) == len(prog) {
			gi.setReleases(prog, uses)
			return prog
		}
		prog = pruned
	}
}

func (gi *graphInfo) exec(i int, recompute bool) instr {
	return instr{code: opExec, node: i, inputs: gi.children[i], recompute: recompute}
}

// backwardWithRecompute emits the backward part, running a block's forward again right before the
// first backward step that needs one of the block's dropped values.
func (gi *graphInfo) backwardWithRecompute(fwd, bwd []int) []instr {
	redo := make(map[int][]bool) // block -> nodes to recompute
	mark := func(k int) []bool {
		if redo[k] == nil {
			redo[k] = make([]bool, len(gi.nodes))
		}
		return redo[k]
	}
	var stack []int
	for _, b := range bwd {
		for _, c := range gi.children[b] {
			if gi.droppable(c) {
				mark(gi.block[c])[c] = true
				stack = append(stack, c)
			}
		}
	}
	for len(stack) > 0 { // close over the block-internal inputs of what is recomputed
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range gi.children[i] {
			if gi.droppable(c) && gi.block[c] == gi.block[i] && !redo[gi.block[i]][c] {
				redo[gi.block[i]][c] = true
				stack = append(stack, c)
			}
		}
	}
	done := make(map[int]bool)
	var prog []instr
	for _, b := range bwd {
		for _, c := range gi.children[b] {
			if k := gi.block[c]; gi.droppable(c) && !done[k] {
				done[k] = true
				for _, f := range fwd {
					if redo[k][f] {
						prog = append(prog, gi.exec(f, true))
					}
				}
			}
		}
		prog = append(prog, gi.exec(b, false))
	}
	return prog
}

// offloadGroup is the block an offloaded value travels with: its own block, or the block it feeds
// when it is a block input.
func (gi *graphInfo) offloadGroup(i int) int {
	if gi.inputOf[i] >= 0 {
		return gi.inputOf[i]
	}
	return gi.block[i]
}

// insertOffload moves every forward value of a block that the backward part reads to host memory
// after the block's forward, and brings the whole group back before backward first reads one of them.
func (gi *graphInfo) insertOffload(prog []instr, nFwd int) []instr {
	uses := gi.useAnalysis(prog)
	blockEnd := make(map[int]int)
	for p := 0; p < nFwd; p++ {
		if k := gi.block[prog[p].node]; k >= 0 {
			blockEnd[k] = p
		}
	}
	after := make(map[int][]int)  // program index -> nodes to offload after it
	before := make(map[int][]int) // program index -> nodes to restore before it
	groups := make(map[int][]int)
	firstBwdUse := make(map[int]int)
	for p := 0; p < nFwd; p++ {
		i := prog[p].node
		k := gi.offloadGroup(i)
		if k < 0 || gi.output[i] {
			continue
		}
		bwdUses := uses.readsAfter(p, nFwd)
		if len(bwdUses) == 0 {
			continue
		}
		at := max(uses.lastBefore(p, nFwd), blockEnd[k], p)
		after[at] = append(after[at], i)
		groups[k] = append(groups[k], i)
		if f, ok := firstBwdUse[k]; !ok || bwdUses[0] < f {
			firstBwdUse[k] = bwdUses[0]
		}
	}
	for k, nodes := range groups {
		before[firstBwdUse[k]] = append(before[firstBwdUse[k]], nodes...)
	}
	out := make([]instr, 0, len(prog)+2*len(after))
	for p, in := range prog {
		for _, i := range before[p] {
			out = append(out, instr{code: opRestore, node: i})
		}
		out = append(out, in)
		for _, i := range after[p] {
			out = append(out, instr{code: opOffload, node: i})
		}
	}
	return out
}
