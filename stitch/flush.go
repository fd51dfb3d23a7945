package stitch

import "slices"

// Flushing: a cached block given back to the layout (its bytes to the loose set or its page), to
// make room for a request no cached block fits. The block cache flushes; the placement chain
// (chain.go) decides when and where.

// flushUntil moves flushable cached blocks of one pool to its free ranges, highest address first
// (a canonical order: the lowest blocks, which free lists hand out first, stay cached), until one
// free range of at least r bytes forms; it reports whether one did. The blocks are taken from a
// max-heap of their first bytes, built in one pass: a miss that flushes a few blocks of a pool
// holding thousands costs a walk of the pool, not a sort of it.
func (bc *blockCache) flushUntil(age *ageList, r uint64) bool {
	h := bc.flushHeap[:0]
	for b := age.oldest; b != nil; b = b.newer {
		h = append(h, flushCandidate{at: b.physStart(), b: b})
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
	found := false
	for len(h) > 0 {
		b := h[0].b
		last := len(h) - 1
		h[0], h[last] = h[last], flushCandidate{}
		h = h[:last]
		siftDown(h, 0)
		if bc.flushable(b) && bc.flush(b) >= r {
			found = true
			break
		}
	}
	clear(h)
	bc.flushHeap = h[:0]
	return found
}

// flushSmallPool gives every flushable cached small block back to its page (a small block is
// flushable unless another stream may still use its bytes: settled). It reports whether any was.
//
// A small request that misses the cache flushes the whole small pool rather than until one free
// range holds it, as PyTorch's small pool coalesces every freed block at once: a partial flush
// leaves the pool's free bytes in pieces between the blocks still cached, best fit then lays the
// pool out differently from one repetition of the script to the next, and a small pool that fits
// in one repetition needs a page more in a later one. Measured (TestMemoConvergesOnGPUTrainTraces
// with 2 MiB handles, the GPT-2 XL LoRA gpu-train trace, whose small requests change with the
// sequence length, played four times): flushing until one range holds the request grows the
// pool by 18 pages in the fourth repetition; flushing the pool grows it in the first two only,
// to fewer pages (147 against 168).
func (bc *blockCache) flushSmallPool() bool {
	flushed := false
	for b := bc.smallAge.oldest; b != nil; {
		next := b.newer
		if bc.flushable(b) {
			bc.flush(b)
			flushed = true
		}
		b = next
	}
	return flushed
}

// flushCandidate is a cached block in flushUntil's heap, keyed by its first byte (block.physStart,
// distinct among the cached blocks of one pool: they own disjoint bytes).
type flushCandidate struct {
	at uint64
	b  *block
}

// siftDown restores the max-heap order of h below index i.
func siftDown(h []flushCandidate, i int) {
	for {
		top, l := i, 2*i+1
		if l < len(h) && h[l].at > h[top].at {
			top = l
		}
		if l+1 < len(h) && h[l+1].at > h[top].at {
			top = l + 1
		}
		if top == i {
			return
		}
		h[i], h[top] = h[top], h[i]
		i = top
	}
}

// flushable reports whether cached block b may serve other streams (see settled).
func (bc *blockCache) flushable(b *block) bool { return bc.settled(b) }

// flush gives cached block b's bytes back to the free ranges and forgets it; it returns the size of
// the largest free range its bytes joined.
func (bc *blockCache) flush(b *block) uint64 {
	bc.takeCached(b)
	bc.unindex(b)
	var merged uint64
	if b.kind == small {
		merged = bc.flushSmall(b)
	} else {
		merged = bc.releaseLarge(b)
	}
	bc.recycle(b)
	return merged
}

// flushInto flushes cached large block b for a block about to be made of the arena ranges pieces
// (sorted by start): as flush does, except that of b's bytes only those outside pieces are given
// back to the loose set (dissolveInto).
func (bc *blockCache) flushInto(b *block, pieces []span) {
	bc.takeCached(b)
	bc.dissolveInto(b, pieces)
}

// uncache takes cached primitive block b, the lowest of the blocks at an arena home about to be
// re-cut into a block of the arena ranges pieces (sorted by start), out of the cache: as flushInto
// does, but b keeps its node of the owner index (recarve).
func (bc *blockCache) uncache(b *block, pieces []span) {
	bc.takeCached(b)
	bc.leaveRoom(b)
	bc.giveBackOutside(span{start: b.pos, end: b.pos + b.size}, pieces)
}

// idle reports whether large block b may be flushed to make room: cached and, with several
// streams, settled.
func (bc *blockCache) idle(b *block) bool { return !b.live && bc.flushable(b) }

// blocksUnder gathers, once each, the blocks owning bytes of pieces, into e.flushBuf.
func (bc *blockCache) blocksUnder(pieces []span) []*block {
	under := bc.flushBuf[:0]
	for _, p := range pieces {
		bc.owners.overlapping(p.start, p.end, func(n *tnode) bool {
			if !slices.Contains(under, n.b) {
				under = append(under, n.b)
			}
			return true
		})
	}
	return under
}

// flushUnder flushes every cached block owning bytes of pieces.
func (bc *blockCache) flushUnder(pieces []span) {
	flush := bc.blocksUnder(pieces)
	for _, b := range flush {
		bc.flush(b)
	}
	clear(flush)
	bc.flushBuf = flush[:0]
}
