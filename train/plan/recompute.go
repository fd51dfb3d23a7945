package plan

// backwardWithRecompute emits the backward steps, running a block's dropped forward values again
// right before the first backward step that reads one of them.
func (gr *Graph) backwardWithRecompute(fwd, bwd []int) []Step {
	redo := map[int][]bool{} // block -> nodes to recompute
	var stack []int
	mark := func(c int) {
		k := gr.Block[c]
		if redo[k] == nil {
			redo[k] = make([]bool, gr.Len())
		}
		if !redo[k][c] {
			redo[k][c] = true
			stack = append(stack, c)
		}
	}
	for _, b := range bwd {
		for _, c := range gr.Inputs[b] {
			if gr.Droppable(c) {
				mark(c)
			}
		}
	}
	for len(stack) > 0 { // close over the block-internal inputs of what is recomputed
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range gr.Inputs[i] {
			if gr.Droppable(c) && gr.Block[c] == gr.Block[i] {
				mark(c)
			}
		}
	}
	done := map[int]bool{}
	var prog []Step
	for _, b := range bwd {
		for _, c := range gr.Inputs[b] {
			if k := gr.Block[c]; gr.Droppable(c) && !done[k] {
				done[k] = true
				for _, f := range fwd {
					if redo[k][f] {
						prog = append(prog, gr.step(f, true))
					}
				}
			}
		}
		prog = append(prog, gr.step(b, false))
	}
	return prog
}
