package plan

// Options selects the rewrites Compile applies.
type Options struct {
	Recompute bool // run each block's dropped forward values again before backward needs them
	Offload   bool // move each block's saved values to host memory between forward and backward
	Prune     bool // remove Load and Exec steps whose values nobody reads
}

// Compile returns the program for the nodes of order (a topological order; leaves in it become
// Load steps): the forward part (leaves and forward nodes) in order, then the backward part, with
// the rewrites of o, and every step's release points set.
func (gr *Graph) Compile(order []int, o Options) []Step { return gr.CompileGathered(order, o, nil) }

// CompileGathered is Compile with the leaves of each group of gather (node indices; a unit of
// sharded parameters, as ZeRO stage 3 and FSDP keep them) loaded together once per pass instead
// of once per program: before the first forward step reading one of them and again before the
// first backward step (a recomputation included), each instance released after its pass's last
// read, so the executor can all-gather a unit for the part of the pass that reads it and free it
// after. A leaf in no group, or in several (the first counts), is loaded as Compile loads it.
func (gr *Graph) CompileGathered(order []int, o Options, gather [][]int) []Step {
	var fwd, bwd []int
	for _, i := range order {
		if gr.Forward[i] || gr.Leaf[i] {
			fwd = append(fwd, i)
		} else {
			bwd = append(bwd, i)
		}
	}
	prog := make([]Step, 0, len(order))
	for _, i := range fwd {
		prog = append(prog, gr.step(i, false))
	}
	nFwd := len(prog)
	if o.Recompute {
		prog = append(prog, gr.backwardWithRecompute(fwd, bwd)...)
	} else {
		for _, i := range bwd {
			prog = append(prog, gr.step(i, false))
		}
	}
	if o.Offload {
		prog = gr.insertOffload(prog, nFwd)
	}
	prog = gr.insertGathers(prog, gather)
	for {
		u := gr.useAnalysis(prog)
		pruned := prog[:0:0]
		for p, s := range prog {
			if o.Prune && (s.Op == Load || s.Op == Exec) && !s.Recompute && u.dead[p] {
				continue
			}
			pruned = append(pruned, s)
		}
		if len(pruned) == len(prog) {
			gr.setReleases(prog, u)
			return prog
		}
		prog = pruned
	}
}

func (gr *Graph) step(i int, recompute bool) Step {
	if gr.Leaf[i] {
		return Step{Op: Load, Node: i}
	}
	return Step{Op: Exec, Node: i, Recompute: recompute}
}
