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
	if !e.afterFree && !e.callerMarks {
		e.finder.peak(e.live) // the live bytes peak here: the first free after a request
		e.afterFree = true
	}
	e.cache(b)
	if e.callerMarks && !e.deepMarked && e.belowPeakDeep() {
		e.deepMarked = true
	}
	e.mu.Unlock()
	return nil
}

// belowPeakDeep reports whether the live bytes lie 1/deepTroughShare or more below their peak: a
// step's activations freed (deepMarked, deepFound).
func (e *Engine) belowPeakDeep() bool { return (e.peakLive-e.live)*deepTroughShare >= e.peakLive }

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

// flushSmallPool gives every flushable cached small block back to its page (a small block is
// flushable unless another stream may still use its bytes: settled). It reports whether any was.
//
// A small request that misses the cache flushes the whole small pool rather than until one free
// range holds it, as PyTorch's small pool coalesces every freed block at once: a partial flush
// leaves the pool's free bytes in pieces between the blocks still cached, best fit then lays the
// pool out differently from one repetition of the script to the next, and a small pool that fits
// in one repetition needs a page more in a later one. Measured (TestMemoConvergesOnGPUTrainTraces
// with 2 MiB handles, the GPT-2 XL LoRA gpu-train trace, whose small requests change with the
// sequence length, played four times): flushing until one range holds the request grows the
// pool by 18 pages in the fourth repetition; flushing the pool grows it in the first two only,
// to fewer pages (147 against 168).
func (e *Engine) flushSmallPool() bool {
	flushed := false
	for b := e.smallAge.oldest; b != nil; {
		next := b.newer
		if e.flushable(b) {
			e.flush(b)
			flushed = true
		}
		b = next
	}
	return flushed
}

// flushCandidate is a cached block in flushUntil's heap, keyed by its first byte (block.physStart,
// distinct among the cached blocks of one pool: they own disjoint bytes).
type flushCandidate struct {
	at uint64
	b  *block
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
	e.unindex(b)
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
