package stitch

// New shapes: an iteration whose script no memo has (or dominates, dominate.go) is laid out from
// coalesced free memory.
//
// With dynamic padding a run meets new shapes for a long time (a longer batch, a new length), and
// the first iteration of each is placed by the usual rules (alloc.go) while the cache is full of
// the blocks of the shapes before it. Those hold sizes this iteration does not ask for; an idle
// window flushes only what lies under it, so the new shape is laid out in the holes between them.
// At its peak what is free is then hundreds of holes between live blocks, each with a partial
// chunk at both ends that a stitch cannot use (a view maps whole chunks): on LoRA without
// recomputation 150-180 MB in ~180-290 pieces, 1.1-1.6% of the peak. So when a request of a new
// shape fits no loose range, home or view window, every cached large block is flushed and the
// request is carved first-fit from the now coalesced free memory: the shape is laid out as a fresh
// first-fit allocator would lay it out, long-lived blocks low, and a large request at its peak
// finds few large free ranges. The small pool's pages go the other way, to the top of the arena
// (small.go), so that they do not land in places the large blocks' memos give.
//
// Without marks nothing changes: an unmarked run has no notion of a shape, and flushing the cache
// at every miss would stop its layout from repeating.
//
// The steady iterations that stitch without a new peak are new shapes (on the six traces of
// make bench whose largest steady iteration calls the driver without one, every such stitch):
// their first fit lays smaller blocks over the pieces of the views that the large blocks of the
// shapes before them used, and a large block of a size seen before is stitched again. Keeping the
// cached stitched blocks of at least an eighth of the peak through the flush, so that such a
// request finds its block, was measured at 0.5.0 (27 traces with a PyTorch step, marked): no
// target met on more traces; gpt2medium's largest steady iteration 13.6 -> 11.9 ms and wav2vec
// 2.0's 4.5 -> 3.1, but the accumulation GPT-2 needs 1.0094 × its peak instead of 1.0048 and
// bert-base 1.0039 instead of 1.0018. Not taken.

// newShape reports whether the current iteration is of a shape no memo has: marked, and following
// no memo (memoPlace found none that agrees with it or dominates it so far).
func (e *Engine) newShape() bool {
	return e.iter.phase == memoChoosing || e.iter.phase == memoNewShape
}

// flushForNewShape makes room for the first fit of a new shape's request (proposeLowest): it
// flushes every cached large block that may be flushed, and reports false (nothing to lay out
// anew) when the iteration is no new shape or nothing is cached.
func (e *Engine) flushForNewShape(uint64) bool {
	if !e.newShape() || e.largeAge.n == 0 {
		return false
	}
	e.flushUntil(&e.largeAge, ^uint64(0))
	return true
}
