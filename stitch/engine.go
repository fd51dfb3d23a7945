package stitch

import (
	"fmt"
	"log/slog"
	"math/bits"
	"sync"

	"github.com/gmlake/gmlake/internal/intmap"
)

// Engine is the stitching allocator. Make one with New; it is safe for concurrent use.
//
// The layout core: every byte the engine holds is owned by exactly one of the structures below,
// grouped by what they own. Each field says what it holds, which functions write it (New, Close
// and Reset aside, which set or clear everything) and which rule of Check covers it (check.go:
// checkFreeSet, checkBlocks, checkPhysical, checkViews, checkPages, checkRoom, checkMemos,
// checkStitchable). A field that Check does not cover is a hint or a statistic: every place taken
// from a hint is tested free before it is used (placeFree, homeCost), so a stale hint costs a
// search, never a byte.
type Engine struct {
	mu sync.Mutex // guards every field below; held for the whole of each exported call

	// The fields every request and every free reads or writes, together, so that they share a few
	// cache lines: on a GPU host the work between two requests (kernel launches, the framework's
	// own code) evicts the engine from the caches, and each line a request touches is a miss
	// (TestEngineHotFieldsTogether). Those written on every call come first, on the mutex's line
	// and the next. Each belongs to a group below, named beside it.
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
	closed      bool   // Close ran: every call but Close and Check fails with ErrClosed (handles)
	multiStream bool   // a second stream has been seen (allocSlow, once): frees are numbered per stream (streams)
	afterFree   bool   // the last call was a free that followed a request (Free sets, Alloc clears): the next request is a trough (finder)
	callerMarks bool   // MarkIteration has been called (it sets it): the finder is off (memos)
	streamSeen  bool   // hotStream is set (the free lists, below)
	epoch       uint64 // successful Synchronize calls (synchronize): a block freed before is settled (streams)

	cfg config // the options, fixed at New

	// The free lists: cached blocks by stream and size, lowest address first. hotStream is the
	// first stream a request used (set once by allocSlow, with streamSeen); its lists need no map
	// lookup (otherLists holds the others'). cache pushes (listFor makes a list), reuse and flush
	// unlink. Check: checkBlocks (every cached block in exactly the list of its size and stream;
	// counts and links).
	hotStream Stream
	hotLists  sizeLists
	capacity  uint64 // physical bytes the engine may create (handles)
	slowPaths uint64 // requests that missed the exact path (allocSlow): the clock of event polls (streams)
	// blocks: every live and cached block handed out by Alloc, by pointer (not pages): allocSlow
	// adds, flush removes. Check: checkBlocks (pointer, size, kind; live bytes), checkPhysical.
	blocks intmap.Map[*block]
	// largeAge, smallAge: the cached blocks of each pool in order of free, the set flushing walks:
	// cache pushes; reuse and flush unlink. Check: checkBlocks (every cached block in exactly one,
	// the right one; counts).
	largeAge ageList
	smallAge ageList
	// roomQueue: blocks whose liveness changed since the room index was brought up to date (the
	// room group, below).
	roomQueue []*block
	// Memos (below): memoCur, where the current iteration's large requests went; iter, where the
	// iteration stands against the memos.
	memoCur []memoEntry
	iter    memoState

	drv counted // the driver, with its calls counted (calls.go)
	log *slog.Logger

	// Handles and the arena (arena.go). Physical memory is handles (driver allocations), each
	// mapped whole at consecutive slots of the arena, one virtual range reserved at New.
	g         uint64  // driver granularity: the size of a slot (a chunk)
	pageSize  uint64  // bytes of a small-pool page
	arenaBase uintptr // the arena's address: a primitive block's pointer is arenaBase + its offset
	arenaSize uint64  // bytes of the arena, capacity rounded to G; 0 once closed
	// slots: one per chunk of the arena: the handle and offset in it of the chunk there, and how
	// many views map it. Written by grow, releaseAlloc, blockSlots (handles), mapView, unmapView,
	// dropRange (view counts). Check: checkPhysical (each present slot matches its allocation;
	// blocked slots have an orphan), checkViews (view counts).
	slots []slot
	holes int // slots below len(slots) holding no chunk: grow, releaseAlloc, blockSlots. Check: checkPhysical
	// holeFrom: no slot below it is a hole grow may fill; where grow's search for holes starts:
	// grow raises it, releaseAlloc and blockSlots lower it. Check: checkPhysical.
	holeFrom uint64
	// allocs: every live handle, by handle: grow, releaseAlloc. Check: checkPhysical.
	allocs       map[PhysHandle]*physAlloc
	reserved     uint64 // bytes of present chunks: grow, releaseAlloc. Check: checkPhysical
	peakReserved uint64 // most reserved ever: grow. Check: checkPhysical (reserved ≤ peak)
	grownIter    uint64 // bytes created since the iteration began (growthExtra, peakAhead): growDeficit, startIteration
	// seenIteration: the engine has seen a whole iteration of the job, so that what a growth
	// lacks is a new peak's excess and is created as one handle (deficitUnit, handles.go). Set
	// once, never cleared (but for the caller's first mark, which restores what it was at the
	// finder's first boundary): by startIteration (a mark, the caller's or the finder's) when it
	// remembers the first memo; and before that, marked or not, by grow when a large request has
	// repeated the size and context of an earlier one (repeatSeen, with the contexts below) and
	// the engine has served, since its last growth, at least as many requests as before it
	// (grownAtRequest: ctxNext at the last growth): the micro-steps of gradient accumulation
	// repeat inside the first marked iteration. A repeat alone is not enough: recomputation
	// repeats a block's forward requests within the first iteration. Marked, the rule also waits
	// for a free that leaves the live bytes 1/deepTroughShare or more below their peak
	// (deepMarked: set by Free once the caller marks, never cleared): a micro-step frees its
	// activations before the next repeats it, while the layers of a forward pass (a frozen
	// teacher's, in distillation) repeat with the activations held.
	seenIteration  bool
	grownAtRequest uint64
	deepMarked     bool
	// trainingSeen: never marked, frees have come at a training loop's rate (noteFreeRate, at each
	// growth before an iteration is seen; unmarkedTraining reads it): at least 1/trainingFreeShare
	// of the requests served over a window of trainingWindow or more, which a job's setup
	// (weights, optimizer state) does not reach and a training step, which frees what it
	// allocates, does. Set once, never cleared, with the window's start (trainingFrom: requests
	// served, trainingFreed: frees, at its start). A hint: not checked.
	trainingSeen                bool
	trainingFrom, trainingFreed uint64
	// deepFound: never marked, the finder has found an iteration's beginning (its second or a
	// later one) at a trough 1/deepTroughShare or more below the most live bytes ever: the
	// activations of a step freed, as at the end of a training iteration, where a trough inside
	// the forward pass of a first iteration (whose layers the finder may take for iterations)
	// lies near the peak so far. Set once, by startFoundIteration, never cleared; deficitBytes
	// reads it. A hint: not checked.
	deepFound bool
	// orphans: driver objects an error left that the engine could not give back (undoRun,
	// releaseAlloc, dropRange, unmapView, destroyEvent add; retryOrphans, Close retry). Check:
	// checkPhysical (blocked slots), checkViews (the chunks an orphaned view range maps).
	orphans     []orphan
	orphanBytes uint64 // physical bytes the driver holds that the engine could not give back
	orphanVirt  uint64 // the same for virtual ranges

	// The free set (freeset.go): loose arena ranges, coalesced, by address and by size. Every
	// present byte is loose, or owned by one large block (live, cached, or a page). Taken by
	// carveAt and takeView; given back by releaseLarge and grow; releaseAlloc takes a handle's bytes out
	// with the handle. Check: checkFreeSet("loose"), checkPhysical (loose ranges and
	// blocks tile the present chunks exactly).
	loose *freeSet
	// stitchable: what a stitch over every loose range reaches (stitchable.go), kept as the loose
	// set's size index changes (looseChanged). Check: checkStitchable.
	stitchable stitchable

	// Blocks and the owner index (block.go, free.go).
	// owners: the arena ranges of every large block (live, cached, pages; a stitched block one
	// range per piece), by address: carveAt and takeView insert, releaseLarge removes. Check:
	// checkPhysical (it names exactly the blocks' ranges).
	owners tree
	// room: the offsets no live large block owns, coalesced (room.go): occupy and vacate, from
	// syncRoom and releaseLarge. roomQueue (in the first group): blocks whose liveness changed
	// since (roomChanged appends, syncRoom empties). roomSerial: serials when syncRoom last ran (a
	// queued block of a later serial is new to the bounds). roomHint: the last room roomLoosened
	// found whose bound is 0, valid while the room index has not changed since (freeSet.changes).
	// Check: checkRoom.
	room       *freeSet
	roomSerial uint64
	roomHint   roomHint
	// blocks, largeAge, smallAge and the hot stream's free lists are in the first group.
	otherLists map[Stream]*sizeLists // the free lists of the other streams (see hotLists)
	spare      *block                // recycled block structs, linked through next: newBlock, recycle
	serials    uint64                // block serials handed out: newBlock

	// Streams and events (streams.go). With one stream nothing here is used (multiStream, epoch
	// and slowPaths are in the first group).
	clocks     map[Stream]*streamClock // per stream: frees numbered and events pending (cache, poll, synchronize)
	clockOrder []Stream                // the streams of clocks in the order they were first used (clockFor)

	// Views (view.go): stitched virtual ranges mapping whole handles. mapView adds, unmapView
	// removes (marking the view gone); takeView moves a view to the newest end of the list.
	// Check: checkViews (each view's pieces, chunks, slot counts; the list holds every view once;
	// viewBytes), checkPhysical (users, held and inUse against the blocks using each view).
	views      map[uintptr]*view // by base address
	viewBytes  uint64            // virtual bytes of every view
	viewOldest *view             // every view, least recently used first: viewPush, viewUnlink
	viewNewest *view
	// viewsReleased counts the views whose virtual ranges were given back: unmapView. Not checked.
	viewsReleased uint64

	// Pages: the small pool (small.go). A page is a large block lent to the pool; small blocks
	// are carved from it. addPage adds, releaseEmptyPages gives empty ones back. smallFree: the
	// pages' free ranges, tagged with the page's id so they never coalesce across pages: addPage,
	// carveSmall, flushSmall, releaseEmptyPages. Check: checkPages (small blocks and free ranges
	// tile every page; used counts), checkFreeSet("small free").
	pages      map[uint64]*page
	smallFree  *freeSet
	nextPageID uint64 // the last page id given: addPage

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
	// ctxRing and ctxNext are in the first group. repeatSeen: a large request has repeated the
	// size and context of an earlier one (rememberContext sets it, once; grow reads it), beside
	// the contexts, whose lines rememberContext touches anyway.
	repeatSeen bool
	contexts   intmap.Map[contextPlace]
	// awaySpans: the places new pages keep away from (rememberedSpans, pageaway.go), kept while
	// awayValid; forgetAway drops them when the memos, the contexts or the views change. Not
	// checked (TestRememberedSpansKept compares them with a fresh computation).
	awaySpans []span
	awayValid bool

	// Scratch buffers, kept for reuse: each holds nothing between the calls that use it.
	flushBuf  []*block         // flushUnder, matchView
	flushHeap []flushCandidate // flushUntil's heap
	candBuf   []candidate      // planFrom
	looseBuf  []span           // loose ranges in address order, for idleRunsIn
	segBuf    []idleSeg        // segments of an idle run, for findIdle and idlePlan
	runBuf    []span           // idle runs gathered by idlePlan
	planBuf   []span           // the runs of those idlePlan tries a plan over
	placeBuf  []span           // the arena pieces of a place being taken, for takeHome

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
	e := &Engine{cfg: c, drv: counted{d: d}, log: c.logger}
	e.g = d.Granularity()
	if e.g == 0 || bits.OnesCount64(e.g) != 1 || e.g < alignment {
		return nil, fmt.Errorf("%w: driver granularity %d is not a power of two ≥ %d", ErrBadOption, e.g, alignment)
	}
	e.capacity = c.capacity
	if e.capacity == 0 {
		_, total, err := e.drv.memInfo()
		if err != nil {
			return nil, fmt.Errorf("stitch: asking the driver for its memory: %w", err)
		}
		e.capacity = total
	}
	if e.capacity == 0 {
		return nil, fmt.Errorf("%w: zero capacity", ErrBadOption)
	}
	e.pageSize = c.smallPage
	if e.pageSize == 0 {
		e.pageSize = pageThresholds * c.smallThreshold
	}
	e.pageSize = max(e.g, roundUp(e.pageSize, e.g))
	if c.smallThreshold > e.pageSize {
		return nil, fmt.Errorf("%w: small threshold %d above the page size %d", ErrBadOption, c.smallThreshold, e.pageSize)
	}
	if e.cfg.handleSize > 0 {
		e.cfg.handleSize = max(e.g, roundUp(e.cfg.handleSize, e.g))
	}
	e.arenaSize = roundUp(e.capacity, e.g)
	if e.cfg.maxViewBytes == 0 {
		e.cfg.maxViewBytes = viewBytesPerArena * e.arenaSize
		if e.cfg.maxViewBytes/viewBytesPerArena != e.arenaSize {
			e.cfg.maxViewBytes = ^uint64(0)
		}
	}
	base, err := e.drv.reserve(e.arenaSize)
	if err != nil {
		return nil, fmt.Errorf("stitch: reserving the %d-byte arena: %w", e.arenaSize, err)
	}
	e.arenaBase = base
	// The slots of the whole arena up to a bound (1.5 MiB of them): grown one growth at a time,
	// the slice was copied at each doubling, inside the iterations that reach a new peak.
	e.slots = make([]slot, 0, min(e.arenaSize/e.g, maxPreallocSlots))
	e.allocs = make(map[PhysHandle]*physAlloc)
	e.loose = e.newLoose()
	e.room = e.newRoom()
	e.otherLists = make(map[Stream]*sizeLists)
	e.clocks = make(map[Stream]*streamClock)
	e.views = make(map[uintptr]*view)
	e.pages = make(map[uint64]*page)
	e.smallFree = newFreeSet()
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

func (e *Engine) synchronize() error {
	if err := e.drv.synchronize(); err != nil {
		return err
	}
	e.epoch++
	// Every free so far is done: pending events have nothing left to tell.
	for _, c := range e.clocks {
		c.done = c.freed
	}
	e.dropClockEvents()
	return nil
}
