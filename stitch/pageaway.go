package stitch

import (
	"cmp"
	"slices"
)

// Pages away from remembered places: once iterations are remembered, a new page of the small pool
// goes where none of the recent memos puts a large block.
//
// A page lives across iterations (its small blocks come and go, the page stays), and the small
// pool needs one more now and then long after warm-up, as its free ranges drift (opt1.3b-full
// replayed eight times: 12 pages after the first iteration, 20 by the 15th, 21 by the 40th). Made
// from free large-pool memory, the new page sits in a place some remembered iteration gives a large
// block; when that iteration's shape recurs, its memo finds the place taken and the request
// stitches, and the layout after it drifts: each late page costs a burst of driver calls, long
// after warm-up.
//
// So a page is placed, in order: where the followed memo had a page (memo.go); at a home of a
// page's size, in free loose bytes (the highest), both outside every large place of the last
// pageAwayMemos memos; else in new memory, grown pageGrowth pages at a time so that the next pages
// come without a call; and only when the capacity has no room for that, where a large request
// would go (carvePage, allocLarge). Fewer memos kept clear leave more late calls, and smaller page
// growths more calls in all.

// pageAwayMemos is how many of the most recent memos a new page keeps clear of.
const pageAwayMemos = 8

// pageGrowth is how many pages of memory a growth for a page creates.
const pageGrowth = 16

// placePageAway returns a new page where no recent memo puts a large block; nil when nothing is
// remembered yet or the capacity leaves no room.
func (e *Engine) placePageAway() *block {
	if !e.marked || len(e.memos) == 0 {
		return nil
	}
	taken := e.memoSpans()
	if h, ok := e.findHomeBut(e.pageSize, func(h home) bool { return e.placeOverlaps(taken, h, e.pageSize) }); ok {
		return e.takeHome(h, e.pageSize)
	}
	if pb := e.carvePageBetween(taken); pb != nil {
		e.rememberHome(pb)
		return pb
	}
	n := (e.pageSize + e.g - 1) / e.g
	if e.grow(pageGrowth*n) != nil && e.grow(n) != nil {
		return nil
	}
	pb := e.carvePageBetween(taken)
	if pb != nil {
		e.rememberHome(pb)
	}
	return pb
}

// memoSpans returns the arena ranges that the large entries of the last pageAwayMemos memos
// occupy, sorted and merged.
func (e *Engine) memoSpans() []span {
	var out []span
	for i := len(e.memos) - 1; i >= 0 && i >= len(e.memos)-pageAwayMemos; i-- {
		for _, c := range e.memos[i] {
			switch {
			case c.page:
			case c.at.v == nil:
				out = append(out, span{start: c.at.off, end: c.at.off + c.size})
			case e.views[c.at.v.base] == c.at.v:
				window(c.at.v, c.at.off, c.size, func(p span) bool { out = append(out, p); return true })
			}
		}
	}
	slices.SortFunc(out, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	merged := out[:0]
	for _, s := range out {
		if n := len(merged); n > 0 && s.start <= merged[n-1].end {
			merged[n-1].end = max(merged[n-1].end, s.end)
			continue
		}
		merged = append(merged, s)
	}
	return merged
}

// firstReaching returns the index of the first of the sorted, merged spans that ends after x.
func firstReaching(spans []span, x uint64) int {
	i, _ := slices.BinarySearchFunc(spans, x, func(p span, x uint64) int { return cmp.Compare(p.end, x+1) })
	return i
}

// placeOverlaps reports whether place h of r bytes overlaps any of the sorted, merged spans.
func (e *Engine) placeOverlaps(spans []span, h home, r uint64) bool {
	overlaps := func(s span) bool {
		i := firstReaching(spans, s.start)
		return i < len(spans) && spans[i].start < s.end
	}
	if h.v == nil {
		return overlaps(span{start: h.off, end: h.off + r})
	}
	hit := false
	window(h.v, h.off, r, func(p span) bool { hit = overlaps(p); return !hit })
	return hit
}

// carvePageBetween carves a page from the end of the highest loose bytes that none of the sorted,
// merged spans overlaps; nil when no such bytes hold a page.
func (e *Engine) carvePageBetween(spans []span) *block {
	var best span
	found := false
	fits := func(s span) {
		if s.size() >= e.pageSize {
			best, found = s, true
		}
	}
	e.loose.byAddr.walk(func(s span) bool {
		at := s.start
		for i := firstReaching(spans, s.start); i < len(spans) && spans[i].start < s.end; i++ {
			fits(span{start: at, end: max(at, spans[i].start)})
			at = max(at, spans[i].end)
		}
		fits(span{start: at, end: max(at, s.end)})
		return true
	})
	if !found {
		return nil
	}
	return e.carveAt(best.end-e.pageSize, e.pageSize)
}
