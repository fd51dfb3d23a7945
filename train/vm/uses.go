package vm

// useInfo is the result of a use analysis: every value instance (one production of a node's value by
// an exec or restore step) with the program steps that read it.
type useInfo struct {
	node     []int   // instance -> node
	producer []int   // instance -> program index that produced it
	reads    [][]int // instance -> program indices reading it, ascending
	final    []bool  // instance -> it is the node's last instance in the program
	at       []int   // program index -> instance produced there, -1 if none
	dead     []bool  // program index -> produces an instance nobody reads that is not a kept output
}

func (gi *graphInfo) useAnalysis(prog []instr) *useInfo {
	u := &useInfo{at: make([]int, len(prog)), dead: make([]bool, len(prog))}
	cur := make([]int, len(gi.nodes))
	for i := range cur {
		cur[i] = -1
	}
	read := func(i, p int) {
		if j := cur[i]; j >= 0 {
			u.reads[j] = append(u.reads[j], p)
		}
	}
	produce := func(i, p int) {
		u.node = append(u.node, i)
		u.producer = append(u.producer, p)
		u.reads = append(u.reads, nil)
		u.final = append(u.final, false)
		cur[i] = len(u.node) - 1
		u.at[p] = cur[i]
	}
	for p, in := range prog {
		u.at[p] = -1
		switch in.code {
		case opExec:
			for _, c := range in.inputs {
				read(c, p)
			}
			produce(in.node, p)
		case opOffload:
			read(in.node, p)
			cur[in.node] = -1
		case opRestore:
			produce(in.node, p)
		}
	}
	for _, j := range cur {
		if j >= 0 {
			u.final[j] = true
		}
	}
	for j := range u.node {
		if len(u.reads[j]) == 0 && !(u.final[j] && gi.output[u.node[j]]) {
			u.dead[u.producer[j]] = true
		}
	}
	return u
}

// readsAfter lists the reads at or after program index from of the instance produced at p.
func (u *useInfo) readsAfter(p, from int) []int {
	var out []int
	for _, r := range u.reads[u.at[p]] {
		if r >= from {
			out = append(out, r)
		}
	}
	return out
}

// lastBefore is the last read before program index end of the instance produced at p, or p.
func (u *useInfo) lastBefore(p, end int) int {
	last := p
	for _, r := range u.reads[u.at[p]] {
		if r < end {
			last = r
		}
	}
	return last
}

// setReleases records, on each step, which instances die after it: at their last read, or right
// after production when nothing reads them. The final instances of outputs are kept.
func (gi *graphInfo) setReleases(prog []instr, u *useInfo) {
	for p := range prog {
		prog[p].release = nil
	}
	for j, i := range u.node {
		if u.final[j] && gi.output[i] {
			continue
		}
		at := u.producer[j]
		if r := u.reads[j]; len(r) > 0 {
			at = r[len(r)-1]
		}
		prog[at].release = append(prog[at].release, i)
	}
}
