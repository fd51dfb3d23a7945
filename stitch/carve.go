package stitch

import (
	"cmp"
	"slices"
)

// Carving: a large block is made by taking its bytes out of the loose set (carveAt) and naming
// them in the owner index; releaseLarge gives them back. Where in the loose set a block goes
// (placement, lowestFit, looseFit) is the layout's choice among loose ranges that hold it; which
// range the request may take at all is the placement chain's (chain.go).

// carveAt makes the loose bytes [pos, pos+r) a primitive block.
func (l *layout) carveAt(pos, r uint64) *block {
	if !l.loose.take(pos, pos+r) {
		panic("stitch: carving bytes that are not loose")
	}
	return l.primitiveAt(pos, r)
}

// carveLowest takes r bytes from the start of the lowest loose range that holds them.
func (l *layout) carveLowest(r uint64) *block {
	pos, ok := l.lowestFit(r)
	if !ok {
		return nil
	}
	return l.carveAt(pos, r)
}

// looseFit returns where in the best-fitting loose range r bytes go (placement).
func (l *layout) looseFit(r uint64) (uint64, bool) {
	sp, ok := l.loose.bestFit(r)
	if !ok {
		return 0, false
	}
	return l.placement(sp, r), true
}

// lowestFit returns the first byte of the lowest loose range that holds r bytes.
func (l *layout) lowestFit(r uint64) (uint64, bool) {
	var sp span
	ok := false
	l.loose.byAddr.walk(func(s span) bool {
		if s.size() >= r {
			sp, ok = s, true
			return false
		}
		return true
	})
	return sp.start, ok
}

// partialLoss is how many bytes of free range s a stitch could not use if s were one of its middle
// pieces: the parts of s in handles it shares with other ranges.
func (l *layout) partialLoss(s span) uint64 {
	if s.size() == 0 {
		return 0
	}
	lo, hi := l.wholeHandles(s)
	if lo > hi {
		return s.size()
	}
	return lo - s.start + s.end - hi
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
func (l *layout) placement(sp span, r uint64) uint64 {
	pos := sp.start
	loss := l.partialLoss(span{start: sp.start + r, end: sp.end})
	if l.partialLoss(span{start: sp.start, end: sp.end - r}) < loss {
		pos = sp.end - r
	}
	return pos
}

// primitiveAt makes the arena bytes [pos, pos+r), in no free set and owned by no block, a
// primitive block.
func (l *layout) primitiveAt(pos, r uint64) *block {
	b := l.newBlock()
	b.kind, b.pos, b.size, b.ptr = primitive, pos, r, l.addressOf(home{off: pos})
	b.first = b.firstByte()
	l.owners.insertWith(span{start: pos, end: pos + r}, b)
	return b
}

// setLive marks b live or cached, keeping its view's count of live bytes and the room index.
func (l *layout) setLive(b *block, live bool) {
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
	l.roomChanged(b)
	b.live = live
}

// releaseLarge returns a large block's bytes to the loose set (its view, if stitched, goes idle);
// it returns the size of the largest loose range they joined.
func (l *layout) releaseLarge(b *block) uint64 {
	l.leaveRoom(b)
	if b.kind == primitive {
		s := span{start: b.pos, end: b.pos + b.size}
		l.owners.remove(s)
		return l.loose.insert(s).size()
	}
	var merged uint64
	window(b.view, b.voff, b.size, func(p span) bool {
		l.owners.remove(p)
		merged = max(merged, l.loose.insert(p).size())
		return true
	})
	b.view.users--
	b.view.held -= b.size
	if b.live {
		b.view.inUse -= b.size
	}
	return merged
}

// recarve makes b, a primitive block that uncache took out of the cache, the block of the r bytes
// from arena offset pos, once the bytes there are its own. The owner index's node of b is given
// the new span in place: its key moves from b's first byte to pos, which keeps the index's order,
// since b was the lowest block at the home and no other block lies between its first byte and
// the home's. b is then a new block (a new serial: homes that saw it see another block), under a
// new pointer if pos is not where it began, and stays in layout.blocks (indexed). A re-carve saves
// the owner index a delete and an insert, each a descent that is cold on a GPU host; where b began
// at pos it saves layout.blocks a delete and an insert as well. In the steady iterations of the
// H200 ResNet-18 loop 57% of the misses flush cached blocks at their place; such a take re-cuts
// the lowest of them when it is primitive.
func (l *layout) recarve(b *block, pos, r uint64) *block {
	n := l.owners.rekey(l.owners.floorAt(b.pos), pos)
	n.Value().s = span{start: pos, end: pos + r}
	ptr := b.ptr
	if pos != b.pos {
		l.blocks.Delete(uint64(b.ptr))
		ptr = l.addressOf(home{off: pos})
		l.blocks.Put(uint64(ptr), b)
	}
	l.serials++
	*b = block{ptr: ptr, size: r, kind: primitive, pos: pos, serial: l.serials, first: pos, roomQueue: b.roomQueue, indexed: true}
	return b
}

// giveBackOutside gives the bytes of arena range s that no span of pieces (disjoint, sorted by
// start) covers back to the loose set.
func (l *layout) giveBackOutside(s span, pieces []span) {
	i := 0 // the first piece ending after s.start: most places are one or two pieces, so a scan
	if len(pieces) > 8 {
		i, _ = slices.BinarySearchFunc(pieces, s.start, func(p span, x uint64) int { return cmp.Compare(p.end, x+1) })
	}
	for i < len(pieces) && pieces[i].end <= s.start {
		i++
	}
	at := s.start
	for ; i < len(pieces) && pieces[i].start < s.end; i++ {
		if pieces[i].start > at {
			l.loose.insert(span{start: at, end: pieces[i].start})
		}
		at = max(at, pieces[i].end)
	}
	if at < s.end {
		l.loose.insert(span{start: at, end: s.end})
	}
}

// dissolveInto forgets large block b, flushed for a block about to be made of the arena ranges
// pieces (sorted by start): it leaves the pointer, room and owner indexes and its view, and of its
// bytes only those outside pieces go back to the loose set (giveBackOutside).
func (l *layout) dissolveInto(b *block, pieces []span) {
	l.unindex(b)
	l.leaveRoom(b)
	l.eachArenaRange(b, func(s span) {
		l.owners.remove(s)
		l.giveBackOutside(s, pieces)
	})
	if b.kind == stitched {
		b.view.users--
		b.view.held -= b.size
	}
	l.recycle(b)
}

// takeLooseIn takes every loose byte inside the arena ranges pieces out of the loose set: the
// bytes of a place being taken that no flushed block passed on (takeHomeOver).
func (l *layout) takeLooseIn(pieces []span) {
	loose := l.takeBuf[:0]
	for _, p := range pieces {
		loose = loose[:0]
		l.loose.byAddr.overlapping(p.start, p.end, func(n *tnode) bool { loose = append(loose, n.s); return true })
		for _, s := range loose {
			if !l.loose.take(max(s.start, p.start), min(s.end, p.end)) {
				panic("stitch: taking a home whose bytes are not free")
			}
		}
	}
	l.takeBuf = loose[:0]
}

// leaveRoom takes block b, about to be flushed or re-cut, out of the room index where it counts
// as live.
func (l *layout) leaveRoom(b *block) {
	if b.roomLive {
		l.vacate(b) // while its ranges are still known
		b.roomLive = false
	}
}
