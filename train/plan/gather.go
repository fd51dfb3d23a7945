package plan

// insertGathers loads the leaves of each group of groups (a unit of sharded parameters, as ZeRO
// stage 3 and FSDP keep them) together, once per pass instead of once per program: right before
// the first forward step that reads any of them, and again right before the first backward step
// that does (a recomputation included). The use analysis then releases each forward instance after
// its last forward read and each backward one after its last backward read, so a unit is live only
// while the part of the pass that reads it runs, and an executor that gathers a unit at its first
// load and frees it at its last release gathers it at most twice per run. The forward part ends at
// the first Restore, recomputation or backward Exec.
func (gr *Graph) insertGathers(prog []Step, groups [][]int) []Step {
	if len(groups) == 0 {
		return prog
	}
	group := make([]int, gr.Len()) // leaf -> its group, -1 when not gathered
	for i := range group {
		group[i] = -1
	}
	for k, g := range groups {
		for _, i := range g {
			if i >= 0 && i < gr.Len() && gr.Leaf[i] && group[i] < 0 {
				group[i] = k
			}
		}
	}
	nFwd := len(prog)
	for p, s := range prog {
		if s.Op == Restore || (s.Op == Exec && (s.Recompute || !gr.Forward[s.Node])) {
			nFwd = p
			break
		}
	}
	pass := func(p int) int { // 0: forward, 1: backward
		if p < nFwd {
			return 0
		}
		return 1
	}
	// A group is loaded in a pass with only the members that pass reads.
	reads := make([][2]bool, gr.Len()) // leaf -> read in forward, in backward
	for p, s := range prog {
		if s.Op != Exec {
			continue
		}
		for _, c := range gr.Inputs[s.Node] {
			if group[c] >= 0 {
				reads[c][pass(p)] = true
			}
		}
	}
	before := map[int][]int{} // program index -> gathered leaves to load before it
	loaded := make([]bool, len(groups))
	for p, s := range prog {
		if p == nFwd {
			clear(loaded)
		}
		if s.Op != Exec {
			continue
		}
		for _, c := range gr.Inputs[s.Node] {
			if k := group[c]; k >= 0 && !loaded[k] {
				loaded[k] = true
				for _, i := range groups[k] {
					if i >= 0 && i < gr.Len() && group[i] == k && reads[i][pass(p)] {
						before[p] = append(before[p], i)
					}
				}
			}
		}
	}
	out := make([]Step, 0, len(prog)+len(before))
	for p, s := range prog {
		for _, i := range before[p] {
			out = append(out, Step{Op: Load, Node: i})
		}
		if s.Op == Load && group[s.Node] >= 0 {
			continue
		}
		out = append(out, s)
	}
	return out
}
