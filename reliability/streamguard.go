package reliability

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/gmlake/gmlake/stitch"
)

// Errors of the stream guard.
var (
	// ErrEarlyReuse: bytes freed on one stream were handed to another before the device was known
	// to be done with them (an event recorded after the free completed, or a Synchronize).
	ErrEarlyReuse = errors.New("reliability: bytes reused on another stream before their event")
	// ErrEarlyRelease: physical memory holding bytes freed on a stream was released before the
	// device was known to be done with them.
	ErrEarlyRelease = errors.New("reliability: memory released while a stream may still use it")
)

// StreamGuard holds the physical bytes of blocks freed on a stream until the driver says the
// stream is past the free: an event recorded on that stream after the free reads as done, or a
// Synchronize returns. Until then the bytes may still be read or written by work queued on the
// stream (the caller frees a block as soon as it has queued its last use), so they may be handed
// out again on that stream only, and their physical memory must not be released.
//
// The Tracker tells it what the driver says (Recorded, Done, Synchronized, Releasing); the Harness
// tells it what the caller frees (Freed) and what the engine hands out (HandOut). It knows nothing
// of the engine: it checks the engine's promise, not its bookkeeping. Safe for concurrent use.
type StreamGuard struct {
	mu         sync.Mutex
	clock      uint64                                           // frees so far
	inFlight   map[stitch.Stream]map[stitch.PhysHandle][]flight // freed bytes not known done
	events     map[stitch.Event]eventMark                       // recorded events not yet known done
	violations []error                                          // ErrEarlyRelease found in driver calls
	disarmed   bool                                             // Close: the engine gives everything back regardless
}

type flight struct {
	at            uint64 // the guard's clock at the free
	offset, bytes uint64
}

type eventMark struct {
	stream stitch.Stream
	at     uint64 // frees before it (clock values below at) are covered
}

// NewStreamGuard makes a guard holding nothing.
func NewStreamGuard() *StreamGuard {
	return &StreamGuard{events: make(map[stitch.Event]eventMark), inFlight: make(map[stitch.Stream]map[stitch.PhysHandle][]flight)}
}

// Freed records that the caller freed a block of stream s made of ranges. Earlier frees of the
// same bytes on s are dropped: whatever settles the new one settles them.
func (g *StreamGuard) Freed(s stitch.Stream, ranges []PhysRange) {
	g.mu.Lock()
	defer g.mu.Unlock()
	byHandle := g.inFlight[s]
	if byHandle == nil {
		byHandle = make(map[stitch.PhysHandle][]flight)
		g.inFlight[s] = byHandle
	}
	for _, r := range ranges {
		fs := byHandle[r.Handle]
		kept := fs[:0]
		for _, f := range fs {
			if f.offset < r.Offset || f.offset+f.bytes > r.Offset+r.Length {
				kept = append(kept, f)
			}
		}
		byHandle[r.Handle] = append(kept, flight{at: g.clock, offset: r.Offset, bytes: r.Length})
	}
	g.clock++
}

// Recorded notes that event ev was recorded on stream s: it covers every free so far.
func (g *StreamGuard) Recorded(ev stitch.Event, s stitch.Stream) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.events[ev] = eventMark{stream: s, at: g.clock}
}

// Done notes that the driver reported ev complete: the frees of its stream before it are settled.
func (g *StreamGuard) Done(ev stitch.Event) {
	g.mu.Lock()
	defer g.mu.Unlock()
	m, ok := g.events[ev]
	if !ok {
		return
	}
	delete(g.events, ev)
	for h, fs := range g.inFlight[m.stream] {
		kept := fs[:0]
		for _, f := range fs {
			if f.at >= m.at {
				kept = append(kept, f)
			}
		}
		if len(kept) == 0 {
			delete(g.inFlight[m.stream], h)
		} else {
			g.inFlight[m.stream][h] = kept
		}
	}
}

// Destroyed notes that ev was destroyed: it will tell nothing more.
func (g *StreamGuard) Destroyed(ev stitch.Event) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.events, ev)
}

// Synchronized notes that a Synchronize returned: every free so far is settled.
func (g *StreamGuard) Synchronized() {
	g.mu.Lock()
	defer g.mu.Unlock()
	clear(g.inFlight)
	clear(g.events)
}

// HandOut checks a new live block of stream s at ptr: none of its bytes may be in flight on
// another stream. It returns an ErrEarlyReuse error naming the first such byte range.
func (g *StreamGuard) HandOut(s stitch.Stream, ptr uintptr, ranges []PhysRange) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for other, byHandle := range g.inFlight {
		if other == s {
			continue
		}
		for _, r := range ranges {
			for _, f := range byHandle[r.Handle] {
				if f.offset < r.Offset+r.Length && r.Offset < f.offset+f.bytes {
					return fmt.Errorf("%w: block %#x on stream %d holds bytes [%d, %d) of handle %d, freed on stream %d",
						ErrEarlyReuse, ptr, s, max(r.Offset, f.offset), min(r.Offset+r.Length, f.offset+f.bytes), r.Handle, other)
				}
			}
		}
	}
	return nil
}

// Releasing checks a Release of physical allocation h: no byte of it may be in flight. A
// violation is kept for Err (the call goes ahead: the guard only watches).
func (g *StreamGuard) Releasing(h stitch.PhysHandle) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.disarmed {
		return
	}
	for s, byHandle := range g.inFlight {
		if fs := byHandle[h]; len(fs) > 0 {
			g.violations = append(g.violations, fmt.Errorf("%w: handle %d released with bytes [%d, %d) freed on stream %d not known done",
				ErrEarlyRelease, h, fs[0].offset, fs[0].offset+fs[0].bytes, s))
			return
		}
	}
}

// Released notes that h was released: its bytes are no longer anyone's.
func (g *StreamGuard) Released(h stitch.PhysHandle) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, byHandle := range g.inFlight {
		delete(byHandle, h)
	}
}

// Disarm stops release checks: Close gives every driver object back, even when it could not wait
// for the device.
func (g *StreamGuard) Disarm() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.disarmed = true
}

// Pending lists the events recorded and not yet reported done, oldest first.
func (g *StreamGuard) Pending() []stitch.Event {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]stitch.Event, 0, len(g.events))
	for ev := range g.events {
		out = append(out, ev)
	}
	slices.Sort(out)
	return out
}

// InFlight is the number of freed byte ranges not yet known done.
func (g *StreamGuard) InFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, byHandle := range g.inFlight {
		for _, fs := range byHandle {
			n += len(fs)
		}
	}
	return n
}

// Err returns the violations found in driver calls so far, and forgets them.
func (g *StreamGuard) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	err := errors.Join(g.violations...)
	g.violations = nil
	return err
}
