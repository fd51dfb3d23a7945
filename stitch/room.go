package stitch

import (
	"math"

	"github.com/gmlake/gmlake/internal/treap"
)

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
//
// Each room span carries a bound in the size index (its treap weight, MaxUint64 minus the bound, so
// that a subtree's largest weight is its smallest bound): no idle window in the room flushes fewer
// cached bytes. It is 0 when the room holds loose bytes, else the smallest cached block there (a
// window covers a piece of some cached block, which it flushes whole; every block there counts, a
// live one the index has yet to take out too), and 0 as well past roomBoundBlocks blocks, so that
// working it out costs O(log n). It is worked out when the span joins the size index, with the
// blocks and loose ranges as they are then. Later, only new loose bytes (roomLoosened sets it to
// 0; a room at 0 already is noted so, tnode.boundZero, and the one it last found, roomHint, costs
// no lookup while the index is unchanged) and new blocks can lower it: flushing a cached block
// turns its bytes loose, and a block made
// since the last syncRoom (over a flushed block's bytes, say, which never turned loose) that is
// cached when syncRoom sees it lowers its rooms' bounds to its size (roomCached). A block already
// counted stays counted while it lives, cached or live. A bound too low is still a bound. findIdle passes over every room whose bound is above the cost of
// the best window it has found: the subtrees of such rooms are skipped whole, so the split of a
// cached hole looks at the few rooms that can be cheaper, however many holes there are. Check
// verifies every bound against a walk of its room.

// roomAll is the whole offset space the room index starts as: every offset, no block live.
var roomAll = span{start: 0, end: math.MaxUint64}

// newRoom makes the room index of an empty arena: one room, roomAll, bounded by 0.
func (l *layout) newRoom() *freeSet {
	f := newFreeSet()
	f.add(roomAll)
	f.bySize.reweigh(roomAll, math.MaxUint64)
	f.bySize.weigh = l.roomWeight
	return f
}

// roomWeight is room span s's weight in the size index: MaxUint64 minus its bound.
func (l *layout) roomWeight(s span) uint64 {
	return math.MaxUint64 - l.roomBound(s, roomBoundBlocks, nil)
}

// roomBound is a lower bound on the cached bytes that an idle window in room span s flushes: 0
// when s holds loose bytes or more than limit blocks, else the size of the smallest block there,
// and MaxUint64 when s holds neither loose bytes nor blocks (it has no window). Blocks skip
// reports (if set) are left out.
func (l *layout) roomBound(s span, limit int, skip func(*block) bool) uint64 {
	loose := false
	l.loose.byAddr.overlapping(s.start, s.end, func(*tnode) bool { loose = true; return false })
	if loose {
		return 0
	}
	bound := uint64(math.MaxUint64)
	seen := 0
	l.owners.overlapping(s.start, s.end, func(n *tnode) bool {
		if seen++; seen > limit {
			bound = 0
			return false
		}
		if skip == nil || !skip(n.b) {
			bound = min(bound, n.b.size)
		}
		return true
	})
	return bound
}

// roomHint is a room span whose bound is 0, as roomLoosened last found it, and the room index's
// change count then: while the count is the same the span is still a room and its bound still 0
// (a bound rises only when its room changes), so new loose bytes inside it change nothing and
// cost no lookup. In the steady iterations of a training loop the rooms change only when
// syncRoom runs, and every flushed block's rest lands in a room already bounded by 0.
type roomHint struct {
	in      *freeSet // the room index it was found in (Reset makes a new one)
	changes uint64
	s       span
}

// roomLoosened lowers to 0 the bound of every room span that loose range s, just added to the
// loose set, overlaps.
func (l *layout) roomLoosened(s span) {
	h := &l.roomHint
	if h.in == l.room && h.changes == l.room.changes && h.s.start <= s.start && s.end <= h.s.end {
		return
	}
	rooms := 0
	var last span
	l.room.byAddr.overlapping(s.start, s.end, func(n *tnode) bool {
		if !n.boundZero {
			l.room.bySize.reweigh(n.s, math.MaxUint64)
			n.boundZero = true
		}
		rooms++
		last = n.s
		return true
	})
	if rooms == 1 {
		*h = roomHint{in: l.room, changes: l.room.changes, s: last}
	}
}

// roomChanged queues large block b, whose liveness is changing, for syncRoom.
func (l *layout) roomChanged(b *block) {
	if !b.roomQueue && b.kind != small {
		b.roomQueue = true
		l.roomQueue = append(l.roomQueue, b)
	}
}

// syncRoom brings the room index up to date with the queued blocks. A queued block since recycled
// reads as neither live nor indexed, and one queued twice is brought up to date once: both do nothing.
func (l *layout) syncRoom() {
	for _, b := range l.roomQueue {
		b.roomQueue = false
		if b.roomLive == b.live {
			continue
		}
		if b.live {
			l.occupy(b)
		} else {
			l.vacate(b)
		}
		b.roomLive = b.live
	}
	for _, b := range l.roomQueue {
		if !b.live && b.serial > l.roomSerial && b.size > 0 { // new since the last sync, cached, not recycled
			l.roomCached(b)
		}
	}
	clear(l.roomQueue)
	l.roomQueue = l.roomQueue[:0]
	l.roomSerial = l.serials
}

// roomCached lowers the bound of every room span holding bytes of cached block b to b's size.
func (l *layout) roomCached(b *block) {
	w := math.MaxUint64 - b.size
	l.eachArenaRange(b, func(p span) {
		l.room.byAddr.overlapping(p.start, p.end, func(n *tnode) bool {
			if old, _ := l.room.bySize.weight(n.s); old < w {
				l.room.bySize.reweigh(n.s, w)
			}
			return true
		})
	})
}

// occupy takes the arena ranges of large block b, going live, out of the room index.
func (l *layout) occupy(b *block) {
	l.eachArenaRange(b, func(s span) {
		if !l.room.take(s.start, s.end) {
			panic("stitch: a block going live over bytes another live block owns")
		}
	})
}

// vacate gives the arena ranges of large block b, no longer live, back to the room index.
func (l *layout) vacate(b *block) {
	l.eachArenaRange(b, func(s span) { l.room.insert(s) })
}

// eachArenaRange calls fn on each arena range large block b owns (none for a small block).
func (l *layout) eachArenaRange(b *block, fn func(span)) {
	switch b.kind {
	case primitive:
		fn(span{start: b.pos, end: b.pos + b.size})
	case stitched:
		window(b.view, b.voff, b.size, func(p span) bool { fn(span{start: p.start, end: p.end}); return true })
	}
}

// roomAtLeast calls fn on the room spans of at least r bytes whose bound is at most below(),
// smallest first (equal sizes lowest address first), at most maxRoomScan of them. below may fall
// (never rise) as fn goes; the rooms whose bound is above it are passed over, uncounted.
func (l *layout) roomAtLeast(r uint64, below func() uint64, fn func(span)) {
	seen := 0
	atLeast := func() uint64 { return math.MaxUint64 - below() }
	l.room.bySize.ascendHeavy(span{start: 0, end: r}, atLeast, func(n *tnode) bool {
		fn(n.s)
		seen++
		return seen < maxRoomScan
	})
}

// noBound is a bound for roomAtLeast that passes over no room.
func noBound() uint64 { return math.MaxUint64 }

// checkRoomBounds reports every room span whose bound is above what a walk of its room gives,
// leaving out the blocks the next syncRoom is to count (roomCached).
func (l *layout) checkRoomBounds(c *checker) {
	pending := func(b *block) bool { return b.roomQueue && b.serial > l.roomSerial }
	l.room.bySize.t.Ascend(func(n *treap.Node[tnode]) bool {
		s := n.Value.s
		if got, want := math.MaxUint64-n.Weight(), l.roomBound(s, math.MaxInt, pending); got > want {
			c.fail("room index: %+v is bounded by %d cached bytes, but a window there may flush %d", s, got, want)
		}
		return true
	})
}
