package stitch

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
	polled  uint64         // Engine.slowPaths at the last poll
}

type pendingEvent struct {
	ev      Event
	covered uint64 // frees recorded before it
}

// clockFor returns stream s's clock, making it if needed.
func (e *Engine) clockFor(s Stream) *streamClock {
	c := e.clocks[s]
	if c == nil {
		c = &streamClock{}
		e.clocks[s] = c
	}
	return c
}

// settled reports whether cached block b's stream is done with it: its free predates a
// Synchronize, or an event recorded after it has completed. With one stream, always.
func (e *Engine) settled(b *block) bool {
	if !e.multiStream || b.freeEpoch < e.epoch {
		return true
	}
	c := e.clockFor(b.stream)
	if b.freeSeq <= c.done {
		return true
	}
	e.poll(b.stream, c)
	return b.freeSeq <= c.done
}

// poll asks the driver, once per slow path, which of stream s's pending events have completed,
// and records a new one if frees since the newest are not covered.
func (e *Engine) poll(s Stream, c *streamClock) {
	if c.polled == e.slowPaths {
		return
	}
	c.polled = e.slowPaths
	e.pollPending(c)
	if c.freed <= c.done || len(c.pending) > 0 && c.pending[len(c.pending)-1].covered == c.freed ||
		len(c.pending) == maxPendingEvents {
		return
	}
	if e.recordOn(s, c) {
		e.pollPending(c) // a stream with nothing queued is done already
	}
}

// recordOn records an event on stream s covering every free so far; it reports whether it did.
func (e *Engine) recordOn(s Stream, c *streamClock) bool {
	ev, err := e.drv.recordEvent(s)
	if err != nil {
		e.log.Warn("stitch: record event failed; blocks freed on the stream wait for a later one", "err", err)
		return false
	}
	c.pending = append(c.pending, pendingEvent{ev: ev, covered: c.freed})
	return true
}

// pollPending queries c's pending events, newest first; the first complete one settles every free
// it covers, and it and every older event are destroyed.
func (e *Engine) pollPending(c *streamClock) {
	for i := len(c.pending) - 1; i >= 0; i-- {
		done, err := e.drv.eventDone(c.pending[i].ev)
		if err != nil || !done {
			continue
		}
		c.done = max(c.done, c.pending[i].covered)
		for _, p := range c.pending[:i+1] {
			e.destroyEvent(p.ev)
		}
		c.pending = append(c.pending[:0], c.pending[i+1:]...)
		return
	}
}

func (e *Engine) destroyEvent(ev Event) {
	if err := e.drv.destroyEvent(ev); err != nil {
		e.log.Warn("stitch: destroy event failed; retried later", "err", err)
		e.orphans = append(e.orphans, orphan{ev: ev})
	}
}

// dropClockEvents destroys every pending event (after a Synchronize, and at Close).
func (e *Engine) dropClockEvents() {
	for _, c := range e.clocks {
		for _, p := range c.pending {
			e.destroyEvent(p.ev)
		}
		c.pending = c.pending[:0]
	}
}
