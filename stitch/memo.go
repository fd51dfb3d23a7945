package stitch

import (
	"cmp"
	"slices"
)

// Iteration memos: where the large requests of a training iteration went, for the next
// iteration of the same shape.
//
// A training loop runs the same script of requests every iteration, but with dynamic padding the
// script's sizes change with the sequence length: an iteration of length 384 follows one of 512
// and precedes one of 128. Homes (homes.go) remember places per size, and the places one length
// uses are disturbed by the iterations of other lengths in between, so that iterations of a length
// seen before may still stitch. When the caller marks where iterations begin (MarkIteration), the
// engine also remembers, per iteration, where each large request went, by its ordinal in the
// iteration (the k-th request since the mark) and its size.
//
// At its first large request, a later iteration chooses the most recent memo that has a request of
// the same size at the same ordinal and agrees with every large request the iteration made so far,
// and follows it: each later large request goes to that memo's place for its ordinal, an exact
// match takes the cached block lying there (found through the owner index) rather than the lowest
// one, and a miss takes the place itself, flushing what is cached there, if no live block uses it;
// pages the small pool needs go where the memo's pages went. At the first request whose size differs
// from the memo's (iterations of different shapes often begin alike, with requests whose sizes do not
// depend on the shape) the iteration hands over to the most recent memo that agrees with all of it so
// far, else to one of a longer shape that dominates it (dominate.go); when none does, it is a new
// shape, placed by the usual rules until the next mark (following memos of other shapes piecemeal
// only scatters it) and laid out from coalesced memory (shape.go), and remembered in turn. So an
// iteration of a shape seen before replays the placements of the last one, stitched blocks
// included, and makes no driver call: every shared trace repeated four times in a row makes none in its fourth repetition
// (TestMemoConvergesOnTraces), and the traces gpu-train recorded on an H200 make none from their
// fourth (TestMemoConvergesOnGPUTrainTraces).
//
// Cost: one counter increment per request; when marked, one append per large request, and per exact
// match of a large size a cursor step in the followed memo and a lookup of the block at the
// memo's place by its pointer (BenchmarkExactPairMarked: the same as unmarked). An iteration
// that follows the memo of another shape than the one before it re-carves a place at each
// request whose size the cache does not hold there. Laying the memo's later places out as cached
// blocks in one pass when the iteration begins to follow it (each place no live block uses and no
// earlier place of the pass overlaps) was measured at 0.5.0 on the H200 ResNet-18 loop repeated
// (steady-replay -time): 94% of the blocks laid out were taken by their requests, but the time
// per pair fell 5% with the caches evicted between requests and rose 19% with them warm, the pass
// walking every later entry of the memo: not taken. Choosing a memo
// compares the iteration so far with each remembered one, once per iteration or hand-over. The
// least recently seen memos are forgotten past maxRemembered requests in all (an iteration
// identical to a remembered one replaces it): with dynamic padding a run may cycle through a
// hundred shapes or more (lengths 128-1024 in steps of 8 are 113), and a shape whose memo was
// forgotten before it recurs is placed anew, with driver calls, every time
// (reliability.TestMarkedRunOfManyShapes).

// memoEntry is one large request of a remembered iteration.
type memoEntry struct {
	ord  uint64 // its ordinal in the iteration: 1 for the first request after the mark
	size uint64 // rounded size
	at   home   // where it went
	page bool   // a page the small pool took for the ord-th request, a small one
	// scattered: by this request the iteration had followed a dominating memo, or a memo
	// recorded after one had (dominate.go)
	scattered bool
}

// same reports whether c and d are the same entry: c == d, field by field (the compiler's
// struct equality calls a memory compare for each entry).
func (c memoEntry) same(d memoEntry) bool {
	return c.ord == d.ord && c.size == d.size && c.at == d.at && c.page == d.page && c.scattered == d.scattered
}

// memo is one remembered iteration, its entries in ordinal order.
type memo []memoEntry

// at returns the index of m's entry for ordinal ord.
func (m memo) at(ord uint64) (int, bool) {
	return slices.BinarySearchFunc(m, ord, func(x memoEntry, o uint64) int { return cmp.Compare(x.ord, o) })
}

// MarkIteration tells the engine that a training iteration begins. It is a hint: it changes where
// blocks go, never whether a request is served. Without it the engine finds where iterations
// begin from the live bytes (iterfinder.go); the first mark turns that off.
func (e *Engine) MarkIteration() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	if !e.callerMarks && e.finder.count > 0 {
		// The caller's marks replace the finder's: what its iterations left (those of the job's
		// setup, for a caller that marks from its first step) is dropped, and with their memos
		// the iteration they showed.
		e.memoCur, e.memos, e.remembered = e.memoCur[:0], nil, 0
		e.seenIteration = false
	}
	e.callerMarks, e.afterFree = true, false
	e.startIteration()
}

// startFoundIteration begins an iteration where the finder found one (Alloc).
func (e *Engine) startFoundIteration() {
	if e.finder.count >= 2 && e.belowPeakDeep() {
		e.deepFound = true
	}
	e.startIteration()
}

// startIteration begins an iteration: at a mark, or where the finder found one.
func (e *Engine) startIteration() {
	e.iterOrd = 0
	e.grownIter = 0
	e.iter.startIteration()
	e.forgetAway() // the memos may change, and the first mark leaves the contexts for them
	if len(e.memoCur) == 0 {
		return
	}
	// The most recent memo is last; an iteration identical to a remembered one moves it there.
	m := memo(nil)
	if i := slices.IndexFunc(e.memos, func(m memo) bool { return slices.EqualFunc(m, e.memoCur, memoEntry.same) }); i >= 0 {
		m = e.memos[i]
		e.memos = slices.Delete(e.memos, i, i+1)
	} else {
		m = slices.Clone(e.memoCur)
		e.remembered += len(m)
		forget := 0
		for forget < len(e.memos) && (e.remembered > maxRemembered || len(e.memos)-forget >= maxMemos) {
			e.remembered -= len(e.memos[forget])
			forget++
		}
		e.memos = slices.Delete(e.memos, 0, forget)
	}
	e.memos = append(e.memos, m)
	e.memoCur = e.memoCur[:0]
	e.seenIteration = true
}

// recordPlace remembers where large block b went for the current request: the request's own block,
// or (page) a page the small pool took for it.
func (e *Engine) recordPlace(b *block, page bool) {
	if !page {
		e.rememberContext(b)
	}
	if !e.marked() || len(e.memoCur) == maxMemoEntries {
		return
	}
	e.memoCur = append(e.memoCur, memoEntry{ord: e.iterOrd, size: b.size, at: b.place(), page: page, scattered: e.iter.scattered})
}

// findPageMemo returns the place the followed memo gave a page taken for the current request, if
// it had one and the place is free. Pages follow the small pool's state, which differs from one
// iteration to the next more than the large requests do: a page where the memo had none, or none
// where it had one, does not make the iteration leave the memo.
func (e *Engine) findPageMemo() (home, bool) {
	m := e.iter.follow
	if m == nil {
		return home{}, false
	}
	j, ok := m.at(e.iterOrd)
	if !ok || !m[j].page || !e.placeFree(m[j].at, e.pageSize) {
		return home{}, false
	}
	return m[j].at, true
}

// findMemo returns the place the memo this iteration follows gives the current request of r bytes
// (memoPlace), if the place still exists and no live block uses it, with the cached blocks there
// (placeUnder), for takeHomeOver; none unmarked.
func (e *Engine) findMemo(r uint64) (home, []*block, bool) {
	if !e.marked() {
		return home{}, nil, false
	}
	h, ok := e.memoPlace(r)
	if !ok {
		return home{}, nil, false
	}
	under, free := e.placeUnder(h, r)
	if !free {
		e.leaveDominating()
		return home{}, nil, false
	}
	return h, under, true
}

// memoPlace returns the place the memo this iteration follows gave its request of r bytes at the
// current ordinal. When no memo is followed (at the start of an iteration, or after the followed
// one's script differed), it first chooses the most recent memo that agrees with every large
// request of this iteration so far and has one of r bytes here, which is followed from then on;
// when no memo agrees, the iteration is a new shape and looks for none until the next mark.
func (e *Engine) memoPlace(r uint64) (home, bool) {
	if e.iter.following() {
		if h, ok := e.followed(r); ok {
			return h, true
		}
		if e.iter.following() {
			return home{}, false // the memo's request here was small, or made no request here
		}
	}
	if e.iter.phase == memoNewShape || len(e.memos) == 0 {
		return home{}, false
	}
	for i := len(e.memos) - 1; i >= 0; i-- {
		m := e.memos[i]
		j, ok := m.at(e.iterOrd)
		if ok && !m[j].page && m[j].size == r && e.agrees(m, false) {
			e.iter.followFrom(m, j)
			return m[j].at, true
		}
	}
	if m, j, ok := e.dominatingMemo(r); ok && e.strandFits(m[j].size-r) {
		e.followDominating(m, j)
		return m[j].at, true
	}
	e.beginNewShape()
	return home{}, false
}

// agrees reports whether memo m has every large request of the current iteration so far, at the
// same ordinal with the same size (or, atLeast, a size at least as large).
func (e *Engine) agrees(m memo, atLeast bool) bool {
	j := 0
	for _, c := range e.memoCur {
		if c.page {
			continue
		}
		for j < len(m) && m[j].ord < c.ord {
			j++
		}
		if j == len(m) || m[j].ord != c.ord || m[j].page || m[j].size != c.size && !(atLeast && m[j].size > c.size) {
			return false
		}
	}
	return true
}

// placeFree reports whether place h of r bytes still exists and no live block uses it.
func (e *Engine) placeFree(h home, r uint64) bool {
	if h.v != nil && h.v.gone {
		return false // the view was released
	}
	_, ok, _ := e.homeCost(h, r, ^uint64(0), nil)
	return ok
}

// placeUnder is placeFree that also returns, when the place is free, the cached blocks there, in
// blockCache.flushBuf (valid until the next change of the layout or use of the buffer).
func (e *Engine) placeUnder(h home, r uint64) ([]*block, bool) {
	if h.v != nil && h.v.gone {
		return nil, false // the view was released
	}
	under := e.flushBuf[:0]
	_, ok, _ := e.homeCost(h, r, ^uint64(0), &under)
	if !ok {
		clear(under)
		e.flushBuf = under[:0]
		return nil, false
	}
	e.flushBuf = under[:0]
	return under, true
}

// pick chooses the cached block of list l (blocks of r bytes) to hand out: the one at the place
// the followed memo gives the current request, else the lowest; nil when the memo's place holds
// none of them; unmarked, the lowest.
func (e *Engine) pick(l *freeList, r uint64) *block {
	if r < e.cfg.smallThreshold || e.iter.phase == memoNewShape || !e.marked() {
		return l.head
	}
	want, ok := e.memoPlace(r)
	if !ok {
		return l.head
	}
	return e.cachedAt(want, l)
}

// cachedAt returns the cached block of list l that lies at place h, or nil: a lookup in
// layout.blocks by the pointer a block there has, not a walk of the list (which may hold thousands
// of blocks), nor a descent of the owner index (a cache miss a level on a GPU host).
// The list's first and last blocks are looked at first: the lowest and highest of their size,
// which a training loop's layer of one shape, carved in address order, takes back in order.
func (e *Engine) cachedAt(h home, l *freeList) *block {
	if b := l.head; b != nil && b.place() == h {
		return b
	}
	if b := l.tail; b != nil && b.place() == h {
		return b
	}
	if h.v != nil && h.v.gone {
		return nil
	}
	b := e.blocks.At(uint64(e.addressOf(h)))
	if b == nil || b.live || b.list != l || b.place() != h {
		return nil
	}
	return b
}

// followed returns the place the followed memo gives the current request of r bytes; it stops
// following the memo when the memo's request there had another size.
func (e *Engine) followed(r uint64) (home, bool) {
	s := &e.iter
	m := s.follow
	for s.cursor < len(m) && m[s.cursor].ord < e.iterOrd {
		s.cursor++
	}
	if s.cursor == len(m) || m[s.cursor].ord != e.iterOrd || m[s.cursor].page {
		if s.phase == memoDominating && s.dominance == domOne {
			// A large request where the dominating memo had a small one, or none: memoPlace hands
			// over to another dominating memo, once (dominate.go).
			s.dominance, s.scriptEnded = domScriptEnded, m
			s.handOver()
			return home{}, false
		}
		e.leaveDominating() // a large request where the memo had a small one, or none
		return home{}, false
	}
	if m[s.cursor].size != r && !(s.phase == memoDominating && e.stillDominated(m[s.cursor].size, r)) {
		s.handOver() // the iteration left the memo's script: memoPlace hands over, if another memo agrees
		return home{}, false
	}
	if s.phase == memoDominating && !e.strandFits(m[s.cursor].size-r) {
		e.leaveDominating() // its places would strand more than the capacity leaves
		return home{}, false
	}
	return m[s.cursor].at, true
}

// place is where large block b lies, as a home. A primitive block's is read from its first
// cache line (first, which is pos): the exact-match path compares and records the places of the
// blocks it hands out, and reads nothing else of their second lines.
func (b *block) place() home {
	switch b.kind {
	case primitive:
		return home{off: b.first}
	case stitched:
		return home{v: b.view, off: b.voff}
	}
	return home{off: b.pos}
}
