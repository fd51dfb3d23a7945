package stitch

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Check walks every pool, block, chunk, view and index and returns every broken invariant (see the
// package doc), errors.Join'ed; nil when the engine is consistent, ErrClosed after Close. It is slow:
// for tests.
func (e *Engine) Check() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	c := &checker{}
	e.checkFreeSet(c, "loose", e.loose)
	e.checkFreeSet(c, "small free", e.smallFree)
	e.checkBlocks(c)
	e.checkPhysical(c)
	e.checkViews(c)
	e.checkPages(c)
	e.checkRoom(c)
	e.checkMemos(c)
	e.checkStitchable(c)
	return errors.Join(c.errs...)
}

type checker struct{ errs []error }

func (c *checker) fail(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("stitch: check: "+format, args...))
}

func (e *Engine) checkBlocks(c *checker) {
	var live uint64
	liveN, cached := 0, map[*block]bool{}
	for ptr, b := range e.blocks.All() {
		if uint64(b.ptr) != ptr {
			c.fail("block indexed at %#x has pointer %#x", ptr, b.ptr)
		}
		if b.size == 0 || b.size%alignment != 0 || b.req > b.size || (b.live && b.req == 0) {
			c.fail("block %#x: size %d, requested %d", ptr, b.size, b.req)
		}
		if b.kind == small && b.size >= e.cfg.smallThreshold || b.kind != small && b.size < e.cfg.smallThreshold {
			c.fail("block %#x: kind %d with size %d", ptr, b.kind, b.size)
		}
		if b.kind != small && b.page != nil {
			c.fail("block %#x: a page in the pointer index", ptr)
		}
		if b.physStart() != b.firstByte() {
			c.fail("block %#x: its first byte is kept as %#x, it lies at %#x", ptr, b.physStart(), b.firstByte())
		}
		if !b.indexed {
			c.fail("block %#x in the pointer index is not marked indexed", ptr)
		}
		if b.live {
			live += b.req
			liveN++
			if b.list != nil && (b.next != nil || b.prev != nil || b.list.head == b) {
				c.fail("live block %#x is in a free list", ptr)
			}
		} else {
			cached[b] = true
		}
	}
	if live != e.live || liveN != e.liveBlocks {
		c.fail("live blocks hold %d bytes in %d blocks, stats say %d in %d", live, liveN, e.live, e.liveBlocks)
	}
	inAge := 0
	for _, age := range []*ageList{&e.largeAge, &e.smallAge} {
		n, bytes := 0, uint64(0)
		for b := age.oldest; b != nil; b = b.newer {
			n++
			bytes += b.size
			if !cached[b] {
				c.fail("age list holds %#x, which is not a cached block", b.ptr)
			}
			if (b.kind == small) != (age == &e.smallAge) {
				c.fail("cached block %#x in the wrong age list", b.ptr)
			}
			if b.newer == nil && age.newest != b {
				c.fail("age list ends at %#x, newest is another", b.ptr)
			}
		}
		if n != age.n || bytes != age.bytes {
			c.fail("age list: %d blocks of %d bytes, counts say %d of %d", n, bytes, age.n, age.bytes)
		}
		inAge += n
	}
	if inAge != len(cached) {
		c.fail("%d cached blocks, %d in age lists", len(cached), inAge)
	}
	inLists := 0
	check := func(s Stream, lists *sizeLists) {
		for size, l := range lists.All() {
			n := 0
			var last *block
			for b := l.head; b != nil; b = b.next {
				n++
				last = b
				if !cached[b] || b.size != size || b.stream != s || b.list != l {
					c.fail("free list (%d bytes, stream %d) holds block %#x of %d bytes, stream %d", size, s, b.ptr, b.size, b.stream)
				}
				if b.next != nil && b.next.prev != b {
					c.fail("free list links broken at %#x", b.ptr)
				}
				if b.next != nil && b.next.physStart() <= b.physStart() {
					c.fail("free list (%d bytes, stream %d) out of address order at %#x", size, s, b.ptr)
				}
			}
			if n != l.n {
				c.fail("free list (%d bytes) has %d blocks, count says %d", size, n, l.n)
			}
			if l.tail != last {
				c.fail("free list (%d bytes, stream %d): its tail is not its last block", size, s)
			}
			inLists += n
		}
	}
	check(e.hotStream, &e.hotLists)
	for s, lists := range e.otherLists {
		check(s, lists)
	}
	if inLists != len(cached) {
		c.fail("%d cached blocks, %d in free lists", len(cached), inLists)
	}
}

// checkMemos verifies the memos (memo.go) and the current iteration's state against them
// (memoState): every combination the transitions cannot make is reported.
func (e *Engine) checkMemos(c *checker) {
	s := &e.iter
	total := 0
	remembered := func(m memo) bool { return slices.ContainsFunc(e.memos, func(x memo) bool { return sameMemo(x, m) }) }
	ordered := func(what string, m memo) {
		for i := 1; i < len(m); i++ {
			if m[i].ord <= m[i-1].ord {
				c.fail("%s: entry %d (ordinal %d) does not follow ordinal %d", what, i, m[i].ord, m[i-1].ord)
				return
			}
		}
	}
	for i, m := range e.memos {
		total += len(m)
		if len(m) == 0 {
			c.fail("memo %d is empty", i)
		}
		ordered(fmt.Sprintf("memo %d", i), m)
	}
	if total != e.remembered || e.remembered > maxRemembered || len(e.memos) > maxMemos {
		c.fail("memos: %d of them hold %d entries, count says %d (bounds %d, %d)", len(e.memos), total, e.remembered, maxMemos, maxRemembered)
	}
	ordered("current iteration's memo", e.memoCur)
	if len(e.memoCur) > maxMemoEntries || len(e.memoCur) > 0 && e.memoCur[len(e.memoCur)-1].ord > e.iterOrd {
		c.fail("current iteration's memo: %d entries, past the bound %d or the ordinal %d", len(e.memoCur), maxMemoEntries, e.iterOrd)
	}
	switch s.phase {
	case memoUnmarked:
		if len(e.memos) > 0 || len(e.memoCur) > 0 || s.dominance != domNone || s.scattered {
			c.fail("memo state: unmarked, yet %d memos, %d entries, dominance %d", len(e.memos), len(e.memoCur), s.dominance)
		}
	case memoChoosing, memoFollowing, memoDominating, memoNewShape:
	default:
		c.fail("memo state: phase %d", s.phase)
	}
	if (s.follow != nil) != s.following() {
		c.fail("memo state: phase %d with a followed memo of %d entries", s.phase, len(s.follow))
	}
	if s.follow != nil && (!remembered(s.follow) || s.cursor < 0 || s.cursor > len(s.follow)) {
		c.fail("memo state: follows a memo not remembered, or at entry %d of %d", s.cursor, len(s.follow))
	}
	if s.phase == memoDominating {
		if s.dominance != domOne && s.dominance != domHandedOver {
			c.fail("memo state: follows a dominating memo at dominance %d", s.dominance)
		}
		sizes := map[uint64]bool{}
		for _, en := range s.follow {
			if !en.page {
				sizes[en.size] = true
			}
		}
		if !maps.Equal(sizes, s.followSizes) {
			c.fail("memo state: the dominating memo has %d sizes, %d noted", len(sizes), len(s.followSizes))
		}
	}
	ended := s.dominance == domScriptEnded || s.dominance == domHandedOver
	if (s.scriptEnded != nil) != ended || s.scriptEnded != nil && !remembered(s.scriptEnded) {
		c.fail("memo state: dominance %d with an ended memo of %d entries (remembered: %v)", s.dominance, len(s.scriptEnded), remembered(s.scriptEnded))
	}
	if s.flushOwed {
		c.fail("memo state: a new shape's flush is owed between calls (payShapeFlush)")
	}
	if s.dominance > domHandedOver || s.dominance != domNone && !s.scattered {
		c.fail("memo state: dominance %d, scattered %v", s.dominance, s.scattered)
	}
}

// firstDiff is the first index where a and b differ.
func firstDiff(a, b []span) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}
