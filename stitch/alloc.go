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
	b.list.unlink(b)
	if b.kind == small {
		e.smallAge.unlink(b)
	} else {
		e.largeAge.unlink(b)
		if b.size >= e.cfg.smallThreshold { // memos hold large requests only
			e.recordPlace(b, false)
		}
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
	if !e.streamSeen {
		// The first stream used is the hot one, whichever it is; nothing is cached yet.
		e.hotStream, e.streamSeen = s, true
	}
	if s != e.hotStream && !e.multiStream {
		if err := e.enterMultiStream(); err != nil {
			return 0, err
		}
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
		e.blocks.Put(uint64(b.ptr), b)
		b.indexed = true
	}
	e.markLive(b, size)
	e.outcomes[out]++
	return b.ptr, nil
}

// enterMultiStream is the engine's first request on a stream other than the hot one. Blocks freed
// so far recorded no event, and their bytes may be loose already: one synchronize covers them.
// Without it no byte is safe for the new stream, so the request fails and the next one on another
// stream tries again.
//
//go:noinline
func (e *Engine) enterMultiStream() error {
	if err := e.synchronize(); err != nil {
		return fmt.Errorf("stitch: synchronize before serving a second stream: %w", err)
	}
	e.multiStream = true
	return nil
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

// listFor returns the free list of cached blocks of size r on stream s, making it if needed.
func (e *Engine) listFor(r uint64, s Stream) *freeList {
	lists := &e.hotLists
	if s != e.hotStream {
		if lists = e.otherLists[s]; lists == nil {
			lists = new(sizeLists)
			e.otherLists[s] = lists
		}
	}
	l := lists.At(r)
	if l == nil {
		l = &freeList{}
		lists.Put(r, l)
	}
	return l
}

// allocLarge serves r bytes (r at least the small threshold, or a page) from the large pool.
func (e *Engine) allocLarge(r uint64, s Stream) (*block, Outcome, error) {
	b, out, err := e.placeLarge(r, s)
	if err == nil {
		e.rememberLargeHome(b)
	}
	return b, out, err
}

// carveLowest takes r bytes from the start of the lowest loose range that holds them.
func (e *Engine) carveLowest(r uint64) *block {
	pos, ok := e.lowestFit(r)
	if !ok {
		return nil
	}
	return e.carveAt(pos, r)
}

// lowestFit returns the first byte of the lowest loose range that holds r bytes.
func (e *Engine) lowestFit(r uint64) (uint64, bool) {
	var sp span
	ok := false
	e.loose.byAddr.walk(func(s span) bool {
		if s.size() >= r {
			sp, ok = s, true
			return false
		}
		return true
	})
	return sp.start, ok
}

// carveLarge takes r bytes from the best-fitting loose range (looseFit).
func (e *Engine) carveLarge(r uint64) *block {
	pos, ok := e.looseFit(r)
	if !ok {
		return nil
	}
	return e.carveAt(pos, r)
}

// looseFit returns where in the best-fitting loose range r bytes go (placement).
func (e *Engine) looseFit(r uint64) (uint64, bool) {
	sp, ok := e.loose.bestFit(r)
	if !ok {
		return 0, false
	}
	return e.placement(sp, r), true
}

// carveAt makes the loose bytes [pos, pos+r) a primitive block.
func (e *Engine) carveAt(pos, r uint64) *block {
	if !e.loose.take(pos, pos+r) {
		panic("stitch: carving bytes that are not loose")
	}
	return e.primitiveAt(pos, r)
}

// primitiveAt makes the arena bytes [pos, pos+r), in no free set and owned by no block, a
// primitive block.
func (e *Engine) primitiveAt(pos, r uint64) *block {
	b := e.newBlock()
	b.kind, b.pos, b.size, b.ptr = primitive, pos, r, e.addressOf(home{off: pos})
	b.first = b.firstByte()
	e.owners.insertWith(span{start: pos, end: pos + r}, b)
	return b
}

// placement chooses where in free range sp a block of r bytes goes: at its start or at its end,
// whichever leaves the free remainder fewer bytes that a stitch could not use. (Ending the block on
// a chunk boundary inside the range was tried too; on the shared traces it never won.) Measured at
// release 0.5.6 and not taken: the range chosen among the best fit and the next 8 or 64 by size
// as the one whose placement leaves the fewest free bytes in handles that were wholly free and
// that the block now pins (the distillation loop's binding request finds 203 MB free inside
// 3-chunk handles that 1.1 MiB blocks pin): that loop 1.0242 -> 1.0184 × its peak, R3D-18 1.0154
// -> 1.0104, but capacity worse on 18 and 21 of the 39 traces and better on 11 and 9 (gmlake-bench
// replay --min-capacity, marked): where a block pins a handle is decided when it is placed, but
// what the pin strands is decided by the frees that come after.
func (e *Engine) placement(sp span, r uint64) uint64 {
	pos := sp.start
	loss := e.partialLoss(span{start: sp.start + r, end: sp.end})
	if e.partialLoss(span{start: sp.start, end: sp.end - r}) < loss {
		pos = sp.end - r
	}
	return pos
}

// partialLoss is how many bytes of free range s a stitch could not use if s were one of its middle
// pieces: the parts of s in handles it shares with other ranges.
func (e *Engine) partialLoss(s span) uint64 {
	if s.size() == 0 {
		return 0
	}
	lo, hi := e.wholeHandles(s)
	if lo > hi {
		return s.size()
	}
	return lo - s.start + s.end - hi
}

// setLive marks b live or cached, keeping its view's count of live bytes and the room index.
func (e *Engine) setLive(b *block, live bool) {
	if b.live == live {
		return
	}
	if b.kind == stitched {
		if live {
			b.view.inUse += b.size
		} else {
			b.view.inUse -= b.size
		}
	}
	e.roomChanged(b)
	b.live = live
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
