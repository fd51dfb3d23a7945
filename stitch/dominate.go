package stitch

// Dominating memos: the first iteration of a shorter shape is laid out in the places of a longer
// one.
//
// An iteration of a shape seen before follows its memo (memo.go). The first iteration of each
// shape follows none, and the rules place it (alloc.go, shape.go) among whatever the cache holds,
// with a stitch wherever no free range fits: with dynamic padding that is every new length, in
// the middle of a run. Yet a training script is the same at every length: the same requests in
// the same order, the activations' sizes growing with the length, the others fixed. So the memo of
// a longer iteration has, at each ordinal, a place at least as large as the request, and its
// places were disjoint exactly while the requests are live together. An iteration that follows
// it, taking the first bytes of each place, finds each place free and calls no driver, and it
// fits, since the longer iteration was laid out in the memory reserved now.
//
// So when no memo agrees with the iteration, the most recent one that dominates it is followed: at
// every large request so far, one at the same ordinal at least as large (and not a page). It is
// left at the first request larger than its own, or with no large request of the memo at its
// ordinal; the iteration is then a new shape, placed by the rules. Four guards, each measured on
// the traces below:
//
//   - Alignment: a request whose size the memo has, but at another ordinal, means the two scripts
//     have shifted against each other (PyTorch's first iteration makes the optimizer's state; a
//     length may add a few requests), and the places ahead belong to other requests: the memo is
//     left. Without this guard, GPT-2 XL's optimizer step stitched its temporaries every
//     iteration.
//   - Occupied places: a place of the memo that a live block holds shows that the memo's layout
//     does not hold this iteration (its script was shifted in a way sizes do not show, as ZeRO's
//     first iteration, which makes the optimizer's shards): the memo is left there, rather than
//     followed around the block. Without it, simulated ZeRO-2 ranks needed up to 1.014 x peak.
//   - One per iteration: a dominating memo, once left, is not replaced by another; switching
//     between the layouts of different lengths only scatters the iteration. One exception: a
//     memo left where its script has no large request (a small one, or none: a longer script, as
//     GPT-2 XL's iterations of 7309 requests against those of 7295, or a shorter one) hands over
//     once to another memo that dominates the iteration so far, whose places the occupied-place
//     guard still checks. Only where the sizes agree: handing over where they differ moves calls
//     between traces and makes more in all.
//   - Coalescing after: the blocks of a shorter iteration lie in a longer one's places, each with
//     its tail free, and a new shape laid out in those gaps needs more memory at its peak. So when
//     an iteration becomes a new shape after one whose layout came from a dominating memo
//     (directly, or through the memo of such an iteration), every cached large block is flushed
//     at once, and the shape is laid out from coalesced memory.
//
// And one bound: near the capacity. A dominating memo's places strand their tails, bytes the
// iteration's peak may need; it is followed only while what its places strand in the iteration
// stays within the memory the capacity still allows to grow (strandFits), and the iteration is
// a new shape once they would pass it. Far from the capacity nothing changes. Measured on the 20
// traces of the placement check (gmlake-bench replay --min-capacity --repeat 4), marked, with the
// bound against without: the minimum capacity of the H200 ResNet-50 trace 1.0018 × its peak
// against 1.0140, ResNet-18 1.0011 against 1.0063, gpt2xl-full-ckpt 1.0053 against 1.0055, the
// two-stream trace 1.0004 against 1.0002, the rest the same; every driver figure of the uncapped
// replays the same. Without dominating memos at all the capacities are about these (ResNet-50
// 1.0016), but steady iterations call the driver again (the largest steady iteration's driver
// time 20 ms against 0 on Qwen-150k, 6 on Mixtral, 4 on bert-base MLM).

// dominatingMemo returns the most recent memo that dominates the current iteration and has a
// large request at the current ordinal of at least r bytes, aligned with it; none once the
// iteration has left a dominating memo, but for one hand-over where the memo's script ended.
func (e *Engine) dominatingMemo(r uint64) (memo, int, bool) {
	if d := e.iter.dominance; d == domOne || d == domHandedOver {
		return nil, 0, false
	}
	for i := len(e.memos) - 1; i >= 0; i-- {
		m := e.memos[i]
		if sameMemo(m, e.iter.scriptEnded) {
			continue
		}
		j, ok := m.at(e.iterOrd)
		if ok && !m[j].page && m[j].size >= r && e.agrees(m, true) && (m[j].size == r || !m.asks(r)) {
			return m, j, true
		}
	}
	return nil, 0, false
}

// followDominating makes the current iteration follow memo m, which dominates it, from entry j.
func (e *Engine) followDominating(m memo, j int) {
	s := &e.iter
	if s.dominance == domNone {
		s.dominance = domOne
	} else {
		s.dominance = domHandedOver // from domScriptEnded: dominatingMemo allows no other
	}
	s.phase, s.follow, s.cursor, s.scattered = memoDominating, m, j, true
	if s.followSizes == nil {
		s.followSizes = make(map[uint64]bool)
	}
	clear(s.followSizes)
	for _, c := range m {
		if !c.page {
			s.followSizes[c.size] = true
		}
	}
}

// stillDominated reports whether the request of r bytes may take a place of the dominating memo
// made for one of place bytes: it fits, and the memo's script is not shifted against this one.
func (e *Engine) stillDominated(place, r uint64) bool {
	return place > r && !e.iter.followSizes[r]
}

// strandFits reports whether a dominating memo's place may strand n more bytes (its size beyond
// the request taking it) in this iteration, and counts them if so: while the bytes stranded in
// all stay within the memory the capacity still allows to grow. Far from the capacity a shorter
// shape laid out in a longer one's places calls no driver; near it, the tails those places leave
// free are bytes the iteration's peak may need, and the iteration is a new shape instead, laid
// out by the rules.
func (e *Engine) strandFits(n uint64) bool {
	used := e.reserved + e.orphanBytes
	if used > e.capacity || e.iter.stranded+n > e.capacity-used {
		return false
	}
	e.iter.stranded += n
	return true
}

// leaveDominating ends the following of a dominating memo whose script or places turned out not
// to hold the iteration: from here it is a new shape.
func (e *Engine) leaveDominating() {
	if e.iter.phase == memoDominating {
		e.beginNewShape()
	}
}

// sameMemo reports whether a and b are the same remembered memo.
func sameMemo(a, b memo) bool { return len(a) > 0 && len(b) > 0 && &a[0] == &b[0] }

// asks reports whether memo m has a large request of r bytes.
func (m memo) asks(r uint64) bool {
	for _, c := range m {
		if !c.page && c.size == r {
			return true
		}
	}
	return false
}

// beginNewShape marks the current iteration a new shape: it follows no memo until the next mark.
// After an iteration that followed a dominating memo, every cached large block is to be flushed
// first: the lookup that finds the new shape changes no memory, so it leaves the flush owed, and
// its caller pays it at once (payShapeFlush).
func (e *Engine) beginNewShape() {
	e.iter.phase, e.iter.follow = memoNewShape, nil
	e.iter.flushOwed = e.iter.afterDominating
}

// payShapeFlush makes the flush a new shape owes (beginNewShape), if it owes one: every cached
// large block, so that the shape is laid out from coalesced memory. It may empty the free list a
// lookup was looking at; it reports whether it flushed.
func (e *Engine) payShapeFlush() bool {
	if !e.iter.flushOwed {
		return false
	}
	e.iter.flushOwed = false
	e.flushUntil(&e.largeAge, ^uint64(0))
	return true
}
