package stitch

import (
	"fmt"
	"log/slog"
	"math/bits"
	"sync"
)

// Engine is the stitching allocator. Make one with New; it is safe for concurrent use.
type Engine struct {
	mu  sync.Mutex
	cfg config
	drv counted
	log *slog.Logger

	g         uint64 // driver granularity: chunk size
	pageSize  uint64 // small pages
	capacity  uint64 // physical bytes the engine may create
	arenaBase uintptr
	arenaSize uint64 // 0 once closed
	closed    bool

	// Physical memory (arena.go).
	slots        []slot
	holes        int // slots below len(slots) holding no chunk
	allocs       map[PhysHandle]*physAlloc
	reserved     uint64 // bytes of present chunks
	grownIter    uint64 // bytes created since the last MarkIteration (growthExtra)
	peakReserved uint64
	orphans      []orphan
	orphanBytes  uint64 // physical bytes the driver holds that the engine could not give back
	orphanVirt   uint64 // same for virtual ranges

	// Free memory and blocks.
	loose       *freeSet // loose arena ranges
	owners      tree     // arena ranges owned by large blocks (live, cached, pages), by address
	room        *freeSet // offsets no live large block owns (room.go)
	roomQueue   []*block // blocks gone live or cached since the room index was brought up to date
	flushBuf    []*block
	flushHeap   []flushCandidate   // flushUntil's heap, kept for reuse
	blocks      map[uintptr]*block // live and cached blocks by pointer (not pages)
	largeAge    ageList
	smallAge    ageList
	hotStream   Stream    // the first stream; its lists need no map lookup by stream
	streamSeen  bool      // hotStream has been set by a request
	hotLists    sizeLists // cached blocks of hotStream by size
	otherLists  map[Stream]sizeLists
	multiStream bool // a second stream has been seen: frees are numbered per stream
	clocks      map[Stream]*streamClock
	slowPaths   uint64 // requests that missed the exact path: the clock of event polls
	epoch       uint64 // successful Synchronize calls
	spare       *block // recycled block structs, linked through next
	serials     uint64 // block serials handed out (newBlock)

	// Stitching (view.go).
	views      map[uintptr]*view
	viewBytes  uint64
	viewOldest *view // every view, least recently used first
	viewNewest *view
	candBuf    []candidate
	looseBuf   []span                 // loose ranges in address order, for idleRuns
	segBuf     []idleSeg              // segments of an idle run, for findIdle
	placeBuf   []span                 // the arena pieces of a place being taken, for takeHome
	homes      map[uint64][]homeEntry // places where blocks of each size lay (homes.go)

	// Iteration memos (memo.go).
	iterOrd    uint64      // requests since the last mark, this one included
	memoCur    []memoEntry // where the current iteration's large requests went
	memos      []memo      // remembered iterations, most recent last
	remembered int         // entries in memos, all together
	iter       memoState   // where the current iteration stands against the memos (memostate.go)

	// Repeats (repeat.go).
	ctxRing  [contextWindow]uint64 // the last requests' sizes and live bytes, mixed
	ctxNext  uint64                // requests so far: the next index in ctxRing
	contexts map[uint64]contextPlace
	// smallContexts: where the last small request of each context went (its first byte)
	smallContexts map[uint64]uint64

	// Small pool (small.go).
	pages      map[uint64]*page
	smallFree  *freeSet
	nextPageID uint64

	// Statistics.
	live       uint64
	peakLive   uint64
	liveBlocks int
	outcomes   [NumOutcomes]uint64
	rejected   uint64
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
	e.cfg.handleSize = max(e.g, roundUp(e.cfg.handleSize, e.g))
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
	e.allocs = make(map[PhysHandle]*physAlloc)
	e.loose = newFreeSet()
	e.room = newRoom()
	e.blocks = make(map[uintptr]*block)
	e.hotLists = make(sizeLists)
	e.otherLists = make(map[Stream]sizeLists)
	e.clocks = make(map[Stream]*streamClock)
	e.homes = make(map[uint64][]homeEntry)
	e.contexts = make(map[uint64]contextPlace)
	e.smallContexts = make(map[uint64]uint64)
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
