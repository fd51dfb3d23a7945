package stitch

import (
	"cmp"
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

func (e *Engine) checkFreeSet(c *checker, name string, f *freeSet) {
	switch {
	case f.sizeStale && f.bySize.len() != 0:
		c.fail("%s: %d spans in a dropped size index", name, f.bySize.len())
	case f.sizeStale && !f.lazySize:
		c.fail("%s: an eagerly kept size index dropped", name)
	case !f.sizeStale && f.byAddr.len() != f.bySize.len():
		c.fail("%s: %d spans by address, %d by size", name, f.byAddr.len(), f.bySize.len())
	}
	for _, t := range []*tree{&f.byAddr, &f.bySize} {
		if s, bad, err := t.misKeyed(); err != nil {
			c.fail("%s: %v", name, err)
		} else if bad {
			c.fail("%s: %+v is keyed out of its place", name, s)
		}
	}
	var prev *span
	var sum uint64
	n := 0
	f.byAddr.walk(func(s span) bool {
		n++
		sum += s.size()
		if s.start >= s.end {
			c.fail("%s: empty span %+v", name, s)
		}
		if prev != nil && prev.end > s.start {
			c.fail("%s: spans %+v and %+v overlap", name, *prev, s)
		}
		if prev != nil && prev.end == s.start && prev.owner == s.owner {
			c.fail("%s: spans %+v and %+v not coalesced", name, *prev, s)
		}
		if got, ok := f.bySize.ceil(s); !f.sizeStale && (!ok || got != s) {
			c.fail("%s: span %+v missing from the size index", name, s)
		}
		p := s
		prev = &p
		return true
	})
	if n != f.byAddr.len() {
		c.fail("%s: walked %d spans, count says %d", name, n, f.byAddr.len())
	}
	if sum != f.bytes {
		c.fail("%s: spans hold %d bytes, total says %d", name, sum, f.bytes)
	}
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

// checkPhysical verifies that loose spans, primitive blocks and stitched pieces tile the present
// chunks exactly.
func (e *Engine) checkPhysical(c *checker) {
	type owned struct {
		s    span
		what string
	}
	var all []owned
	users := map[*view]int{}
	held, inUse := map[*view]uint64{}, map[*view]uint64{}
	owner := map[span]*block{}
	e.loose.byAddr.walk(func(s span) bool { all = append(all, owned{s, "loose"}); return true })
	large := func(b *block, what string) {
		switch b.kind {
		case primitive:
			all = append(all, owned{span{start: b.pos, end: b.pos + b.size}, what})
			owner[span{start: b.pos, end: b.pos + b.size}] = b
			if b.ptr != e.arenaBase+uintptr(b.pos) {
				c.fail("%s %#x: not at its arena offset %d", what, b.ptr, b.pos)
			}
		case stitched:
			if b.view == nil || e.views[b.view.base] != b.view {
				c.fail("%s %#x: stitched, but its view is unknown", what, b.ptr)
				return
			}
			users[b.view]++
			held[b.view] += b.size
			if b.live {
				inUse[b.view] += b.size
			}
			if b.voff+b.size > b.view.cap || b.ptr != b.view.base+uintptr(b.view.head+b.voff) {
				c.fail("%s %#x: not a window of its view", what, b.ptr)
			}
			window(b.view, b.voff, b.size, func(p span) bool {
				all = append(all, owned{p, what})
				owner[p] = b
				return true
			})
		}
	}
	for _, b := range e.blocks.All() {
		if b.kind != small {
			large(b, "block")
		}
	}
	for _, p := range e.pages {
		large(p.blk, "page")
	}
	if s, bad, err := e.owners.misKeyed(); err != nil {
		c.fail("owner index: %v", err)
	} else if bad {
		c.fail("owner index: %+v is keyed out of its place", s)
	}
	n := 0
	e.owners.walkNodes(func(nd *tnode) bool {
		n++
		if owner[nd.s] != nd.b {
			c.fail("owner index: %+v belongs to another block", nd.s)
		}
		return true
	})
	if n != len(owner) || n != e.owners.len() {
		c.fail("owner index holds %d ranges (count %d), blocks own %d", n, e.owners.len(), len(owner))
	}
	slices.SortFunc(all, func(a, b owned) int { return cmp.Compare(a.s.start, b.s.start) })
	var covered uint64
	for i, o := range all {
		covered += o.s.size()
		if i > 0 && all[i-1].s.end > o.s.start {
			c.fail("%s %+v overlaps %s %+v", all[i-1].what, all[i-1].s, o.what, o.s)
		}
		for ch := o.s.start / e.g; ch*e.g < o.s.end; ch++ {
			if ch >= uint64(len(e.slots)) || !e.slots[ch].present {
				c.fail("%s %+v uses arena slot %d, which holds no chunk", o.what, o.s, ch)
				break
			}
		}
	}
	for _, v := range e.views {
		if users[v] != v.users {
			c.fail("view %#x: %d blocks use it, count says %d", v.base, users[v], v.users)
		}
		if held[v] != v.held || inUse[v] != v.inUse {
			c.fail("view %#x: its blocks hold %d bytes, %d live; counts say %d, %d", v.base, held[v], inUse[v], v.held, v.inUse)
		}
	}
	present, holes := uint64(0), 0
	holeBelow := false
	for i, s := range e.slots {
		if s.present {
			present++
			pa := e.allocs[s.h]
			if pa == nil || uint64(i) < pa.first || uint64(i) >= pa.first+pa.n || s.hoff != (uint64(i)-pa.first)*e.g {
				c.fail("slot %d: handle %d offset %d does not match its allocation", i, s.h, s.hoff)
			}
		} else {
			holes++
			if !s.blocked && uint64(i) < e.holeFrom && !holeBelow {
				holeBelow = true
				c.fail("slot %d: a hole below where grow looks for holes (%d)", i, e.holeFrom)
			}
			if s.blocked {
				blocked := false
				for _, o := range e.orphans {
					blocked = blocked || o.slots[1] > 0 && uint64(i) >= o.slots[0] && uint64(i) < o.slots[0]+o.slots[1]
				}
				if !blocked {
					c.fail("slot %d blocked by no orphan", i)
				}
			}
			if s.views != 0 {
				c.fail("empty slot %d mapped by %d views", i, s.views)
			}
		}
	}
	if covered != present*e.g {
		c.fail("blocks and loose spans cover %d bytes, chunks hold %d", covered, present*e.g)
	}
	if present*e.g != e.reserved {
		c.fail("%d chunks present, reserved says %d bytes", present, e.reserved)
	}
	if holes != e.holes {
		c.fail("%d empty slots, count says %d", holes, e.holes)
	}
	if e.reserved > e.peakReserved || e.reserved+e.orphanBytes > e.capacity {
		c.fail("reserved %d, peak %d, capacity %d", e.reserved, e.peakReserved, e.capacity)
	}
}

func (e *Engine) checkViews(c *checker) {
	views := make([]int32, len(e.slots))
	for _, o := range e.orphans {
		for _, ch := range o.chunks {
			views[ch]++
		}
	}
	var bytes uint64
	for base, v := range e.views {
		bytes += v.vsize
		if v.base != base || v.vsize != uint64(len(v.chunks))*e.g || len(v.pieces) == 0 || v.gone {
			c.fail("view %#x: malformed", base)
			continue
		}
		var sum uint64
		present := true
		for i, p := range v.pieces {
			sum += p.size()
			first, ok1 := e.handleSpanIfAny(p.start)
			last, ok2 := e.handleSpanIfAny(p.end - 1)
			if !ok1 || !ok2 || p.size() == 0 {
				c.fail("view %#x: piece %d %+v lies where no chunk is", base, i, p)
				present = false
				continue
			}
			if i > 0 && first.start != p.start || i < len(v.pieces)-1 && last.end != p.end {
				c.fail("view %#x: piece %d %+v does not meet the next at a handle boundary", base, i, p)
				present = false
			}
		}
		if !present {
			continue
		}
		if sum != v.cap || v.head != v.pieces[0].start-e.handleSpan(v.pieces[0].start).start {
			c.fail("view %#x: capacity %d or head %d wrong", base, v.cap, v.head)
		}
		if got := e.chunksOf(v.pieces); !slices.Equal(got, v.chunks) {
			c.fail("view %#x: maps chunks %v, pieces need %v", base, v.chunks, got)
		}
		for _, ch := range v.chunks {
			if ch < uint64(len(views)) {
				views[ch]++
			}
		}
	}
	for i, n := range views {
		if e.slots[i].views != n {
			c.fail("slot %d: %d views map it, count says %d", i, n, e.slots[i].views)
		}
	}
	if bytes != e.viewBytes {
		c.fail("views hold %d virtual bytes, count says %d", bytes, e.viewBytes)
	}
	n := 0
	for v := e.viewOldest; v != nil; v = v.newer {
		n++
		if e.views[v.base] != v || (v.newer == nil && e.viewNewest != v) {
			c.fail("view list holds view %#x, which is unknown or misplaced", v.base)
		}
	}
	if n != len(e.views) {
		c.fail("%d views, %d in the view list", len(e.views), n)
	}
}

func (e *Engine) checkPages(c *checker) {
	type part struct {
		s    span
		what string
	}
	parts := map[uint64][]part{}
	used := map[uint64]uint64{}
	e.smallFree.byAddr.walk(func(s span) bool { parts[s.owner] = append(parts[s.owner], part{s, "free"}); return true })
	for _, b := range e.blocks.All() {
		if b.kind != small {
			continue
		}
		if b.page == nil || e.pages[b.page.id] != b.page {
			c.fail("small block %#x: unknown page", b.ptr)
			continue
		}
		parts[b.page.id] = append(parts[b.page.id], part{span{start: uint64(b.ptr), end: uint64(b.ptr) + b.size}, "block"})
		used[b.page.id] += b.size
	}
	for id, ps := range parts {
		if e.pages[id] == nil {
			c.fail("small pool: spans %v in unknown page %d", ps, id)
		}
	}
	for id, p := range e.pages {
		if p.id != id || p.blk == nil || p.blk.page != p || p.blk.size != e.pageSize || p.blk.live != true || p.blk.indexed {
			c.fail("page %d: malformed", id)
			continue
		}
		if used[id] != p.used {
			c.fail("page %d: blocks use %d bytes, count says %d", id, used[id], p.used)
		}
		ps := parts[id]
		slices.SortFunc(ps, func(a, b part) int { return cmp.Compare(a.s.start, b.s.start) })
		at := uint64(p.blk.ptr)
		for _, x := range ps {
			if x.s.start != at {
				c.fail("page %d: %s %+v does not follow %#x", id, x.what, x.s, at)
			}
			at = x.s.end
		}
		if at != uint64(p.blk.ptr)+p.blk.size {
			c.fail("page %d: covered up to %#x of [%#x, +%d)", id, at, p.blk.ptr, p.blk.size)
		}
	}
}

// checkRoom verifies the room index (room.go): exactly the gaps between the ranges of the large
// blocks in the owner index that it holds live, and every block whose liveness it has not caught
// up with is queued.
func (e *Engine) checkRoom(c *checker) {
	e.checkFreeSet(c, "room", e.room)
	e.checkRoomBounds(c)
	var want []span
	at := roomAll.start
	e.owners.walkNodes(func(n *tnode) bool {
		if n.b == nil || !n.b.roomLive {
			return true
		}
		if n.s.start > at {
			want = append(want, span{start: at, end: n.s.start})
		}
		at = max(at, n.s.end)
		return true
	})
	if at < roomAll.end {
		want = append(want, span{start: at, end: roomAll.end})
	}
	queued := func(b *block, what string) {
		if b.kind != small && b.roomLive != b.live && !b.roomQueue {
			c.fail("room index: %s %#x is live=%v, indexed live=%v, and not queued", what, b.ptr, b.live, b.roomLive)
		}
	}
	for _, b := range e.blocks.All() {
		queued(b, "block")
	}
	for _, p := range e.pages {
		queued(p.blk, "page")
	}
	var got []span
	e.room.byAddr.walk(func(s span) bool { got = append(got, s); return true })
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(want):
			c.fail("room index: %+v, but live blocks own bytes there", got[i])
		case i >= len(got):
			c.fail("room index: %+v, which no live block owns, is missing", want[i])
		case got[i] != want[i]:
			c.fail("room index: %+v where live blocks leave %+v", got[i], want[i])
		default:
			continue
		}
		return
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

// checkStitchable verifies the stitch index (stitchable.go) against a walk over the loose ranges:
// every candidate's head and tail indexed, nothing else, the sum of their middles and the
// candidates with whole handles; or, dropped until its next read, that it holds nothing.
func (e *Engine) checkStitchable(c *checker) {
	if x := &e.stitchable; x.stale {
		if x.mids != 0 || x.heads.len() != 0 || x.tails.len() != 0 || x.wholes.len() != 0 {
			c.fail("stitch index: dropped, but holding %d heads, %d tails and %d whole-handle bytes", x.heads.len(), x.tails.len(), x.mids)
		}
		return
	}
	want := newStitchable()
	e.loose.byAddr.walk(func(s span) bool {
		if cd, ok := e.candidateOf(s); ok {
			want.mids += cd.mid
			want.heads.insert(span{start: s.start, end: s.start + cd.head})
			want.tails.insert(span{start: s.start, end: s.start + cd.tail})
			if cd.mid > 0 {
				want.wholes.insert(s)
			}
		}
		return true
	})
	x := &e.stitchable
	if x.mids != want.mids {
		c.fail("stitch index: %d whole-handle bytes, the loose ranges have %d", x.mids, want.mids)
	}
	for _, t := range []struct {
		name      string
		got, want *tree
	}{{"heads", &x.heads, &want.heads}, {"tails", &x.tails, &want.tails}, {"ranges with whole handles", &x.wholes, &want.wholes}} {
		var got, exp []span
		t.got.walk(func(s span) bool { got = append(got, s); return true })
		t.want.walk(func(s span) bool { exp = append(exp, s); return true })
		if !slices.Equal(got, exp) {
			c.fail("stitch index: %d %s, the loose ranges give %d (first difference at %d)", len(got), t.name, len(exp), firstDiff(got, exp))
		}
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
