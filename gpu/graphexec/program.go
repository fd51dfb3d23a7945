package graphexec

import (
	"fmt"
	"slices"

	"gorgonia.org/gorgonia"
)

// opcode is what one program step does.
type opcode uint8

const (
	opLoad    opcode = iota // bind or upload an input node's value
	opExec                  // run the node's op into a fresh buffer (a reshape: a view)
	opOffload               // copy the node's value to pinned host memory and drop the device instance
	opRestore               // copy the node's value back from host memory into a fresh buffer
)

func (c opcode) String() string {
	return [...]string{"load", "exec", "offload", "restore"}[c]
}

// instr is one program step; node indexes Machine.nodes.
type instr struct {
	code      opcode
	node      int
	recompute bool  // an exec repeating a forward computation in backward
	release   []int // nodes whose current instance dies after this step
}

// plan is the static view of the graph the compiler works on (train/vm's analysis, with leaves as
// load steps because the GPU executor must bring every input to the device).
type plan struct {
	inputs  [][]int // per node, its inputs in argument order, duplicates kept
	leaf    []bool
	output  []bool
	forward []bool // an ancestor of a forward root (all false without forward roots)
	block   []int  // block index of a forward op node, -1 if none
	inputOf []int  // k if the node is block k's input, else -1
	prune   bool   // drop steps whose values nobody reads (with forward roots; the plain program runs all)
}

// droppable says whether a forward value may be dropped and recomputed: it lies inside a block, is
// not the block's kept input and is not an output.
func (pl *plan) droppable(i int) bool {
	return pl.block[i] >= 0 && pl.inputOf[i] < 0 && !pl.output[i]
}

// compile returns the program: loads and forward steps in topological order, then the backward
// steps (recomputing a block's dropped forward values right before the first backward step that
// needs one), with offload/restore pairs around each block's saved values; dead steps are pruned
// and every instance is released after its last reader.
func (pl *plan) compile(recompute, offload bool) []instr {
	n := len(pl.inputs)
	var fwd, bwd []int
	for i := range n {
		if pl.forward[i] || pl.leaf[i] {
			fwd = append(fwd, i)
		} else {
			bwd = append(bwd, i)
		}
	}
	prog := make([]instr, 0, n)
	for _, i := range fwd {
		prog = append(prog, pl.step(i, false))
	}
	nFwd := len(prog)
	if recompute {
		prog = append(prog, pl.backwardWithRecompute(fwd, bwd)...)
	} else {
		for _, i := range bwd {
			prog = append(prog, pl.step(i, false))
		}
	}
	if offload {
		prog = pl.insertOffload(prog, nFwd)
	}
	for {
		uses := pl.useAnalysis(prog)
		pruned := prog[:0:0]
		for p, in := range prog {
			if pl.prune && in.code != opOffload && in.code != opRestore && !in.recompute && uses.dead[p] {
				continue
			}
			pruned = append(pruned, in)
		}
		if len(pruned) == len(prog) {
			pl.setReleases(prog, uses)
			return prog
		}
		prog = pruned
	}
}

func (pl *plan) step(i int, recompute bool) instr {
	if pl.leaf[i] {
		return instr{code: opLoad, node: i}
	}
	return instr{code: opExec, node: i, recompute: recompute}
}

// backwardWithRecompute emits the backward steps, running a block's dropped forward values again
// right before the first backward step that reads one of them.
func (pl *plan) backwardWithRecompute(fwd, bwd []int) []instr {
	redo := map[int][]bool{} // block -> nodes to recompute
	var stack []int
	mark := func(c int) {
		k := pl.block[c]
		if redo[k] == nil {
			redo[k] = make([]bool, len(pl.inputs))
		}
		if !redo[k][c] {
			redo[k][c] = true
			stack = append(stack, c)
		}
	}
	for _, b := range bwd {
		for _, c := range pl.inputs[b] {
			if pl.droppable(c) {
				mark(c)
			}
		}
	}
	for len(stack) > 0 { // close over the block-internal inputs of what is recomputed
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range pl.inputs[i] {
			if pl.droppable(c) && pl.block[c] == pl.block[i] {
				mark(c)
			}
		}
	}
	done := map[int]bool{}
	var prog []instr
	for _, b := range bwd {
		for _, c := range pl.inputs[b] {
			if k := pl.block[c]; pl.droppable(c) && !done[k] {
				done[k] = true
				for _, f := range fwd {
					if redo[k][f] {
						prog = append(prog, pl.step(f, true))
					}
				}
			}
		}
		prog = append(prog, pl.step(b, false))
	}
	return prog
}

// offloadGroup is the block an offloaded value travels with: its own block, or the block it feeds
// when it is a block input; -1 for values outside blocks.
func (pl *plan) offloadGroup(i int) int {
	if pl.inputOf[i] >= 0 {
		return pl.inputOf[i]
	}
	return pl.block[i]
}

// insertOffload moves every forward value of a block that the backward part reads to host memory
// after the block's forward, and brings the whole group back before backward first reads one.
func (pl *plan) insertOffload(prog []instr, nFwd int) []instr {
	uses := pl.useAnalysis(prog)
	blockEnd := map[int]int{}
	for p := range nFwd {
		if k := pl.block[prog[p].node]; k >= 0 {
			blockEnd[k] = p
		}
	}
	after := map[int][]int{}  // program index -> nodes to offload after it
	before := map[int][]int{} // program index -> nodes to restore before it
	groups := map[int][]int{}
	firstBwdUse := map[int]int{}
	for p := range nFwd {
		i := prog[p].node
		k := pl.offloadGroup(i)
		if k < 0 || pl.output[i] || pl.leaf[i] {
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
	out := make([]instr, 0, len(prog)+2*len(groups))
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

// analyse sorts g (every node after its inputs), checks the configured nodes and returns the plan.
func analyse(g *gorgonia.ExprGraph, cfg *config) ([]*gorgonia.Node, map[int64]int, *plan, error) {
	sorted, err := gorgonia.Sort(g)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("graphexec: sorting the graph: %w", err)
	}
	slices.Reverse(sorted)
	index := make(map[int64]int, len(sorted))
	for i, n := range sorted {
		index[n.ID()] = i
	}
	for _, o := range append(slices.Clone(cfg.outputs), cfg.forward...) {
		if _, ok := index[o.ID()]; !ok {
			return nil, nil, nil, fmt.Errorf("graphexec: node %v is not in the graph", o)
		}
	}
	if (cfg.recompute || cfg.offload) && (len(cfg.forward) == 0 || len(cfg.blockOf) == 0) {
		return nil, nil, nil, fmt.Errorf("%w: recompute and offload need forward roots and blocks", ErrUnsupported)
	}
	return sorted, index, newPlan(g, sorted, index, cfg), nil
}

// newPlan analyses g. sorted is g's nodes in topological order (every node after its inputs).
func newPlan(g *gorgonia.ExprGraph, sorted []*gorgonia.Node, index map[int64]int, cfg *config) *plan {
	n := len(sorted)
	pl := &plan{inputs: make([][]int, n), leaf: make([]bool, n), output: make([]bool, n),
		forward: make([]bool, n), block: make([]int, n), inputOf: make([]int, n)}
	for i, nd := range sorted {
		pl.leaf[i] = nd.Op() == nil
		pl.block[i], pl.inputOf[i] = -1, -1
		for it := g.From(nd.ID()); it.Next(); {
			pl.inputs[i] = append(pl.inputs[i], index[it.Node().ID()])
		}
	}
	for _, o := range cfg.outputs {
		pl.output[index[o.ID()]] = true
	}
	var stack []int
	for _, r := range cfg.forward {
		stack = append(stack, index[r.ID()])
	}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !pl.forward[i] {
			pl.forward[i] = true
			stack = append(stack, pl.inputs[i]...)
		}
	}
	pl.prune = len(cfg.forward) > 0
	if len(cfg.forward) == 0 { // plain topological order
		for i := range pl.forward {
			pl.forward[i] = true
		}
	}
	for i, nd := range sorted {
		if k, ok := cfg.blockOf[nd.ID()]; ok && pl.forward[i] && !pl.leaf[i] {
			pl.block[i] = k
		}
	}
	for k, in := range cfg.blockInputs {
		if i, ok := index[in.ID()]; ok {
			pl.inputOf[i] = k
		}
	}
	return pl
}

// peakLive simulates prog with the given bytes per node and returns the peak of live bytes, with
// views (reshapes, as isView says) sharing their input's buffer. It checks the program too: it
// returns -1 when a step reads a node that has no live instance.
func (pl *plan) peakLive(prog []instr, bytes func(int) int64, isView func(int) bool) int64 {
	type buf struct{ refs int }
	inst := make([]*buf, len(pl.inputs))
	size := map[*buf]int64{}
	var live, peak int64
	release := func(i int) {
		b := inst[i]
		inst[i] = nil
		if b == nil {
			return
		}
		if b.refs--; b.refs == 0 {
			live -= size[b]
			delete(size, b)
		}
	}
	for _, in := range prog {
		i := in.node
		switch in.code {
		case opExec:
			for _, c := range pl.inputs[i] {
				if inst[c] == nil {
					return -1
				}
			}
			if isView(i) {
				inst[i] = inst[pl.inputs[i][0]]
				inst[i].refs++
				break
			}
			fallthrough
		case opLoad, opRestore:
			b := &buf{refs: 1}
			if !pl.leaf[i] {
				size[b] = bytes(i)
				live += size[b]
			}
			inst[i] = b
		case opOffload:
			if inst[i] == nil {
				return -1
			}
			release(i)
		}
		peak = max(peak, live)
		for _, r := range slices.Clone(in.release) {
			release(r)
		}
	}
	return peak
}
