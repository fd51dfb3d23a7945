package stitch

import (
	"context"
	"errors"
	"log/slog"
)

// The placement chain of a large request (alloc.go calls it on every miss of r bytes, r at least
// the small threshold, or a page). Its sources are tried in the order of largeChain: each only
// proposes a place, a home (bytes of the arena or a window of a view) or pieces to stitch, and
// changes no memory; the first proposal is taken by take, the one change. A step marked room
// makes room first (it flushes cached blocks), and its source proposes from what that left. Past
// the chain, memory is made (placeInNewMemory): empty pages given back, growth, a wait for the
// device, each followed by the sources that new loose memory can feed.
//
// A source may advance the memo state (memoState: which memo the iteration follows), which is
// the iteration's bookkeeping, not a place; the flush that a new shape owes after a dominating
// iteration is paid by the step after the memo source (payShapeFlush), not inside the lookup.

// proposal is a place a source proposes for a request: a home to take, flushing the cached blocks
// that lie there, (pieces set) free pieces to map under a new view, or (grow set) new memory in
// their stead.
type proposal struct {
	at     home
	pieces []span
	grow   bool
	out    Outcome
	// under: the cached blocks at the home, when the source found them (known): the memo's
	// place, whose lookup walks them (placeUnder)
	under []*block
	known bool
}

// chainStep is one step of the chain: room, if set, makes room first and reports whether the
// step applies; propose, if set, proposes a place.
type chainStep struct {
	room    func(e *Engine, r uint64) bool
	propose func(e *Engine, r uint64) (proposal, bool)
}

// largeChain is the placement chain of a large request, in the order its steps are tried.
var largeChain = [...]chainStep{
	{propose: (*Engine).proposeMemo},                                     // the followed memo's place (memo.go)
	{room: (*Engine).payShapeFlushStep},                                  // a new shape after a dominating iteration: the large cache flushed (dominate.go)
	{propose: (*Engine).proposeHome},                                     // unmarked: where a block of this size lay, flushing the fewest cached bytes (homes.go)
	{propose: (*Engine).proposeLoose},                                    // the best-fitting loose range
	{propose: (*Engine).proposeViewWindow},                               // a run of loose bytes in a view
	{room: (*Engine).flushForNewShape, propose: (*Engine).proposeLowest}, // a new shape: from coalesced memory, first fit (shape.go)
	{propose: (*Engine).proposeIdle},                                     // the idle window that flushes the fewest cached bytes (idle.go)
	{propose: (*Engine).proposeStitch},                                   // loose pieces stitched under a new view
	{propose: (*Engine).proposeIdleStitch},                               // idle pieces stitched, flushing the cached blocks they cover
	{room: (*Engine).flushLargeUntil, propose: (*Engine).proposeLoose},   // cached large blocks flushed until a loose range of r bytes forms
}

// placeLarge places r bytes: the first proposal of the chain is taken; past it, new memory.
func (e *Engine) placeLarge(r uint64, _ Stream) (*block, Outcome, error) {
	for _, st := range largeChain {
		if st.room != nil && !st.room(e, r) || st.propose == nil {
			continue
		}
		if b, out, err := e.placeFrom(r, st.propose); b != nil || err != nil {
			return b, out, err
		}
	}
	return e.placeInNewMemory(r)
}

// placeFrom takes the first proposal of sources; nil if none proposes one.
func (e *Engine) placeFrom(r uint64, sources ...func(*Engine, uint64) (proposal, bool)) (*block, Outcome, error) {
	for _, src := range sources {
		p, ok := src(e, r)
		if !ok {
			continue
		}
		if p.grow {
			if b, err := e.growAnew(r); b != nil || err != nil {
				return b, OutcomeNewChunks, err
			}
			// The driver refused the memory: the pieces are stitched after all.
		}
		b, err := e.take(p, r)
		if err != nil {
			return nil, 0, err
		}
		return b, p.out, nil
	}
	return nil, 0, nil
}

// take makes proposal p a block of r bytes: the one change a placement makes.
func (e *Engine) take(p proposal, r uint64) (*block, error) {
	if p.pieces != nil {
		e.flushUnder(p.pieces)
		return e.stitch(p.pieces, r)
	}
	return e.takeHomeOver(p.at, r, p.under, p.known), nil
}

func (e *Engine) proposeMemo(r uint64) (proposal, bool) {
	h, under, ok := e.findMemo(r)
	return proposal{at: h, out: OutcomeSplit, under: under, known: ok}, ok
}

// proposeHome proposes, unmarked, the home of r bytes that flushes the fewest cached bytes. With
// iterations marked the memos place what repeats, and a request no memo places (a new shape, an
// iteration not yet remembered) goes to the best-fitting loose range instead: a home keeps a
// block of the size where one lay, and leaves the gaps between homes of sizes that no longer
// come. Measured on the 20 traces of the placement check (gmlake-bench replay --min-capacity
// --repeat 4, H200 cost model), marked, homes against none: capacity / peak active higher on 9
// traces (llama1b-full 1.0076 against 1.0030, opt1.3b-full 1.0076 against 1.0021, bert-base MLM
// 1.0067 against 1.0023) and lower on 8 (gpt2xl-full-ckpt 1.0020 against 1.0055, vitb16 1.0017
// against 1.0028, the rest within 0.0005); the largest steady iteration's driver time summed
// 740 against 678 ms, the largest warm-up one's 1,760 against 1,714; 0 calls in the fourth
// repetition either way (the two-stream trace aside: 63 against 49).
func (e *Engine) proposeHome(r uint64) (proposal, bool) {
	if e.marked() {
		return proposal{}, false
	}
	h, ok := e.findHome(r)
	return proposal{at: h, out: OutcomeSplit}, ok
}

func (e *Engine) proposeLoose(r uint64) (proposal, bool) {
	pos, ok := e.looseFit(r)
	return proposal{at: home{off: pos}, out: OutcomeSplit}, ok
}

func (e *Engine) proposeViewWindow(r uint64) (proposal, bool) {
	v, off := e.findWindow(r)
	return proposal{at: home{v: v, off: off}, out: OutcomeSplit}, v != nil
}

func (e *Engine) proposeLowest(r uint64) (proposal, bool) {
	pos, ok := e.lowestFit(r)
	return proposal{at: home{off: pos}, out: OutcomeSplit}, ok
}

func (e *Engine) proposeIdle(r uint64) (proposal, bool) {
	w, ok := e.findIdle(r)
	return proposal{at: home{v: w.v, off: w.off}, out: OutcomeSplit}, ok
}

func (e *Engine) proposeStitch(r uint64) (proposal, bool) {
	pieces, _ := e.stitchPlan(r)
	return e.stitchOrGrow(r, pieces), pieces != nil
}

func (e *Engine) proposeIdleStitch(r uint64) (proposal, bool) {
	pieces, _ := e.idlePlan(r)
	return e.stitchOrGrow(r, pieces), pieces != nil
}

// stitchOrGrow proposes pieces, a plan to stitch r bytes, or new memory in their stead where that
// is the cheaper in the driver and the device has room for it (growsCheaper).
func (e *Engine) stitchOrGrow(r uint64, pieces []span) proposal {
	return proposal{pieces: pieces, grow: pieces != nil && e.growsCheaper(r, pieces), out: OutcomeStitch}
}

// growAnew makes r bytes of new memory (growsCheaper), with the bytes ahead of a new peak as a
// growth at the end of the chain makes them. nil, and nothing changed, when the driver (or the
// capacity) refuses the memory.
func (e *Engine) growAnew(r uint64) (*block, error) {
	if err := e.growDeficit((r + e.g - 1) / e.g); err != nil {
		if errors.Is(err, ErrOutOfMemory) {
			return nil, nil
		}
		return nil, err
	}
	if b, _, _ := e.placeFrom(r, (*Engine).proposeLoose); b != nil {
		return b, nil
	}
	// The new handles filled holes of the arena apart: the end of the chain joins them.
	b, _, err := e.placeInNewMemory(r)
	return b, err
}

// growDeficit grows the need chunks a request lacks, with the bytes ahead of a new peak (peakAhead)
// or the growth's extra (growthExtra), whichever is more. When the driver refuses that memory
// within the capacity (it has less than the capacity says: another process, another pool), the
// need alone is grown.
func (e *Engine) growDeficit(need uint64) error {
	ahead := e.peakAhead(need)
	n := need + max(ahead, e.growthExtra(need))
	err := e.grow(n, need+ahead)
	if err != nil && n > need && e.reserved+e.orphanBytes+n*e.g <= e.capacity && errors.Is(err, ErrOutOfMemory) {
		n = need
		err = e.grow(n, need)
	}
	if err != nil {
		return err
	}
	e.grownIter += n * e.g
	return nil
}

// growsCheaper reports whether r bytes are better made anew than stitched from pieces: once the
// caller's marks have shown iterations of growInsteadMemos shapes (its memos; an iteration like
// the last takes its memo's place), when the stitch would map more than growInsteadHandles times
// as many handles as the growth would create (every VMM call costs per handle), and the growth
// leaves a growInsteadRoomShare-th of the capacity free and the memory held below the job's peak
// live bytes and a growInsteadHeldShare-th of them. The pieces stay free for the requests that fit
// them; under a capacity that leaves no such room, the engine stitches (tunables.go says what it
// trades).
func (e *Engine) growsCheaper(r uint64, pieces []span) bool {
	if !e.callerMarks || len(e.memos) < growInsteadMemos || e.cfg.handleSize > 0 {
		return false
	}
	held := e.reserved + e.orphanBytes
	need := (r + e.g - 1) / e.g * e.g
	if held+need > e.capacity || (e.capacity-held-need)*growInsteadRoomShare < e.capacity ||
		held+need >= e.peakLive+e.peakLive/growInsteadHeldShare {
		return false
	}
	unit := min(need, e.deficitBytes(e.capacity-held)/e.g*e.g)
	if unit == 0 {
		return false
	}
	handles := uint64(0)
	for _, p := range pieces {
		for at := p.start; at < p.end; handles++ {
			at = e.handleSpan(at).end
		}
	}
	return handles > growInsteadHandles*((need+unit-1)/unit)
}

// payShapeFlushStep is payShapeFlush as a step of the chain.
func (e *Engine) payShapeFlushStep(uint64) bool { return e.payShapeFlush() }

// flushLargeUntil flushes cached large blocks, highest first, until a loose range of r bytes
// forms; it reports whether one did.
func (e *Engine) flushLargeUntil(r uint64) bool { return e.flushUntil(&e.largeAge, r) }

// placeInNewMemory is the end of the chain: no free memory holds r bytes as it lies. Empty pages
// are given back when the capacity leaves no room for the deficit (or the driver refuses it);
// else the deficit is grown, and with several streams the device is waited for once when the
// driver has no more; after each, the sources that the new loose memory feeds propose again.
func (e *Engine) placeInNewMemory(r uint64) (*block, Outcome, error) {
	pagesReleased, synced := false, false
	out := OutcomeStitch
	loose := func() *block { // the source new loose memory feeds
		b, _, _ := e.placeFrom(r, (*Engine).proposeLoose) // a home: no error
		return b
	}
	for {
		pieces, reach := e.stitchPlan(r)
		if pieces == nil && !pagesReleased && e.pagesHeld() &&
			e.reserved+e.orphanBytes+(r-reach+e.g-1)/e.g*e.g > e.capacity {
			// Cached small blocks may pin whole pages: give the empty ones back, but only when
			// the memory the request lacks cannot be created: a page made again lands elsewhere
			// and moves the layout of the next iteration, and its cached small blocks are lost.
			pagesReleased = true
			e.releasePages()
			if b, _, _ := e.placeFrom(r, (*Engine).proposeLoose, (*Engine).proposeViewWindow); b != nil {
				return b, OutcomeSplit, nil
			}
			continue
		}
		if pieces != nil {
			e.log.Debug("stitch: mapping free pieces under a new range", "bytes", r, "pieces", len(pieces),
				"loose_bytes", e.loose.bytes, "loose_ranges", e.loose.len(), "views", len(e.views))
			b, err := e.take(proposal{pieces: pieces}, r)
			if err != nil {
				return nil, 0, err
			}
			return b, out, nil
		}
		e.logGrowth(r, reach)
		err := e.growDeficit((r - reach + e.g - 1) / e.g)
		if err != nil {
			if errors.Is(err, ErrOutOfMemory) && !synced && e.multiStream && (e.largeAge.n > 0 || e.smallAge.n > 0) {
				// Blocks freed on other streams wait for their events: wait for the device once.
				synced = true
				if e.synchronize() == nil {
					e.releasePages()
					e.flushUntil(&e.largeAge, ^uint64(0))
					if b := loose(); b != nil {
						return b, OutcomeSplit, nil
					}
					continue
				}
			}
			if errors.Is(err, ErrOutOfMemory) && !pagesReleased && e.pagesHeld() {
				// The driver has less than the capacity said: the pages go now.
				pagesReleased = true
				e.releasePages()
				if b := loose(); b != nil {
					return b, OutcomeSplit, nil
				}
				continue
			}
			if errors.Is(err, ErrOutOfMemory) {
				return nil, 0, e.outOfMemory(r, err)
			}
			return nil, 0, err
		}
		out = OutcomeNewChunks
		if b := loose(); b != nil {
			return b, out, nil
		}
	}
}

// pagesHeld reports whether the small pool holds pages or cached small blocks that giving pages
// back could free.
func (e *Engine) pagesHeld() bool { return e.smallAge.n > 0 || len(e.pages) > 0 }

// releasePages flushes every cached small block and gives every empty page back to the loose set.
func (e *Engine) releasePages() {
	e.flushSmallPool()
	e.releaseEmptyPages()
}

// logGrowth logs, at debug level, why r bytes need new memory: stitching reaches only reach.
func (e *Engine) logGrowth(r, reach uint64) {
	if !e.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	var sliver uint64
	e.loose.byAddr.walk(func(s span) bool {
		if lo, hi := e.wholeHandles(s); lo > hi {
			sliver += s.size()
		}
		return true
	})
	e.log.Debug("stitch: growing", "bytes", r, "reach", reach, "loose_bytes", e.loose.bytes, "loose_ranges", e.loose.len(),
		"inside_one_handle", sliver, "large_cached", e.largeAge.bytes, "small_free", e.smallFree.bytes, "small_cached", e.smallAge.bytes, "pages", len(e.pages),
		"live", e.live, "reserved", e.reserved)
}
