package stitch

import "fmt"

// Free gives back the block at ptr; size must be the size given to Alloc.
func (e *Engine) Free(ptr uintptr, size uint64) error {
	e.mu.Lock()
	b := e.blocks.At(uint64(ptr))
	if e.closed || b == nil || !b.live || b.req != size {
		err := e.rejectFree(b, ptr, size)
		e.mu.Unlock()
		return err
	}
	e.cache(b)
	e.mu.Unlock()
	return nil
}

// rejectFree says why Free refuses ptr (b: the block at it, if any), counting the refusal. It is
// kept out of Free so that the formatting's stack frame is not Free's: a free that succeeds
// writes the fewest stack lines (results/bench/STEADY-CPU.md).
//
//go:noinline
func (e *Engine) rejectFree(b *block, ptr uintptr, size uint64) error {
	switch {
	case e.closed:
		return ErrClosed
	case b == nil:
		e.rejected++
		return fmt.Errorf("%w: %#x", ErrUnknownPointer, ptr)
	case !b.live:
		e.rejected++
		return fmt.Errorf("%w: %#x", ErrDoubleFree, ptr)
	default:
		e.rejected++
		return fmt.Errorf("%w: %#x was allocated with %d bytes, freed with %d", ErrSizeMismatch, ptr, b.req, size)
	}
}

// cache makes live block b a cached block of its size and stream.
func (e *Engine) cache(b *block) {
	e.setLive(b, false)
	e.live -= b.req
	e.liveBlocks--
	b.freeEpoch = e.epoch
	e.unsynced = true
	if e.multiStream {
		c := e.clockFor(b.stream)
		c.freed++
		b.freeSeq = c.freed
		if b.kind != small {
			e.noteFreedLarge(c, b)
		}
		if len(c.pending) == 0 {
			// The stream's clock is idle: start it here rather than at the next slow path, so
			// that the event completes as early as the stream allows.
			e.recordOn(b.stream, c)
		}
	}
	if b.list == nil {
		b.list = e.listFor(b.size, b.stream)
	}
	b.list.push(b)
	if b.kind == small {
		e.smallAge.pushNewest(b)
		e.smallCached(b)
	} else {
		e.largeAge.pushNewest(b)
	}
}

// flushUntil moves flushable cached blocks of one pool to its free ranges, highest address first
// (a canonical order: the lowest blocks, which free lists hand out first, stay cached), until one
// free range of at least r bytes forms; it reports whether one did. The blocks are taken from a
// max-heap of their first bytes, built in one pass: a miss that flushes a few blocks of a pool
// holding thousands costs a walk of the pool, not a sort of it.
func (e *Engine) flushUntil(age *ageList, r uint64) bool {
	if age == &e.smallAge {
		return e.flushSmallUntil(r)
	}
	h := e.flushHeap[:0]
	for b := age.oldest; b != nil; b = b.newer {
		h = append(h, flushCandidate{at: b.physStart(), b: b})
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
	found := false
	for len(h) > 0 {
		b := h[0].b
		last := len(h) - 1
		h[0], h[last] = h[last], flushCandidate{}
		h = h[:last]
		siftDown(h, 0)
		if e.flushable(b) && e.flush(b) >= r {
			found = true
			break
		}
	}
	clear(h)
	e.flushHeap = h[:0]
	return found
}

// flushSmallUntil is flushUntil for the small pool, from a heap kept between calls (smallHeap):
// a small miss that flushes a few blocks of a pool holding hundreds costs the blocks cached since
// the last one (smallFresh, pushed in), not a heap of the whole pool. Entries go stale when their
// block is reused or flushed (the serial tells a recycled struct) and are dropped when popped; a
// block cached again has two entries, of which the second popped is stale or skipped. The order
// of the blocks flushed is the same as from a heap of the cached blocks built afresh.
func (e *Engine) flushSmallUntil(r uint64) bool {
	h := e.smallHeap
	if e.smallHeapStale || len(h)+len(e.smallFresh) > 2*e.smallAge.n+smallHeapSlack {
		clear(h)
		h = h[:0]
		for b := e.smallAge.oldest; b != nil; b = b.newer {
			h = append(h, flushCandidate{at: b.physStart(), b: b, serial: b.serial})
		}
		for i := len(h)/2 - 1; i >= 0; i-- {
			siftDown(h, i)
		}
		e.smallHeapStale = false
	} else {
		for _, c := range e.smallFresh {
			h = siftUp(append(h, c))
		}
	}
	clear(e.smallFresh)
	e.smallFresh = e.smallFresh[:0]
	skipped := e.flushHeap[:0]
	found := false
	for len(h) > 0 {
		var c flushCandidate
		c, h = popMax(h)
		if b := c.b; b.serial != c.serial || b.live {
			continue // flushed (recycled) or reused since it was pushed
		} else if !e.flushable(b) {
			skipped = append(skipped, c) // cached still: a later call looks at it again
		} else if e.flush(b) >= r {
			found = true
			break
		}
	}
	for _, c := range skipped {
		h = siftUp(append(h, c))
	}
	clear(skipped)
	e.flushHeap = skipped[:0]
	e.smallHeap = h
	return found
}

// smallCached notes small block b, just cached, for flushSmallUntil's heap; past the heap's bound
// the heap is dropped, to be built afresh by the next small flush.
func (e *Engine) smallCached(b *block) {
	if e.smallHeapStale {
		return
	}
	if len(e.smallHeap)+len(e.smallFresh) >= 2*e.smallAge.n+smallHeapSlack {
		clear(e.smallHeap)
		clear(e.smallFresh)
		e.smallHeap, e.smallFresh, e.smallHeapStale = e.smallHeap[:0], e.smallFresh[:0], true
		return
	}
	e.smallFresh = append(e.smallFresh, flushCandidate{at: b.physStart(), b: b, serial: b.serial})
}

// flushCandidate is a cached block in flushUntil's heap, keyed by its first byte (block.physStart,
// distinct among the cached blocks of one pool: they own disjoint bytes), with its serial when it
// was pushed (flushSmallUntil).
type flushCandidate struct {
	at     uint64
	b      *block
	serial uint64
}

// popMax takes the top of max-heap h, and returns it and the heap left.
func popMax(h []flushCandidate) (flushCandidate, []flushCandidate) {
	top, last := h[0], len(h)-1
	h[0], h[last] = h[last], flushCandidate{}
	h = h[:last]
	siftDown(h, 0)
	return top, h
}

// siftUp restores the max-heap order of h after its last entry was appended, and returns h.
func siftUp(h []flushCandidate) []flushCandidate {
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if h[parent].at >= h[i].at {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
	return h
}

// siftDown restores the max-heap order of h below index i.
func siftDown(h []flushCandidate, i int) {
	for {
		top, l := i, 2*i+1
		if l < len(h) && h[l].at > h[top].at {
			top = l
		}
		if l+1 < len(h) && h[l+1].at > h[top].at {
			top = l + 1
		}
		if top == i {
			return
		}
		h[i], h[top] = h[top], h[i]
		i = top
	}
}

// flushable reports whether cached block b may serve other streams (see settled).
func (e *Engine) flushable(b *block) bool { return e.settled(b) }

// flush gives cached block b's bytes back to the free ranges and forgets it; it returns the size of
// the largest free range its bytes joined.
func (e *Engine) flush(b *block) uint64 {
	b.list.unlink(b)
	e.blocks.Delete(uint64(b.ptr))
	var merged uint64
	if b.kind == small {
		e.smallAge.unlink(b)
		merged = e.flushSmall(b)
	} else {
		e.largeAge.unlink(b)
		merged = e.releaseLarge(b)
	}
	e.recycle(b)
	return merged
}

// releaseLarge returns a large block's bytes to the loose set (its view, if stitched, goes idle);
// it returns the size of the largest loose range they joined.
func (e *Engine) releaseLarge(b *block) uint64 {
	if b.roomLive {
		e.vacate(b) // while its ranges are still known
		b.roomLive = false
	}
	if b.kind == primitive {
		s := span{start: b.pos, end: b.pos + b.size}
		e.owners.remove(s)
		return e.loose.insert(s).size()
	}
	var merged uint64
	window(b.view, b.voff, b.size, func(p span) bool {
		e.owners.remove(p)
		merged = max(merged, e.loose.insert(p).size())
		return true
	})
	b.view.users--
	b.view.held -= b.size
	if b.live {
		b.view.inUse -= b.size
	}
	return merged
}
