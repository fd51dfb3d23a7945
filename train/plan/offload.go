package plan

import (
	"maps"
	"slices"
)

// offloadGroup is the block an offloaded value travels with: its own block, or the block it feeds
// when it is a block input; -1 for values outside blocks.
func (gr *Graph) offloadGroup(i int) int {
	if gr.InputOf[i] >= 0 {
		return gr.InputOf[i]
	}
	return gr.Block[i]
}

// insertOffload moves every forward value of a block that the backward part reads to host memory
// after the block's forward (and after its last forward read), and brings the whole group back
// before backward first reads one of them. Leaves and outputs stay where they are.
func (gr *Graph) insertOffload(prog []Step, nFwd int) []Step {
	u := gr.useAnalysis(prog)
	blockEnd := map[int]int{}
	for p := range nFwd {
		if k := gr.Block[prog[p].Node]; k >= 0 {
			blockEnd[k] = p
		}
	}
	after := map[int][]int{}  // program index -> nodes to offload after it
	before := map[int][]int{} // program index -> nodes to restore before it
	groups := map[int][]int{}
	firstBwdUse := map[int]int{}
	for p := range nFwd {
		i := prog[p].Node
		k := gr.offloadGroup(i)
		if k < 0 || gr.Output[i] || gr.Leaf[i] {
			continue
		}
		bwdUses := u.readsAfter(p, nFwd)
		if len(bwdUses) == 0 {
			continue
		}
		at := max(u.lastBefore(p, nFwd), blockEnd[k], p)
		after[at] = append(after[at], i)
		groups[k] = append(groups[k], i)
		if f, ok := firstBwdUse[k]; !ok || bwdUses[0] < f {
			firstBwdUse[k] = bwdUses[0]
		}
	}
	for _, k := range slices.Sorted(maps.Keys(groups)) { // groups restored before one step: by block
		before[firstBwdUse[k]] = append(before[firstBwdUse[k]], groups[k]...)
	}
	out := make([]Step, 0, len(prog)+2*len(after))
	for p, s := range prog {
		for _, i := range before[p] {
			out = append(out, Step{Op: Restore, Node: i})
		}
		out = append(out, s)
		for _, i := range after[p] {
			out = append(out, Step{Op: Offload, Node: i})
		}
	}
	return out
}
