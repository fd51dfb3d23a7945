package stitch

import "slices"

// home is a place where a block of some size once lay: bytes [off, off+size) of the arena
// (v == nil) or of view v.
type home struct {
	v   *view
	off uint64
}

// homeEntry is a remembered home, with the live block last found using it: while that block is
// live the home is not free, and findHome skips it without a walk of the owner index. (In the
// steady iterations of the shared traces about 85% of the homes a search looks at are held by a
// live block, most of them by the same block as at the search before.)
type homeEntry struct {
	at      home
	blocker *block // a live block using the place when last looked at, or nil
	serial  uint64 // blocker's serial then: a recycled block struct reads as another block
}

// blocked reports whether the block last found using the home still does.
func (h *homeEntry) blocked() bool {
	return h.blocker != nil && h.blocker.serial == h.serial && h.blocker.live
}

// rememberHome records where large block b lies, as a place for later requests of its size; the
// list of a size is ordered least recently used first.
func (e *Engine) rememberHome(b *block) {
	h := homeEntry{at: b.place(), blocker: b, serial: b.serial} // b is there, or about to go live there
	hs := e.homes[b.size]
	if i := slices.IndexFunc(hs, func(x homeEntry) bool { return x.at == h.at }); i >= 0 {
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
		if h.at.v == nil || !h.at.v.gone {
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
		h := &kept[i]
		if h.blocked() || skip != nil && skip(h.at) {
			continue
		}
		cost, ok, blocker := e.homeCost(h.at, r, bestCost)
		if blocker != nil {
			h.blocker, h.serial = blocker, blocker.serial
		}
		if ok && cost < bestCost {
			best, bestCost, found = h.at, cost, true
		}
	}
	return best, found
}

// homeCost reports whether no live block uses home h (r bytes), every byte there exists and the
// cached blocks there hold fewer than limit bytes, and how many they hold; blocker is the live
// block it found there, if that is why not.
func (e *Engine) homeCost(h home, r, limit uint64) (cost uint64, ok bool, blocker *block) {
	ok = true
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
				if n.b.live {
					blocker = n.b
				}
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
	return cost, ok, blocker
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
