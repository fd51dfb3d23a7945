package shardsim

import "github.com/gmlake/gmlake/dataparallel/zero"

// rankState is the ZeRO bookkeeping of one rank while its step is simulated: which gradients are
// allocated, the reduction bucket, the gradient shard and the optimizer state.
type rankState struct {
	w      Workload
	m      *model
	layout *zero.Layout
	r      *recorder

	grads    map[int]int64 // parameter -> its bf16 gradient's allocation, while it has one
	usesLeft []int         // backward uses of each parameter not yet run in this step
	uses     []int         // backward uses of each parameter per step

	bucket       int64 // the reduction bucket's allocation (stages 2, 3), -1 outside backward
	bucketElems  int64 // its capacity
	bucketFill   int64 // elements copied in since the last reduction
	bucketParams []int
	gradShard    int64 // fp32 reduced gradient of this rank's shard, -1 when not allocated
	moments      [2]int64
	received     int64 // bytes received by reduce-scatters so far (for tests: a shard per step)
}

func newRankState(w Workload, m *model, layout *zero.Layout, r *recorder, segs []segment) *rankState {
	s := &rankState{w: w, m: m, layout: layout, r: r, grads: make(map[int]int64),
		uses: make([]int, len(m.params)), usesLeft: make([]int, len(m.params)), bucket: -1, gradShard: -1,
		moments: [2]int64{-1, -1}}
	for _, seg := range segs {
		for _, o := range seg.ops {
			for _, p := range o.params {
				if m.params[p].trainable {
					s.uses[p]++
				}
			}
		}
	}
	s.bucketElems = min(w.BucketElems, int64(layout.Padded))
	return s
}

func (s *rankState) trainable(p int) bool { return s.m.params[p].trainable }

// paramGrad implements gradSink: the first gradient of a step allocates, later ones accumulate;
// after the parameter's last use the gradient is ready for reduction.
func (s *rankState) paramGrad(p int) {
	if _, ok := s.grads[p]; !ok {
		s.grads[p] = s.r.alloc(s.m.params[p].elems * half)
	}
	s.usesLeft[p]--
	if s.usesLeft[p] == 0 && s.w.Stage != zero.Stage1 {
		s.toBucket(p)
	}
}

// beginBackward resets the step's counters and, for stages 2 and 3, allocates the bucket that
// gradients are copied into as they become ready (DeepSpeed's contiguous_gradients buffer).
func (s *rankState) beginBackward() {
	copy(s.usesLeft, s.uses)
	if s.w.Stage != zero.Stage1 {
		s.bucket = s.r.alloc(s.bucketElems * half)
	}
}

// toBucket copies a ready gradient into the bucket (reducing the bucket first when it would
// overflow) and frees the gradient.
func (s *rankState) toBucket(p int) {
	elems := s.m.params[p].elems
	if s.bucketFill > 0 && s.bucketFill+elems > s.bucketElems {
		s.reduceBucket()
	}
	s.bucketFill += elems
	s.bucketParams = append(s.bucketParams, p)
	s.r.free(s.grads[p])
	delete(s.grads, p)
	if s.bucketFill >= s.bucketElems {
		s.reduceBucket()
	}
}

// reduceBucket reduce-scatters the bucket: this rank receives, in a bf16 staging buffer, the summed
// elements of its own shard that the bucket holds, and adds them into its fp32 gradient shard.
func (s *rankState) reduceBucket() {
	if s.bucketFill == 0 {
		return
	}
	if s.gradShard < 0 {
		s.gradShard = s.r.alloc(int64(s.layout.ShardLen) * single)
	}
	var mine int64
	lo, hi := s.layout.Shard(s.w.Me)
	for _, p := range s.bucketParams {
		slot := s.layout.Params[s.m.params[p].flat]
		mine += int64(max(0, min(hi, slot.Offset+slot.Len)-max(lo, slot.Offset)))
	}
	s.r.transient(mine*half, s.w.commStream())
	s.received += mine * half
	s.bucketFill, s.bucketParams = 0, s.bucketParams[:0]
}

// endBackward finishes the gradient reduction: stages 2 and 3 reduce what is left in the bucket
// and free it; stage 1 all-reduces the full gradients through a bucket, copies its own shard to
// fp32 and frees the bf16 gradients.
func (s *rankState) endBackward() {
	if s.w.Stage != zero.Stage1 {
		s.reduceBucket()
		s.r.free(s.bucket)
		s.bucket = -1
		return
	}
	s.r.transient(s.bucketElems*half, computeStream)
	s.gradShard = s.r.alloc(int64(s.layout.ShardLen) * single)
	for p := range s.m.params {
		if id, ok := s.grads[p]; ok {
			s.r.free(id)
			delete(s.grads, p)
		}
	}
}

// optimizerStep runs AdamW on the shard: the moments are allocated at the first step (as PyTorch
// creates optimizer state lazily), the update takes a shard-sized temporary (the denominator),
// then the gradient shard is freed. The updated shard is cast into the bf16 parameters and
// all-gathered in place, which allocates nothing.
func (s *rankState) optimizerStep() {
	shard := int64(s.layout.ShardLen) * single
	if s.moments[0] < 0 {
		s.moments = [2]int64{s.r.alloc(shard), s.r.alloc(shard)}
	}
	s.r.transient(shard, computeStream)
	if s.gradShard >= 0 {
		s.r.free(s.gradShard)
		s.gradShard = -1
	}
}
