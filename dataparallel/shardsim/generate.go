package shardsim

import (
	"fmt"
	"math/rand/v2"

	"github.com/gmlake/gmlake/dataparallel/zero"
	"github.com/gmlake/gmlake/trace"
)

// Breakdown is what one rank holds for the whole run, in bytes.
type Breakdown struct {
	Params       int64 `json:"params"`        // bf16 working parameters (replica, or shard at stage 3)
	FrozenParams int64 `json:"frozen_params"` // bf16 frozen base weights (LoRA), replicated below stage 3
	Master       int64 `json:"master"`        // fp32 master weights of the shard
	Optimizer    int64 `json:"optimizer"`     // AdamW moments of the shard
	Trainable    int64 `json:"trainable"`     // trainable elements of the model (not bytes)
	ShardElems   int64 `json:"shard_elems"`   // elements of one shard
	PeakActive   int64 `json:"peak_active"`   // peak of requested live bytes over the trace
	SeqLens      []int `json:"seq_lens"`      // padded sequence length of each step
	Received     int64 `json:"received"`      // bytes received by gradient reduce-scatters, all steps
}

// Generate simulates w's steps on rank w.Me and returns the allocation trace, one iteration marker
// per step, after a setup phase (parameters, their flattening, fp32 master shard).
func Generate(w Workload) (*trace.Trace, Breakdown, error) {
	w, err := w.Normalize()
	if err != nil {
		return nil, Breakdown{}, err
	}
	m := newModel(w.Model, w.LoRA, w.Rank)
	layout, err := zero.NewLayout(m.trainableSizes(), w.Ranks, w.Align)
	if err != nil {
		return nil, Breakdown{}, fmt.Errorf("shardsim: %w", err)
	}
	r := newRecorder()
	br := setup(w, m, layout, r)
	rng := rand.New(rand.NewPCG(w.Seed, uint64(w.Me)))
	segCache := make(map[int][]segment)
	var st *rankState
	for step := range w.Steps {
		r.iteration(step)
		seq := w.SeqMin + 8*rng.IntN((w.SeqMax-w.SeqMin)/8+1)
		br.SeqLens = append(br.SeqLens, seq)
		segs, ok := segCache[seq]
		if !ok {
			segs = segments(m, w.MicroBatch, seq)
			segCache[seq] = segs
		}
		if st == nil {
			st = newRankState(w, m, layout, r, segs)
		}
		runStep(w, st, segs, int64(w.MicroBatch*seq))
	}
	br.PeakActive = int64(r.peak)
	if st != nil {
		br.Received = st.received
	}
	t := &trace.Trace{
		Name:   w.Name(),
		Header: []string{fmt.Sprintf(" workload %s rank %d of %d (simulated by dataparallel/shardsim)", w.Name(), w.Me, w.Ranks)},
		Events: r.events,
	}
	return t, br, nil
}

// segments lists a step's segments: embedding, one per block, head.
func segments(m *model, batch, seq int) []segment {
	segs := []segment{embedSegment(m, batch, seq)}
	for i := range m.cfg.Layers {
		segs = append(segs, blockSegment(m, i, batch, seq))
	}
	return append(segs, headSegment(m, batch, seq))
}

// setup allocates what lives for the whole run. Stages 1 and 2 build the model per parameter,
// flatten the trainable parameters into one padded bf16 buffer and free the originals (DeepSpeed's
// flattening); frozen parameters stay as they are. Stage 3 holds only its shard of every
// parameter (built partitioned, as deepspeed.zero.Init does). Every stage keeps an fp32 master
// copy of its shard.
func setup(w Workload, m *model, layout *zero.Layout, r *recorder) Breakdown {
	br := Breakdown{ShardElems: int64(layout.ShardLen), Trainable: int64(layout.Total)}
	shard := int64(layout.ShardLen)
	if w.Stage == Stage3 {
		br.Params = r.allocKeep(shard * half)
		if frozen := m.frozenElems(); frozen > 0 {
			br.FrozenParams = r.allocKeep(ceilDiv(frozen, int64(w.Ranks)) * half)
		}
	} else {
		var built []int64
		for _, p := range m.params {
			id := r.alloc(p.elems * half)
			if p.trainable {
				built = append(built, id)
			} else {
				br.FrozenParams += p.elems * half
			}
		}
		br.Params = r.allocKeep(int64(layout.Padded) * half)
		for _, id := range built {
			r.free(id)
		}
	}
	br.Master = r.allocKeep(shard * single)
	br.Optimizer = 2 * shard * single
	return br
}

// allocKeep allocates bytes for the rest of the run and returns the size.
func (r *recorder) allocKeep(bytes int64) int64 {
	r.alloc(bytes)
	return bytes
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// runStep simulates one training step of tokens tokens: forward (checkpointed or not), backward
// with the gradient reduction of w.Stage, optimizer step.
func runStep(w Workload, st *rankState, segs []segment, tokens int64) {
	r := st.r
	gather := func(seg *segment) int64 { return gatherParams(w, st.m, r, seg) }
	release := func(id int64) {
		if id >= 0 {
			r.free(id)
		}
	}
	last := len(segs) - 1
	ids := r.alloc(tokens * 8)

	passes := make([]*pass, len(segs))
	acts := make([]int64, len(segs)) // acts[i]: the input of segment i (ids for the embedding)
	acts[0] = ids
	for i := range segs {
		g := gather(&segs[i])
		save := !w.Recompute || i == 0 || i == last
		passes[i] = forward(r, &segs[i], acts[i], save)
		release(g)
		if i < last {
			acts[i+1] = passes[i].ids[len(segs[i].ops)]
		}
	}
	loss := passes[last].ids[len(segs[last].ops)]

	st.beginBackward()
	grad := r.alloc(single) // d loss / d loss
	for i := last; i >= 0; i-- {
		g := gather(&segs[i])
		p := passes[i]
		if !p.saved {
			p = forward(r, &segs[i], acts[i], true)
			p.ownsOut = true
		}
		grad = backward(r, p, grad, st, st.trainable)
		release(g)
		if i == last {
			r.free(loss)
		}
		r.free(acts[i]) // the segment's input: a block's checkpoint, or the token ids
	}
	st.endBackward()
	st.optimizerStep()
}

// gatherParams all-gathers a segment's parameters at stage 3 into one bf16 staging buffer and
// returns its allocation (-1 below stage 3, or when the segment has no parameters).
func gatherParams(w Workload, m *model, r *recorder, seg *segment) int64 {
	if w.Stage != Stage3 {
		return -1
	}
	seen := make(map[int]bool)
	var elems int64
	for _, o := range seg.ops {
		for _, p := range o.params {
			if !seen[p] {
				seen[p] = true
				elems += m.params[p].elems
			}
		}
	}
	if elems == 0 {
		return -1
	}
	return r.allocOn(elems*half, w.commStream())
}
