package plan

// uses is a use analysis of a program: every value instance (one production of a node's value by
// a Load, Exec or Restore step) with the steps that read it.
type uses struct {
	node     []int   // instance -> node
	producer []int   // instance -> step that produced it
	reads    [][]int // instance -> steps reading it, ascending, each once
	final    []bool  // instance -> it is the node's last instance in the program
	at       []int   // step -> instance produced there, -1 if none
	dead     []bool  // step -> produces an instance nobody reads that is not a kept output
}

// useAnalysis pairs each instance with its readers: an Exec reads the current instances of its
// inputs, an Offload reads its node's and ends it.
func (gr *Graph) useAnalysis(prog []Step) *uses {
	u := &uses{at: make([]int, len(prog)), dead: make([]bool, len(prog))}
	cur := make([]int, gr.Len()) // node -> its current instance, -1 if none
	for i := range cur {
		cur[i] = -1
	}
	read := func(i, p int) {
		if j := cur[i]; j >= 0 && (len(u.reads[j]) == 0 || u.reads[j][len(u.reads[j])-1] != p) {
			u.reads[j] = append(u.reads[j], p)
		}
	}
	for p, s := range prog {
		u.at[p] = -1
		switch s.Op {
		case Exec:
			for _, c := range gr.Inputs[s.Node] {
				read(c, p)
			}
		case Offload:
			read(s.Node, p)
			cur[s.Node] = -1
		}
		if !s.produces() {
			continue
		}
		u.node = append(u.node, s.Node)
		u.producer = append(u.producer, p)
		u.reads = append(u.reads, nil)
		u.final = append(u.final, false)
		cur[s.Node] = len(u.node) - 1
		u.at[p] = cur[s.Node]
	}
	for _, j := range cur {
		if j >= 0 {
			u.final[j] = true
		}
	}
	for j := range u.node {
		if len(u.reads[j]) == 0 && !(u.final[j] && gr.Output[u.node[j]]) {
			u.dead[u.producer[j]] = true
		}
	}
	return u
}

// readsAfter lists the reads at or after step from of the instance produced at step p.
func (u *uses) readsAfter(p, from int) []int {
	var out []int
	for _, r := range u.reads[u.at[p]] {
		if r >= from {
			out = append(out, r)
		}
	}
	return out
}

// lastBefore is the last read before step end of the instance produced at step p, or p.
func (u *uses) lastBefore(p, end int) int {
	last := p
	for _, r := range u.reads[u.at[p]] {
		if r < end {
			last = r
		}
	}
	return last
}

// setReleases records on each step which instances die after it: at their last read, or right
// after production when nothing reads them. The final instances of outputs are kept.
func (gr *Graph) setReleases(prog []Step, u *uses) {
	for p := range prog {
		prog[p].Release = nil
	}
	for j, i := range u.node {
		if u.final[j] && gr.Output[i] {
			continue
		}
		at := u.producer[j]
		if r := u.reads[j]; len(r) > 0 {
			at = r[len(r)-1]
		}
		prog[at].Release = append(prog[at].Release, i)
	}
}
