package stitch

import "slices"

// home is a place where a block of some size once lay: bytes [off, off+size) of the arena
// (v == nil) or of view v.
type home struct {
	v   *view
	off uint64
}

// rememberHome records where large block b lies, as a place for later requests of its size; the
// list of a size is ordered least recently used first.
func (e *Engine) rememberHome(b *block) {
	h := b.place()
	hs := e.homes[b.size]
	if i := slices.Index(hs, h); i >= 0 {
		// The most recently used last.
		copy(hs[i:], hs[i+1:])
		hs[len(hs)-1] = h
		return
	}
	if len(hs) == maxHomes {
		hs = append(hs[:0], hs[1:]...)
	}
	e.homes[b.size] = append(hs, h)
}

// findHome returns the place where a block of r bytes lay before that no live block uses now and
// whose taking flushes the fewest cached bytes, the most recently used of those. A training loop
// asks for the same sizes every iteration; sending each request back where its size lay keeps the
// layout from drifting, so that the views made in the first iterations keep fitting.
func (e *Engine) findHome(r uint64) (home, bool) { return e.findHomeBut(r, nil) }

// findHomeBut is findHome without the homes skip reports.
func (e *Engine) findHomeBut(r uint64, skip func(home) bool) (home, bool) {
	hs := e.homes[r]
	var best home
	bestCost := ^uint64(0)
	found := false
	kept := hs[:0]
	for _, h := range hs {
		if h.v == nil || !h.v.gone {
			kept = append(kept, h)
		}
	}
	if len(kept) < len(hs) {
		clear(hs[len(kept):])
		e.homes[r] = kept
	}
	// Most recently used first: the first of the cheapest wins, and one that flushes nothing ends
	// the search.
	for i := len(kept) - 1; i >= 0 && bestCost > 0; i-- {
		if skip != nil && skip(kept[i]) {
			continue
		}
		if cost, ok := e.homeCost(kept[i], r, bestCost); ok && cost < bestCost {
			best, bestCost, found = kept[i], cost, true
		}
	}
	return best, found
}

// homeCost reports whether no live block uses home h (r bytes), every byte there exists and the
// cached blocks there hold fewer than limit bytes, and how many they hold.
func (e *Engine) homeCost(h home, r, limit uint64) (uint64, bool) {
	var cost uint64
	ok := true
	check := func(p span) bool {
		at := p.start
		e.owners.overlapping(p.start, p.end, func(n *tnode) bool {
			if n.s.start > at {
				if _, free := e.loose.containing(at, n.s.start); !free {
					ok = false
					return false
				}
			}
			if !e.idle(n.b) {
				ok = false
				return false
			}
			cost += n.b.size
			if cost >= limit {
				ok = false
				return false
			}
			at = n.s.end
			return true
		})
		if ok && at < p.end {
			_, ok = e.loose.containing(at, p.end)
		}
		return ok
	}
	if h.v == nil {
		check(span{start: h.off, end: h.off + r})
	} else {
		window(h.v, h.off, r, check)
	}
	return cost, ok
}

// takeHome flushes the cached blocks at home h and makes it a block of r bytes.
func (e *Engine) takeHome(h home, r uint64) *block {
	pieces := e.placeBuf[:0]
	if h.v != nil {
		window(h.v, h.off, r, func(p span) bool { pieces = append(pieces, p); return true })
	} else {
		pieces = append(pieces, span{start: h.off, end: h.off + r})
	}
	e.flushUnder(pieces)
	e.placeBuf = pieces[:0]
	if h.v != nil {
		return e.takeView(h.v, h.off, r)
	}
	return e.carveAt(h.off, r)
}

// idle reports whether large block b may be flushed to make room: cached and, with several
// streams, settled.
func (e *Engine) idle(b *block) bool { return !b.live && e.flushable(b) }
