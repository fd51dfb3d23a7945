package stitch

import (
	"errors"
	"fmt"
)

// Alloc returns size bytes usable on stream s.
func (e *Engine) Alloc(size uint64, s Stream) (uintptr, error) {
	e.mu.Lock()
	if e.afterFree {
		e.afterFree = false
		if e.finder.trough(e.ctxNext, e.live, e.peakLive) {
			e.startFoundIteration()
		}
	}
	e.iterOrd++
	e.stepContext(size)
	// The exact-match path: a lookup, a list pop, a flag flip.
	var tried *freeList
	if s == e.hotStream && size-1 < e.capacity && !e.closed {
		r := (size + alignment - 1) &^ (alignment - 1)
		if l := e.hotLists.At(r); l != nil {
			if l.head != nil {
				b := e.pick(l, r)
				if e.payShapeFlush() {
					b = l.head
				}
				if b != nil {
					ptr := e.reuse(b, size)
					e.mu.Unlock()
					return ptr, nil
				}
			}
			tried = l
		}
	}
	ptr, err := e.allocSlow(size, s, tried)
	e.mu.Unlock()
	return ptr, err
}

// reuse hands cached block b out again for a request of size bytes.
func (e *Engine) reuse(b *block, size uint64) uintptr {
	e.takeCached(b)
	if b.kind != small && b.size >= e.cfg.smallThreshold { // memos hold large requests only
		e.recordPlace(b, false)
	}
	e.markLive(b, size)
	e.outcomes[OutcomeExact]++
	return b.ptr
}

func (e *Engine) markLive(b *block, size uint64) {
	e.setLive(b, true)
	b.req = size
	e.live += size
	e.peakLive = max(e.peakLive, e.live)
	e.liveBlocks++
}

// allocSlow serves a request the exact path did not. tried is the free list of its size that the
// exact path looked at and found nothing to take from, if it looked (then the list's pick is not
// made again: nothing has changed since).
func (e *Engine) allocSlow(size uint64, s Stream, tried *freeList) (uintptr, error) {
	if e.closed || size == 0 || size > e.capacity {
		return 0, e.refuse(size)
	}
	r := (size + alignment - 1) &^ (alignment - 1)
	e.slowPaths++
	if len(e.roomQueue) > roomQueueBound+2*e.blocks.Len() {
		// Only findIdle reads the room index, and brings it up to date itself; a miss served
		// elsewhere (a memo's place, a home) leaves the queue, where a block that went cached and
		// live again since costs nothing. This bounds the queue's memory.
		e.syncRoom()
	}
	if err := e.useStream(s); err != nil {
		return 0, err
	}
	var b *block
	var out Outcome
	var err error
	l := tried
	if l == nil {
		if l = e.listFor(r, s); l.head != nil {
			b = e.pick(l, r)
			if e.payShapeFlush() {
				b = l.head
			}
			if b != nil {
				return e.reuse(b, size), nil
			}
		}
	}
	// The flush a new shape owes may have emptied l (dominate.go).
	if l.head != nil {
		// The memo this iteration follows put this request where no cached block of its size is.
		h, under, ok := e.findMemo(r)
		known := !e.payShapeFlush() // a flush changed what lies at the place
		if ok {
			b, out = e.takeHomeOver(h, r, under, known), OutcomeSplit
			e.rememberLargeHome(b)
			e.recordPlace(b, false)
		} else if l.head != nil {
			return e.reuse(l.head, size), nil
		}
	}
	switch {
	case b != nil:
	case r < e.cfg.smallThreshold:
		b, out, err = e.allocSmall(r, s)
	default:
		if b, out, err = e.allocLarge(r, s); err == nil {
			e.recordPlace(b, false)
		}
	}
	if err != nil {
		return 0, failed(err, size)
	}
	b.stream = s
	if b.size == r {
		b.list = l // the list it is cached in when freed, looked up already
	}
	if !b.indexed { // a re-carved block is indexed already (recarve)
		e.index(b)
	}
	e.markLive(b, size)
	e.outcomes[out]++
	return b.ptr, nil
}

// refuse says why a request of size bytes is refused before any placement: the engine is
// closed, the size is 0, or it exceeds the capacity. It and failed are kept out of allocSlow so
// that their formatting's stack frame is not allocSlow's: a request served writes the fewest
// stack lines (results/bench/STEADY-CPU.md).
//
//go:noinline
func (e *Engine) refuse(size uint64) error {
	switch {
	case e.closed:
		return ErrClosed
	case size == 0:
		return ErrInvalidSize
	default:
		return fmt.Errorf("%w: %d bytes asked, capacity %d", ErrTooLarge, size, e.capacity)
	}
}

// failed is err, a placement's failure for a request of size bytes, with the request's size in
// it if it is an OutOfMemoryError.
//
//go:noinline
func failed(err error, size uint64) error {
	var oom *OutOfMemoryError
	if errors.As(err, &oom) {
		oom.Requested = size
	}
	return err
}

// allocLarge serves r bytes (r at least the small threshold, or a page) from the large pool.
func (e *Engine) allocLarge(r uint64, s Stream) (*block, Outcome, error) {
	b, out, err := e.placeLarge(r, s)
	if err == nil {
		e.rememberLargeHome(b)
	}
	return b, out, err
}

// outOfMemory describes why r bytes cannot be had; cause is the refusal.
func (e *Engine) outOfMemory(r uint64, cause error) *OutOfMemoryError {
	largest, _ := e.loose.largest()
	_, reach := e.stitchPlan(^uint64(0))
	free := e.loose.bytes + e.largeAge.bytes + e.smallFree.bytes + e.smallAge.bytes
	for b := e.largeAge.oldest; b != nil; b = b.newer {
		largest.end = max(largest.end, largest.start+b.size)
	}
	return &OutOfMemoryError{
		Rounded: r, FreeBytes: free, FreePieces: e.loose.len() + e.largeAge.n + e.smallFree.len() + e.smallAge.n,
		LargestPiece: largest.size(), Stitchable: reach, Reserved: e.reserved + e.orphanBytes, Capacity: e.capacity, Err: cause,
	}
}

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
	e.mu.Unlock()
	return nil
}

// belowPeakDeep reports whether the live bytes lie 1/deepTroughShare or more below their peak: a
// step's activations freed (deepFound).
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
	e.addCached(b)
}
