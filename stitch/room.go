package stitch

import "math"

// The room index: the arena ranges no live large block owns, coalesced, by address and by size.
// An idle run (loose bytes and idle cached blocks, see idle.go) never crosses a live block, so it
// lies inside one room span; a query for idle runs of r bytes visits only the room spans of at
// least r bytes instead of every block of the arena. The index is kept as blocks go live and
// cached (setLive) and as live blocks give their bytes back (releaseLarge); Check verifies it
// against the owner index.
//
// The exact path only queues a block whose liveness changed (roomChanged); findIdle brings the
// index up to date (syncRoom) before it searches, so that an alloc+free pair costs no tree update,
// and neither does a miss served elsewhere (a memo's place, a home): in the steady iterations of a
// training loop most blocks queued between two searches are back where the index has them. A
// block leaving the arena (releaseLarge) gives its ranges back at once.

// roomAll is the whole offset space the room index starts as: every offset, no block live.
var roomAll = span{start: 0, end: math.MaxUint64}

func newRoom() *freeSet {
	f := newFreeSet()
	f.add(roomAll)
	return f
}

// roomChanged queues large block b, whose liveness is changing, for syncRoom.
func (e *Engine) roomChanged(b *block) {
	if !b.roomQueue && b.kind != small {
		b.roomQueue = true
		e.roomQueue = append(e.roomQueue, b)
	}
}

// syncRoom brings the room index up to date with the queued blocks. A queued block since recycled
// reads as neither live nor indexed, and one queued twice is brought up to date once: both do nothing.
func (e *Engine) syncRoom() {
	for _, b := range e.roomQueue {
		b.roomQueue = false
		if b.roomLive == b.live {
			continue
		}
		if b.live {
			e.occupy(b)
		} else {
			e.vacate(b)
		}
		b.roomLive = b.live
	}
	clear(e.roomQueue)
	e.roomQueue = e.roomQueue[:0]
}

// occupy takes the arena ranges of large block b, going live, out of the room index.
func (e *Engine) occupy(b *block) {
	e.eachArenaRange(b, func(s span) {
		if !e.room.take(s.start, s.end) {
			panic("stitch: a block going live over bytes another live block owns")
		}
	})
}

// vacate gives the arena ranges of large block b, no longer live, back to the room index.
func (e *Engine) vacate(b *block) {
	e.eachArenaRange(b, func(s span) { e.room.insert(s) })
}

// eachArenaRange calls fn on each arena range large block b owns (none for a small block).
func (e *Engine) eachArenaRange(b *block, fn func(span)) {
	switch b.kind {
	case primitive:
		fn(span{start: b.pos, end: b.pos + b.size})
	case stitched:
		window(b.view, b.voff, b.size, func(p span) bool { fn(span{start: p.start, end: p.end}); return true })
	}
}

// roomAtLeast calls fn on the room spans of at least r bytes, smallest first (equal sizes lowest
// address first), at most maxRoomScan of them.
func (e *Engine) roomAtLeast(r uint64, fn func(span)) {
	seen := 0
	e.room.bySize.ascend(span{start: 0, end: r}, func(n *tnode) bool {
		fn(n.s)
		seen++
		return seen < maxRoomScan
	})
}
