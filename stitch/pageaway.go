package stitch

import (
	"cmp"
	"slices"
)

// Pages away from remembered places: once large requests' places are remembered (marked: the
// iteration memos, memo.go; unmarked: the contexts, repeat.go), a new page of the small pool goes
// where none of them puts a large block.
//
// A page lives across iterations (its small blocks come and go, the page stays), and the small
// pool needs one more now and then long after warm-up, as its free ranges drift (opt1.3b-full
// replayed eight times: 12 pages after the first iteration, 20 by the 15th, 21 by the 40th). Made
// from free large-pool memory, the new page sits in a place some remembered request goes to; when
// that request recurs, it finds the place taken and stitches or grows, the layout after it drifts,
// and the next repetition meets the same (unmarked, with pages placed like any large request:
// Mixtral-MoE 53.1 driver calls per iteration in the fourth repetition, the GPT-2-XL LoRA trace of
// stitch/testdata 25.2, T5 7.1, each traced to a page lying in a remembered place).
//
// So a page is placed, in order: where the followed memo had a page (memo.go); at a home of a
// page's size, in free loose bytes (the highest), both outside every remembered large place (of
// the last pageAwayMemos memos, or of every context); else in new memory, grown pageGrowth pages
// at a time, all of which join the small pool at once as pages; and only when the capacity has no
// room for that, where a large request would go (carvePage, allocLarge). Empty pages go back to the
// large pool when a large request lacks memory the capacity does not allow to create (chain.go, releasePages).
//
// Measured (every trace's iterations repeated four times, both modes; calls in the fourth
// repetition): spare pages left loose are taken by large requests and the next page grows again
// (the GPT-2-XL LoRA trace, unmarked: a growth of 33 calls in the fourth). Fewer memos kept clear
// leave more late calls, and smaller page growths more calls in all. With a small miss flushing the
// whole pool (flush.go), on the 30 traces of make bench (capacity / peak active, marked): pages
// placed anywhere when unmarked cost a mean of 0.00015 and the UNet 1.0098 -> 1.0140 (unmarked the
// mean 0.0004, the UNet 1.030 -> 1.037); spare pages left loose the same mean and the UNet 1.0140.
// A growth in proportion to the pool (an eighth) once kept a small pool that crept from growing
// late; since a small miss flushes the whole pool it no longer creeps, and the proportional growth
// changed no placement on any of the 30 traces, so a growth is pageGrowth pages.

// placePageAway returns a new page where no remembered large request went; nil when nothing is
// remembered yet or the capacity leaves no room.
func (e *Engine) placePageAway() *block {
	taken := e.rememberedSpans()
	if len(taken) == 0 {
		return nil
	}
	if h, ok := e.findHomeBut(e.pageSize, func(h home) bool { return e.placeOverlaps(taken, h, e.pageSize) }); ok {
		return e.takeHome(h, e.pageSize)
	}
	if pb := e.carvePageBetween(taken); pb != nil {
		e.rememberHome(pb)
		return pb
	}
	n := (e.pageSize + e.g - 1) / e.g
	grown := uint64(pageGrowth)
	if e.grow(grown*n, grown*n) != nil {
		if e.grow(n, n) != nil {
			return nil
		}
		grown = 1
	}
	pb := e.carvePageBetween(taken)
	if pb == nil {
		return nil
	}
	e.rememberHome(pb)
	// The rest of the growth becomes empty pages at once: left loose, large requests would take
	// it, and the next page would grow again.
	for range grown - 1 {
		spare := e.carvePageBetween(taken)
		if spare == nil {
			break
		}
		e.rememberHome(spare)
		e.addPage(spare)
	}
	return pb
}

// rememberedSpans returns the arena ranges of the places that later large requests are sent to,
// sorted and merged: marked, those of the large entries of the last pageAwayMemos memos; unmarked,
// those of every remembered context (repeat.go). The result is kept until the memos or contexts
// change or a view is released (forgetAway), so that the pages of one iteration cost one sort.
func (e *Engine) rememberedSpans() []span {
	if e.awayValid && e.awayReleased == e.viewsReleased {
		return e.awaySpans
	}
	out := e.awaySpans[:0]
	add := func(at home, size uint64) {
		switch {
		case at.v == nil:
			out = append(out, span{start: at.off, end: at.off + size})
		case e.views[at.v.base] == at.v:
			window(at.v, at.off, size, func(p span) bool { out = append(out, p); return true })
		}
	}
	if e.marked() {
		for i := len(e.memos) - 1; i >= 0 && i >= len(e.memos)-pageAwayMemos; i-- {
			for _, c := range e.memos[i] {
				if !c.page {
					add(c.at, c.size)
				}
			}
		}
	} else {
		for _, cp := range e.contexts.All() {
			add(cp.at, cp.size)
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
	e.awaySpans, e.awayValid, e.awayReleased = merged, true, e.viewsReleased
	return merged
}

// forgetAway drops the kept result of rememberedSpans.
func (e *Engine) forgetAway() { e.awayValid = false }

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

// allocSmall serves a request below the small threshold: best fit among the pages' free ranges,
// then the same after flushing every cached small block (flushSmallPool), then from a new page.
func (e *Engine) allocSmall(r uint64, s Stream) (*block, Outcome, error) {
	if b := e.carveSmall(r); b != nil {
		return b, OutcomeSplit, nil
	}
	if e.flushSmallPool() {
		if b := e.carveSmall(r); b != nil {
			return b, OutcomeSplit, nil
		}
	}
	// A page goes where the followed memo had one; once large requests' places are remembered,
	// away from them (pageaway.go); else to the lowest free range that holds it (the highest once
	// iterations are marked: carvePage), so that pages gather in one place from one iteration to
	// the next instead of landing in whatever gap between large blocks fits.
	var pb *block
	out := OutcomeSplit
	if h, ok := e.findPageMemo(); ok {
		pb = e.takeHome(h, e.pageSize)
	} else if pb = e.placePageAway(); pb != nil {
		// placed
	} else if h, ok := e.findHome(e.pageSize); ok {
		pb = e.takeHome(h, e.pageSize)
	} else if pb = e.carvePage(); pb != nil {
		e.rememberHome(pb)
	}
	if pb == nil {
		var err error
		if pb, out, err = e.allocLarge(e.pageSize, s); err != nil {
			return nil, 0, err
		}
	}
	e.recordPlace(pb, true)
	e.addPage(pb)
	b := e.carveSmall(r)
	if out == OutcomeExact {
		out = OutcomeSplit
	}
	return b, out, nil
}

// carvePage takes a page from the loose ranges: from the end of the highest one that holds it when
// iterations are marked, where the large blocks of new shapes, laid out first-fit from below
// (shape.go), do not go, so that pages stay out of the places iteration memos give large blocks
// (a page lives across iterations); from the start of the lowest one otherwise.
func (e *Engine) carvePage() *block {
	if !e.marked() {
		return e.carveLowest(e.pageSize)
	}
	var sp span
	ok := false
	e.loose.byAddr.walk(func(s span) bool {
		if s.size() >= e.pageSize {
			sp, ok = s, true
		}
		return true
	})
	if !ok {
		return nil
	}
	return e.carveAt(sp.end-e.pageSize, e.pageSize)
}
