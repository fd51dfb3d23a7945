package stitch

import (
	"cmp"
	"slices"
)

// The layout's rules of Check (check.go runs them with the Engine's own, checkBlocks and
// checkMemos): the free sets, the pages, the physical tiling of the arena, the room index, the
// stitchable summary and the views.

// checkFreeSet verifies a free set: its address and size indexes hold the same spans, each keyed
// right, and no two spans of one owner touch.
func (l *layout) checkFreeSet(c *checker, name string, f *freeSet) {
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

func (l *layout) checkPages(c *checker) {
	type part struct {
		s    span
		what string
	}
	parts := map[uint64][]part{}
	used := map[uint64]uint64{}
	l.smallFree.byAddr.walk(func(s span) bool { parts[s.owner] = append(parts[s.owner], part{s, "free"}); return true })
	for _, b := range l.blocks.All() {
		if b.kind != small {
			continue
		}
		if b.page == nil || l.pages[b.page.id] != b.page {
			c.fail("small block %#x: unknown page", b.ptr)
			continue
		}
		parts[b.page.id] = append(parts[b.page.id], part{span{start: uint64(b.ptr), end: uint64(b.ptr) + b.size}, "block"})
		used[b.page.id] += b.size
	}
	for id, ps := range parts {
		if l.pages[id] == nil {
			c.fail("small pool: spans %v in unknown page %d", ps, id)
		}
	}
	for id, p := range l.pages {
		if p.id != id || p.blk == nil || p.blk.page != p || p.blk.size != l.pageSize || p.blk.live != true || p.blk.indexed {
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

// checkPhysical verifies that loose spans, primitive blocks and stitched pieces tile the present
// chunks exactly.
func (l *layout) checkPhysical(c *checker) {
	type owned struct {
		s    span
		what string
	}
	var all []owned
	users := map[*view]int{}
	held, inUse := map[*view]uint64{}, map[*view]uint64{}
	owner := map[span]*block{}
	l.loose.byAddr.walk(func(s span) bool { all = append(all, owned{s, "loose"}); return true })
	large := func(b *block, what string) {
		switch b.kind {
		case primitive:
			all = append(all, owned{span{start: b.pos, end: b.pos + b.size}, what})
			owner[span{start: b.pos, end: b.pos + b.size}] = b
			if b.ptr != l.arenaBase+uintptr(b.pos) {
				c.fail("%s %#x: not at its arena offset %d", what, b.ptr, b.pos)
			}
		case stitched:
			if b.view == nil || l.views[b.view.base] != b.view {
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
	for _, b := range l.blocks.All() {
		if b.kind != small {
			large(b, "block")
		}
	}
	for _, p := range l.pages {
		large(p.blk, "page")
	}
	if s, bad, err := l.owners.misKeyed(); err != nil {
		c.fail("owner index: %v", err)
	} else if bad {
		c.fail("owner index: %+v is keyed out of its place", s)
	}
	n := 0
	l.owners.walkNodes(func(nd *tnode) bool {
		n++
		if owner[nd.s] != nd.b {
			c.fail("owner index: %+v belongs to another block", nd.s)
		}
		return true
	})
	if n != len(owner) || n != l.owners.len() {
		c.fail("owner index holds %d ranges (count %d), blocks own %d", n, l.owners.len(), len(owner))
	}
	slices.SortFunc(all, func(a, b owned) int { return cmp.Compare(a.s.start, b.s.start) })
	var covered uint64
	for i, o := range all {
		covered += o.s.size()
		if i > 0 && all[i-1].s.end > o.s.start {
			c.fail("%s %+v overlaps %s %+v", all[i-1].what, all[i-1].s, o.what, o.s)
		}
		for ch := o.s.start / l.g; ch*l.g < o.s.end; ch++ {
			if ch >= uint64(len(l.slots)) || !l.slots[ch].present {
				c.fail("%s %+v uses arena slot %d, which holds no chunk", o.what, o.s, ch)
				break
			}
		}
	}
	for _, v := range l.views {
		if users[v] != v.users {
			c.fail("view %#x: %d blocks use it, count says %d", v.base, users[v], v.users)
		}
		if held[v] != v.held || inUse[v] != v.inUse {
			c.fail("view %#x: its blocks hold %d bytes, %d live; counts say %d, %d", v.base, held[v], inUse[v], v.held, v.inUse)
		}
	}
	present, holes := uint64(0), 0
	holeBelow := false
	for i, s := range l.slots {
		if s.present {
			present++
			pa := l.allocs[s.h]
			if pa == nil || uint64(i) < pa.first || uint64(i) >= pa.first+pa.n || s.hoff != (uint64(i)-pa.first)*l.g {
				c.fail("slot %d: handle %d offset %d does not match its allocation", i, s.h, s.hoff)
			}
		} else {
			holes++
			if !s.blocked && uint64(i) < l.holeFrom && !holeBelow {
				holeBelow = true
				c.fail("slot %d: a hole below where grow looks for holes (%d)", i, l.holeFrom)
			}
			if s.blocked {
				blocked := false
				for _, o := range l.orphans {
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
	if covered != present*l.g {
		c.fail("blocks and loose spans cover %d bytes, chunks hold %d", covered, present*l.g)
	}
	if present*l.g != l.reserved {
		c.fail("%d chunks present, reserved says %d bytes", present, l.reserved)
	}
	if holes != l.holes {
		c.fail("%d empty slots, count says %d", holes, l.holes)
	}
	if l.reserved > l.peakReserved || l.reserved+l.orphanBytes > l.capacity {
		c.fail("reserved %d, peak %d, capacity %d", l.reserved, l.peakReserved, l.capacity)
	}
}

// checkRoom verifies the room index (room.go): exactly the gaps between the ranges of the large
// blocks in the owner index that it holds live, and every block whose liveness it has not caught
// up with is queued.
func (l *layout) checkRoom(c *checker) {
	l.checkFreeSet(c, "room", l.room)
	l.checkRoomBounds(c)
	var want []span
	at := roomAll.start
	l.owners.walkNodes(func(n *tnode) bool {
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
	for _, b := range l.blocks.All() {
		queued(b, "block")
	}
	for _, p := range l.pages {
		queued(p.blk, "page")
	}
	var got []span
	l.room.byAddr.walk(func(s span) bool { got = append(got, s); return true })
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

// checkStitchable verifies the stitch index (stitchable.go) against a walk over the loose ranges:
// every candidate's head and tail indexed, nothing else, the sum of their middles and the
// candidates with whole handles; or, dropped until its next read, that it holds nothing.
func (l *layout) checkStitchable(c *checker) {
	if x := &l.stitchable; x.stale {
		if x.mids != 0 || x.heads.len() != 0 || x.tails.len() != 0 || x.wholes.len() != 0 {
			c.fail("stitch index: dropped, but holding %d heads, %d tails and %d whole-handle bytes", x.heads.len(), x.tails.len(), x.mids)
		}
		return
	}
	want := newStitchable()
	l.loose.byAddr.walk(func(s span) bool {
		if cd, ok := l.candidateOf(s); ok {
			want.mids += cd.mid
			want.heads.insert(span{start: s.start, end: s.start + cd.head})
			want.tails.insert(span{start: s.start, end: s.start + cd.tail})
			if cd.mid > 0 {
				want.wholes.insert(s)
			}
		}
		return true
	})
	x := &l.stitchable
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

func (l *layout) checkViews(c *checker) {
	views := make([]int32, len(l.slots))
	for _, o := range l.orphans {
		for _, ch := range o.chunks {
			views[ch]++
		}
	}
	var bytes uint64
	for base, v := range l.views {
		bytes += v.vsize
		if v.base != base || v.vsize != uint64(len(v.chunks))*l.g || len(v.pieces) == 0 || v.gone {
			c.fail("view %#x: malformed", base)
			continue
		}
		var sum uint64
		present := true
		for i, p := range v.pieces {
			sum += p.size()
			first, ok1 := l.handleSpanIfAny(p.start)
			last, ok2 := l.handleSpanIfAny(p.end - 1)
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
		if sum != v.cap || v.head != v.pieces[0].start-l.handleSpan(v.pieces[0].start).start {
			c.fail("view %#x: capacity %d or head %d wrong", base, v.cap, v.head)
		}
		if got := l.chunksOf(v.pieces); !slices.Equal(got, v.chunks) {
			c.fail("view %#x: maps chunks %v, pieces need %v", base, v.chunks, got)
		}
		for _, ch := range v.chunks {
			if ch < uint64(len(views)) {
				views[ch]++
			}
		}
	}
	for i, n := range views {
		if l.slots[i].views != n {
			c.fail("slot %d: %d views map it, count says %d", i, n, l.slots[i].views)
		}
	}
	if bytes != l.viewBytes {
		c.fail("views hold %d virtual bytes, count says %d", bytes, l.viewBytes)
	}
	n := 0
	for v := l.viewOldest; v != nil; v = v.newer {
		n++
		if l.views[v.base] != v || (v.newer == nil && l.viewNewest != v) {
			c.fail("view list holds view %#x, which is unknown or misplaced", v.base)
		}
	}
	if n != len(l.views) {
		c.fail("%d views, %d in the view list", len(l.views), n)
	}
}
