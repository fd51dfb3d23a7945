package stitch

import (
	"cmp"
	"slices"

	"github.com/gmlake/gmlake/internal/intmap"
)

// home is a place where a block of some size once lay: bytes [off, off+size) of the arena
// (v == nil) or of view v.
type home struct {
	v   *view
	off uint64
}

// homeEntry is a remembered home, with a block last found using it (its witness). While the
// witness is live the home is not free; while it is cached there, taking the home flushes at least
// its bytes. So findHome passes over a home whose witness is live, or cached and no smaller than
// the cheapest home found so far, without a walk of the owner index, and chooses what a walk of
// every home chooses. (In the steady iterations of the held-out T5 trace, 1.45 million homes were
// walked in 7,190 searches, 200 a search, 83% of them to find a live block there and 17% a cached
// block costlier than the best; with witnesses 0.6% of them are walked.)
type homeEntry struct {
	at      home
	witness *block // a block using the place when last looked at, or nil
	serial  uint64 // witness's serial then: a recycled block struct reads as another block
	dead    bool   // used again later, forgotten, or in a released view (homeList)
}

// passOver reports whether findHome may pass over the home without a look, with best the bytes
// the cheapest home found so far flushes: its witness is still there, and live or costing best or more.
func (h *homeEntry) passOver(best uint64) bool {
	w := h.witness
	return w != nil && w.serial == h.serial && (w.live || w.size >= best)
}

// homeList is the remembered homes of one size in order of use, least recently used first. A home
// used again moves to the end, and its old entry is left dead rather than the entries after it
// shifted; the index finds a home's live entry, so that remembering one is a map lookup, not a
// walk of up to maxHomes entries. Dead entries are dropped when they outnumber the live ones.
type homeList struct {
	entries []homeEntry
	// the live entry of each home: of the arena by its offset (an intmap, as every miss looks
	// one up), of a view by the home (find, set, unset)
	inArena intmap.Map[int]
	inViews map[home]int
	live    int // entries not dead
	first   int // no live entry before it
	// pruned: layout.viewsReleased when the homes in released views were last dropped; while it
	// is still the count, no live entry lies in a released view.
	pruned uint64
}

func newHomeList(pruned uint64) *homeList {
	return &homeList{inViews: make(map[home]int), pruned: pruned}
}

// find returns the index of home h's live entry.
func (l *homeList) find(h home) (int, bool) {
	if h.v == nil {
		i, ok := l.inArena.Get(h.off)
		return i, ok
	}
	i, ok := l.inViews[h]
	return i, ok
}

// set makes entry i home h's live entry.
func (l *homeList) set(h home, i int) {
	if h.v == nil {
		l.inArena.Put(h.off, i)
	} else {
		l.inViews[h] = i
	}
}

// unset forgets home h's live entry.
func (l *homeList) unset(h home) {
	if h.v == nil {
		l.inArena.Delete(h.off)
	} else {
		delete(l.inViews, h)
	}
}

// indexed is the number of homes the index holds.
func (l *homeList) indexed() int { return l.inArena.Len() + len(l.inViews) }

// kill makes entry i dead.
func (l *homeList) kill(i int) {
	l.entries[i].dead = true
	l.unset(l.entries[i].at)
	l.live--
}

// compact drops the dead entries when they outnumber the live ones.
func (l *homeList) compact() {
	if len(l.entries)-l.live <= l.live+16 {
		return
	}
	kept := l.entries[:0]
	for _, h := range l.entries {
		if !h.dead {
			l.set(h.at, len(kept))
			kept = append(kept, h)
		}
	}
	clear(l.entries[len(kept):])
	l.entries, l.first = kept, 0
}

// rememberHome records where large block b lies, as a place for later requests of its size, the
// most recently used of its size.
func (e *Engine) rememberHome(b *block) {
	h := homeEntry{at: b.place(), witness: b, serial: b.serial} // b is there, or about to go live there
	l := e.homes.At(b.size)
	if l == nil {
		l = newHomeList(e.viewsReleased)
		e.homes.Put(b.size, l)
	}
	if i, ok := l.find(h.at); ok {
		if i == len(l.entries)-1 {
			l.entries[i] = h // the most recently used already: only its witness is new
			return
		}
		// Dead, as kill leaves it; its index entry is overwritten below rather than deleted.
		l.entries[i].dead = true
		l.live--
	} else if l.live == maxHomes {
		for l.entries[l.first].dead {
			l.first++
		}
		l.kill(l.first) // the least recently used goes
	}
	l.set(h.at, len(l.entries))
	l.entries = append(l.entries, h)
	l.live++
	l.compact()
}

// rememberLargeHome remembers large block b's place unmarked; with iterations marked no large
// request is placed by a home (proposeHome), so none is kept.
func (e *Engine) rememberLargeHome(b *block) {
	if !e.marked() {
		e.rememberHome(b)
	}
}

// findHome returns the place where a block of r bytes lay before that no live block uses now and
// whose taking flushes the fewest cached bytes, the most recently used of those. A training loop
// asks for the same sizes every iteration; sending each request back where its size lay keeps the
// layout from drifting, so that the views made in the first iterations keep fitting.
func (e *Engine) findHome(r uint64) (home, bool) { return e.findHomeBut(r, nil) }

// findHomeBut is findHome without the homes skip reports.
func (e *Engine) findHomeBut(r uint64, skip func(home) bool) (home, bool) {
	l := e.homes.At(r)
	if l == nil {
		return home{}, false
	}
	if l.pruned != e.viewsReleased {
		for i := range l.entries {
			if h := &l.entries[i]; !h.dead && h.at.v != nil && h.at.v.gone {
				l.kill(i)
			}
		}
		l.pruned = e.viewsReleased
		l.compact()
	}
	var best home
	bestCost := ^uint64(0)
	found := false
	kept := l.entries
	// Most recently used first: the first of the cheapest wins, and one that flushes nothing ends
	// the search.
	for i := len(kept) - 1; i >= 0 && bestCost > 0; i-- {
		h := &kept[i]
		if h.dead || h.passOver(bestCost) || skip != nil && skip(h.at) {
			continue
		}
		cost, ok, witness := e.homeCost(h.at, r, bestCost, nil)
		if witness != nil {
			h.witness, h.serial = witness, witness.serial
		}
		if ok && cost < bestCost {
			best, bestCost, found = h.at, cost, true
		}
	}
	return best, found
}

// homeCost reports whether no live block uses home h (r bytes), every byte there exists and the
// cached blocks there hold fewer than limit bytes, and how many they hold; witness is the live
// block it found there, else the largest cached block it looked at, or nil. With under set, the
// cached blocks it looked at are appended to it, each once (while ok, every block at the home).
func (e *Engine) homeCost(h home, r, limit uint64, under *[]*block) (cost uint64, ok bool, witness *block) {
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
					witness = n.b
				}
				ok = false
				return false
			}
			if witness == nil || n.b.size > witness.size {
				witness = n.b
			}
			if under != nil && !slices.Contains(*under, n.b) {
				*under = append(*under, n.b)
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
	return cost, ok, witness
}

// takeHome flushes the cached blocks at home h and makes it a block of r bytes. The flushed blocks'
// bytes inside the home pass to the new block directly: only those outside it are given back to the
// loose set, and only the loose bytes of the home are taken from it, rather than every flushed byte
// joining the loose set to be carved out again (the loose set ends the same); a home of the arena
// that one loose range holds is carved from it without a look for blocks there. A home of the arena
// that begins where a cached primitive block begins is that block re-cut (recarve), not a new one.
func (e *Engine) takeHome(h home, r uint64) *block { return e.takeHomeOver(h, r, nil, false) }

// takeHomeOver is takeHome told, when known is set, the cached blocks at the home (under, held in
// blockCache.flushBuf, as placeUnder found them): the walk of the owner index for them is not made
// again.
func (e *Engine) takeHomeOver(h home, r uint64, under []*block, known bool) *block {
	if h.v == nil {
		whole := known && len(under) == 0 // no block at the home: loose bytes alone, one range (homeCost)
		if !known {
			_, whole = e.loose.containing(h.off, h.off+r)
		}
		if whole {
			// Loose bytes alone (one loose range holds the home): no block to flush.
			return e.carveAt(h.off, r)
		}
	}
	pieces := e.placeBuf[:0]
	if h.v != nil {
		window(h.v, h.off, r, func(p span) bool { pieces = append(pieces, p); return true })
	} else {
		pieces = append(pieces, span{start: h.off, end: h.off + r})
	}
	if len(pieces) > 1 {
		slices.SortFunc(pieces, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	}
	flush := under
	if !known {
		flush = e.blocksUnder(pieces)
	}
	var cut *block // the cached block re-cut into the new one
	if h.v == nil && len(flush) > 0 && flush[0].kind == primitive {
		cut = flush[0]
	}
	for _, b := range flush {
		if b == cut {
			e.uncache(b, pieces)
		} else {
			e.flushInto(b, pieces)
		}
	}
	clear(flush)
	e.flushBuf = flush[:0]
	e.takeLooseIn(pieces)
	e.placeBuf = pieces[:0]
	if h.v != nil {
		return e.windowBlock(h.v, h.off, r)
	}
	if cut != nil {
		return e.recarve(cut, h.off, r)
	}
	return e.primitiveAt(h.off, r)
}
