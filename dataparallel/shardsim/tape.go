package shardsim

// gradSink receives the parameter gradients a backward pass produces.
type gradSink interface {
	// paramGrad is called each time an op's backward produces a gradient of trainable parameter p.
	paramGrad(p int)
}

// pass is one execution of a segment: its values' allocation ids and who still needs them.
type pass struct {
	seg     *segment
	ids     []int64 // allocation of each value; 0 is the caller's input
	fwdUses []int   // forward consumers not yet run
	bwdUses []int   // backward ops that saved the value and have not run
	stats   []int64 // per op: saved statistics' allocation, -1 if none
	saved   bool
	ownsOut bool // the pass frees its output after backward (a recomputation's)
}

// forward runs seg on input (an allocation the caller owns and frees). With save, what the backward
// needs stays allocated; without (a checkpointed block outside its recomputation) every
// intermediate is freed at its last forward use. The output stays allocated either way.
func forward(r *recorder, seg *segment, input int64, save bool) *pass {
	n := len(seg.ops) + 1
	p := &pass{seg: seg, ids: make([]int64, n), fwdUses: make([]int, n), bwdUses: make([]int, n),
		stats: make([]int64, len(seg.ops)), saved: save}
	p.ids[0] = input
	for _, o := range seg.ops {
		for _, v := range o.in {
			p.fwdUses[v]++
		}
	}
	for i, o := range seg.ops {
		out := i + 1
		p.ids[out] = r.alloc(o.out)
		p.stats[i] = -1
		switch {
		case save && o.stats > 0:
			p.stats[i] = r.alloc(o.stats)
		case o.stats > 0:
			r.transient(o.stats, computeStream)
		}
		if save {
			if o.saveIn {
				for _, v := range o.in {
					p.bwdUses[v]++
				}
			}
			if o.saveOut {
				p.bwdUses[out]++
			}
		}
		for _, v := range o.in {
			p.fwdUses[v]--
			p.release(r, v)
		}
	}
	return p
}

// release frees value v when nothing needs it any more; the input and the output are not the
// pass's to free (the output is, after backward, for a recomputation).
func (p *pass) release(r *recorder, v int) {
	last := len(p.seg.ops)
	if v == 0 || (v == last && !p.ownsOut) || p.fwdUses[v] > 0 || p.bwdUses[v] > 0 || p.ids[v] < 0 {
		return
	}
	r.free(p.ids[v])
	p.ids[v] = -1
}

// backward runs the segment's backward pass from gradOut (the gradient of its output, which it
// frees) and returns the gradient of its input (-1 when the input needs none). Parameter
// gradients go to sink. The pass must have been run with save.
func backward(r *recorder, p *pass, gradOut int64, sink gradSink, trainable func(int) bool) int64 {
	seg := p.seg
	n := len(seg.ops) + 1
	grads := make([]int64, n)
	for i := range grads {
		grads[i] = -1
	}
	grads[n-1] = gradOut
	for i := len(seg.ops) - 1; i >= 0; i-- {
		o := seg.ops[i]
		out := i + 1
		r.transient(o.bwork, computeStream)
		for _, q := range o.params {
			if trainable(q) {
				sink.paramGrad(q)
			}
		}
		for _, v := range o.in {
			if v == 0 && !seg.gradIn {
				continue
			}
			if grads[v] < 0 { // the first contribution allocates; later ones accumulate in place
				grads[v] = r.alloc(valueBytes(seg, v))
			}
		}
		if grads[out] >= 0 {
			r.free(grads[out])
			grads[out] = -1
		}
		if p.stats[i] >= 0 {
			r.free(p.stats[i])
			p.stats[i] = -1
		}
		if o.saveIn {
			for _, v := range o.in {
				p.bwdUses[v]--
				p.release(r, v)
			}
		}
		if o.saveOut {
			p.bwdUses[out]--
			p.release(r, out)
		}
	}
	if p.ownsOut {
		p.release(r, n-1)
	}
	return grads[0]
}

// valueBytes is the size of value v of seg.
func valueBytes(seg *segment, v int) int64 {
	if v == 0 {
		return seg.inBytes
	}
	return seg.ops[v-1].out
}
