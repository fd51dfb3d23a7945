package graphexec

// uses is a use analysis: every value instance (one production of a node's value by a load, exec
// or restore step) with the steps that read it.
type uses struct {
	node     []int   // instance -> node
	producer []int   // instance -> step that produced it
	reads    [][]int // instance -> steps reading it, ascending
	final    []bool  // instance -> it is the node's last instance
	at       []int   // step -> instance produced there, -1 if none
	dead     []bool  // step -> produces an instance nobody reads that is not a kept output
}

func (pl *plan) useAnalysis(prog []instr) *uses {
	u := &uses{at: make([]int, len(prog)), dead: make([]bool, len(prog))}
	cur := make([]int, len(pl.inputs))
	for i := range cur {
		cur[i] = -1
	}
	read := func(i, p int) {
		if j := cur[i]; j >= 0 && (len(u.reads[j]) == 0 || u.reads[j][len(u.reads[j])-1] != p) {
			u.reads[j] = append(u.reads[j], p)
		}
	}
	for p, in := range prog {
		u.at[p] = -1
		if in.code == opExec {
			for _, c := range pl.inputs[in.node] {
				read(c, p)
			}
		}
		if in.code == opOffload {
			read(in.node, p)
			cur[in.node] = -1
			continue
		}
		u.node = append(u.node, in.node)
		u.producer = append(u.producer, p)
		u.reads = append(u.reads, nil)
		u.final = append(u.final, false)
		cur[in.node] = len(u.node) - 1
		u.at[p] = cur[in.node]
	}
	for _, j := range cur {
		if j >= 0 {
			u.final[j] = true
		}
	}
	for j := range u.node {
		if len(u.reads[j]) == 0 && !(u.final[j] && pl.output[u.node[j]]) {
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
func (pl *plan) setReleases(prog []instr, u *uses) {
	for p := range prog {
		prog[p].release = nil
	}
	for j, i := range u.node {
		if u.final[j] && pl.output[i] {
			continue
		}
		at := u.producer[j]
		if r := u.reads[j]; len(r) > 0 {
			at = r[len(r)-1]
		}
		prog[at].release = append(prog[at].release, i)
	}
}
