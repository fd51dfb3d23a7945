package stitch

import (
	"log/slog"
	"sync"

	"github.com/gmlake/gmlake/internal/intmap"
)

// Engine is the stitching allocator. Make one with New; it is safe for concurrent use.
//
// The engine is three layers, each embedded in the one above and blind to it. The layout core
// (layout, layout.go) says who owns each byte: handles and the arena, the free set, blocks, views
// and pages; its methods carve, map, grow and give back. The block cache (blockCache, cache.go)
// keeps freed blocks whole for their size and stream, knows when the device is done with them
// (streams and events) and flushes them back to the layout. The fields here are the policy above
// both: the memos of past iterations, homes, contexts, the iteration finder, the rules of growth
// and the placement chain that reads them. Each field says what it holds, which functions write
// it (New, Close and Reset aside, which set or clear everything) and which rule of Check covers it
// (check.go: checkBlocks, checkMemos, and the layout's rules). A field that Check does not cover
// is a hint or a statistic: every place taken from a hint is tested free before it is used
// (placeFree, homeCost), so a stale hint costs a search, never a byte.
type Engine struct {
	mu sync.Mutex // guards every field below; held for the whole of each exported call

	// The fields every request and every free reads or writes, together, so that they share a few
	// cache lines: on a GPU host the work between two requests (kernel launches, the framework's
	// own code) evicts the engine from the caches, and each line a request touches is a miss
	// (TestEngineHotFieldsTogether). Those written on every call come first, on the mutex's line
	// and the next; the block cache's and the layout's own open them, which follow. Each belongs
	// to a group below, named beside it.
	//
	// Memos (below): iterOrd, requests since the last mark, this one included. Contexts (below):
	// ctxRing, the last contextWindow requests' parts (stepContext); ctxNext, requests so far: the
	// next index in ctxRing. Statistics (Stats): live and liveBlocks: markLive, cache. Check:
	// checkBlocks (they equal what the live blocks hold). peakLive and outcomes (requests by
	// outcome: reuse, allocSlow) are counts: not checked.
	iterOrd     uint64
	ctxNext     uint64
	ctxRing     [contextWindow]uint64
	live        uint64
	peakLive    uint64
	liveBlocks  int
	outcomes    [NumOutcomes]uint64
	closed      bool // Close ran: every call but Close and Check fails with ErrClosed (handles)
	afterFree   bool // the last call was a free that followed a request (Free sets, Alloc clears): the next request is a trough (finder)
	callerMarks bool // MarkIteration has been called (it sets it): the finder is off (memos)

	cfg config // the options, fixed at New

	// Memos (below): memoCur, where the current iteration's large requests went; iter, where the
	// iteration stands against the memos.
	memoCur []memoEntry
	iter    memoState

	blockCache

	// Growth (growth.go): how the rules that size a growth read the job so far.
	grownIter uint64 // bytes created since the iteration began (growthExtra, peakAhead): growDeficit, startIteration
	// seenIteration: the engine has seen a whole iteration of the job, so that what a growth
	// lacks is a new peak's excess and is created as one handle (deficitUnit, growth.go), and the
	// setup's and first iteration's bytes ahead stop (firstAhead). Set by startIteration (a mark,
	// the caller's or the finder's) when it remembers the first memo; cleared only by the caller's
	// first mark, which drops the finder's memos.
	seenIteration bool
	// deepFound: never marked, the finder has found an iteration's beginning (its second or a
	// later one) at a trough 1/deepTroughShare or more below the most live bytes ever: the
	// activations of a step freed, as at the end of a training iteration, where a trough inside
	// the forward pass of a first iteration (whose layers the finder may take for iterations)
	// lies near the peak so far. Set once, by startFoundIteration, never cleared; deficitBytes
	// reads it. A hint: not checked.
	deepFound bool
	// Memos, homes and contexts: where earlier requests went, for the placement chain (alloc.go).
	// homes: places where blocks of each size lay, least recently used first (homes.go):
	// rememberHome adds, findHomeBut drops the places of released views (when viewsReleased
	// moved since it last did). A hint: not checked.
	homes intmap.Map[*homeList]
	// The iteration memos (memo.go): MarkIteration moves memoCur into memos (forgetting the least
	// recently seen past the bounds); recordPlace appends to memoCur; Alloc and MarkIteration step
	// iterOrd. iter: where the current iteration stands against the memos (memostate.go):
	// MarkIteration resets it; memoPlace, followed, followDominating, leaveDominating and
	// beginNewShape move it. Check: checkMemos (entries in order, counts and bounds, and every
	// impossible combination of iter's parts). iterOrd, memoCur and iter are in the first group.
	memos      []memo // remembered iterations, most recent last
	remembered int    // entries in memos, all together
	// finder: where iterations begin, from the live bytes, while the caller marks none
	// (iterfinder.go): Alloc and Free feed it (afterFree, in the first group), MarkIteration
	// turns it off. A hint: not checked.
	finder iterFinder
	// Contexts (repeat.go): a request's context is its size and the live bytes before it, with
	// the contextWindow-1 requests before it (ctxRing: stepContext). contexts: where the last
	// large request of each context went (rememberContext, unmarked only). Hints: not checked.
	// ctxRing and ctxNext are in the first group.
	contexts intmap.Map[contextPlace]
	// awaySpans: the places new pages keep away from (rememberedSpans, pageaway.go), kept while
	// awayValid and no view has been released since (awayReleased: viewsReleased then);
	// forgetAway drops them when the memos or the contexts change. Not checked
	// (TestRememberedSpansKept compares them with a fresh computation).
	awaySpans    []span
	awayValid    bool
	awayReleased uint64

	// Scratch buffers, kept for reuse: each holds nothing between the calls that use it.
	looseBuf []span    // loose ranges in address order, for idleRunsIn
	segBuf   []idleSeg // segments of an idle run, for findIdle and idlePlan
	runBuf   []span    // idle runs gathered by idlePlan
	planBuf  []span    // the runs of those idlePlan tries a plan over
	placeBuf []span    // the arena pieces of a place being taken, for takeHome

	// Statistics (Stats), besides live, peakLive, liveBlocks and outcomes in the first group.
	rejected uint64 // frees refused (Free)
}

// New makes an engine over driver d. It reserves the arena (one virtual range as large as the
// capacity) at once.
func New(d Driver, opts ...Option) (*Engine, error) {
	c := config{
		smallThreshold: DefaultSmallThreshold,
		minStitch:      DefaultMinStitch,
		maxViews:       DefaultMaxViews,
		growthSlack:    DefaultGrowthSlack,
		logger:         slog.New(slog.DiscardHandler),
	}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	e := &Engine{cfg: c}
	if err := e.blockCache.open(d, &e.cfg); err != nil {
		return nil, err
	}
	return e, nil
}

// Granularity is the driver's chunk size.
func (e *Engine) Granularity() uint64 { return e.g }

// Stats describes the engine now.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return Stats{
		LiveBytes: e.live, PeakLiveBytes: e.peakLive, LiveBlocks: e.liveBlocks,
		ReservedBytes: e.reserved + e.orphanBytes, PeakReservedBytes: e.peakReserved,
		VirtualBytes:   e.arenaSize + e.viewBytes + e.orphanVirt,
		StitchedBlocks: len(e.views), CachedBlocks: e.largeAge.n + e.smallAge.n, SmallPages: len(e.pages),
		Outcomes: outcomeCounts(e.outcomes), DriverCalls: callCounts(e.drv.calls), RejectedFrees: e.rejected,
		IterationsFound: e.finder.count,
	}
}

// Reserved is the physical bytes the engine holds now (Stats().ReservedBytes), without building
// the whole Stats: the figure a replay samples after every request.
func (e *Engine) Reserved() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.reserved + e.orphanBytes
}
