package stitch

import "slices"

// streamClock tells which frees of one stream the device has finished with, so that their bytes
// may serve other streams. Frees on the stream are numbered (block.freeSeq). An event covers every
// free numbered before it; one is recorded by a free that finds no event pending on its stream,
// and by a slow path that wants a cached block of the stream for other use and finds frees not yet
// covered. Slow paths poll the pending events, newest first (a stream completes its work in
// order). So most frees cost no driver call, and a slow path a few per stream at most.
type streamClock struct {
	freed   uint64         // frees on the stream so far
	done    uint64         // frees the device is known to be done with
	pending []pendingEvent // oldest first, at most maxPendingEvents
	polled  uint64         // blockCache.slowPaths at the last poll
	// freedLarge: the large blocks freed on the stream, in free order, that may still be cached
	// and unsettled (cache appends; unsettledLarge and noteFreedLarge drop the others); kept:
	// its length after the last compaction.
	freedLarge []freedBlock
	kept       int
}

// freedBlock is one free of a large block: the block, its serial and its free's number, so that
// an entry of a block since recycled, taken again or freed again reads as stale.
type freedBlock struct {
	b           *block
	serial, seq uint64
}

// stale reports whether f no longer stands for a cached block whose free the device may not be
// done with: the block was recycled, taken or freed again since, or the free is settled.
func (f freedBlock) stale(c *streamClock, epoch uint64) bool {
	b := f.b
	return b.serial != f.serial || b.live || b.freeSeq != f.seq || f.seq <= c.done || b.freeEpoch < epoch
}

// noteFreedLarge records the free of large block b on its stream, numbered already; once the
// record holds more than twice the entries the last compaction kept (and freedSlack more), the
// stale ones are dropped, so that it stays proportional to the stream's cached blocks.
func (bc *blockCache) noteFreedLarge(c *streamClock, b *block) {
	c.freedLarge = append(c.freedLarge, freedBlock{b: b, serial: b.serial, seq: b.freeSeq})
	if len(c.freedLarge) > 2*c.kept+freedSlack {
		c.freedLarge = slices.DeleteFunc(c.freedLarge, func(f freedBlock) bool { return f.stale(c, bc.epoch) })
		clear(c.freedLarge[len(c.freedLarge):cap(c.freedLarge)])
		c.kept = len(c.freedLarge)
	}
}

// unsettledLarge reports whether a large block freed on the stream is cached and not yet settled
// (settled would poll for it), dropping the settled entries at the front.
func (bc *blockCache) unsettledLarge(c *streamClock) bool {
	i := 0
	for i < len(c.freedLarge) && c.freedLarge[i].seq <= c.done {
		i++
	}
	if i > 0 {
		n := copy(c.freedLarge, c.freedLarge[i:])
		clear(c.freedLarge[n:])
		c.freedLarge = c.freedLarge[:n]
		c.kept = min(c.kept, n)
	}
	for _, f := range c.freedLarge {
		if !f.stale(c, bc.epoch) {
			return true
		}
	}
	return false
}

// pollUnsettled polls, in the order the streams were first used, every stream not polled in this
// slow path that has a cached large block not yet settled: the streams a walk over every block
// asking settled would poll. A search of the idle runs with several streams then looks only at the
// rooms (room.go), as with one, and makes the same driver calls as that walk.
func (bc *blockCache) pollUnsettled() {
	for _, s := range bc.clockOrder {
		if c := bc.clocks[s]; c.polled != bc.slowPaths && bc.unsettledLarge(c) {
			bc.poll(s, c)
		}
	}
}

type pendingEvent struct {
	ev      Event
	covered uint64 // frees recorded before it
}

// clockFor returns stream s's clock, making it if needed.
func (bc *blockCache) clockFor(s Stream) *streamClock {
	c := bc.clocks[s]
	if c == nil {
		c = &streamClock{}
		bc.clocks[s] = c
		bc.clockOrder = append(bc.clockOrder, s)
	}
	return c
}

// settled reports whether cached block b's stream is done with it: its free predates a
// Synchronize, or an event recorded after it has completed. With one stream, always.
func (bc *blockCache) settled(b *block) bool {
	if !bc.multiStream || b.freeEpoch < bc.epoch {
		return true
	}
	c := bc.clockFor(b.stream)
	if b.freeSeq <= c.done {
		return true
	}
	bc.poll(b.stream, c)
	return b.freeSeq <= c.done
}

// poll asks the driver, once per slow path, which of stream s's pending events have completed,
// and records a new one if frees since the newest are not covered.
func (bc *blockCache) poll(s Stream, c *streamClock) {
	if c.polled == bc.slowPaths {
		return
	}
	c.polled = bc.slowPaths
	bc.pollPending(c)
	if c.freed <= c.done || len(c.pending) > 0 && c.pending[len(c.pending)-1].covered == c.freed ||
		len(c.pending) == maxPendingEvents {
		return
	}
	if bc.recordOn(s, c) {
		bc.pollPending(c) // a stream with nothing queued is done already
	}
}

// recordOn records an event on stream s covering every free so far; it reports whether it did.
func (bc *blockCache) recordOn(s Stream, c *streamClock) bool {
	ev, err := bc.drv.recordEvent(s)
	if err != nil {
		bc.log.Warn("stitch: record event failed; blocks freed on the stream wait for a later one", "err", err)
		return false
	}
	c.pending = append(c.pending, pendingEvent{ev: ev, covered: c.freed})
	return true
}

// pollPending queries c's pending events, newest first; the first complete one settles every free
// it covers, and it and every older event are destroyed.
func (bc *blockCache) pollPending(c *streamClock) {
	for i := len(c.pending) - 1; i >= 0; i-- {
		done, err := bc.drv.eventDone(c.pending[i].ev)
		if err != nil || !done {
			continue
		}
		c.done = max(c.done, c.pending[i].covered)
		for _, p := range c.pending[:i+1] {
			bc.destroyEvent(p.ev)
		}
		c.pending = append(c.pending[:0], c.pending[i+1:]...)
		return
	}
}

// dropClockEvents destroys every pending event (after a Synchronize, and at Close).
func (bc *blockCache) dropClockEvents() {
	for _, c := range bc.clocks {
		for _, p := range c.pending {
			bc.destroyEvent(p.ev)
		}
		c.pending = c.pending[:0]
	}
}

func (bc *blockCache) synchronize() error {
	if err := bc.drv.synchronize(); err != nil {
		return err
	}
	bc.epoch++
	// Every free so far is done: pending events have nothing left to tell.
	for _, c := range bc.clocks {
		c.done = c.freed
	}
	bc.dropClockEvents()
	return nil
}
