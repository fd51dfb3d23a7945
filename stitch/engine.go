package stitch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"slices"
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
	peakReserved uint64
	orphans      []orphan
	orphanBytes  uint64 // physical bytes the driver holds that the engine could not give back
	orphanVirt   uint64 // same for virtual ranges

	// Free memory and blocks.
	loose       *freeSet // loose arena ranges
	owners      tree     // arena ranges owned by large blocks (live, cached, pages), by address
	flushBuf    []*block
	blocks      map[uintptr]*block // live and cached blocks by pointer (not pages)
	largeAge    ageList
	smallAge    ageList
	hotStream   Stream    // the first stream; its lists need no map lookup by stream
	hotLists    sizeLists // cached blocks of hotStream by size
	otherLists  map[Stream]sizeLists
	multiStream bool   // a second stream has been seen: frees record events
	epoch       uint64 // successful Synchronize calls
	spare       *block // recycled block structs, linked through next

	// Stitching (view.go).
	views      map[uintptr]*view
	viewBytes  uint64
	viewOldest *view // every view, least recently used first
	viewNewest *view
	candBuf    []candidate

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
	e.pageSize = roundUp(smallPageBytes, e.g)
	if c.smallThreshold > e.pageSize {
		return nil, fmt.Errorf("%w: small threshold %d above the page size %d", ErrBadOption, c.smallThreshold, e.pageSize)
	}
	e.arenaSize = roundUp(e.capacity, e.g)
	if e.cfg.maxViewBytes == 0 {
		e.cfg.maxViewBytes = 16 * e.arenaSize
		if e.cfg.maxViewBytes/16 != e.arenaSize {
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
	e.owners.seed = 0x27d4eb2f
	e.blocks = make(map[uintptr]*block)
	e.hotLists = make(sizeLists)
	e.otherLists = make(map[Stream]sizeLists)
	e.views = make(map[uintptr]*view)
	e.pages = make(map[uint64]*page)
	e.smallFree = newFreeSet()
	return e, nil
}

// Granularity is the driver's chunk size.
func (e *Engine) Granularity() uint64 { return e.g }

// Alloc returns size bytes usable on stream s.
func (e *Engine) Alloc(size uint64, s Stream) (uintptr, error) {
	e.mu.Lock()
	// The exact-match path: a lookup, a list pop, a flag flip.
	if s == e.hotStream && size-1 < e.capacity && !e.closed {
		r := (size + alignment - 1) &^ (alignment - 1)
		if l := e.hotLists[r]; l != nil && l.head != nil {
			ptr := e.reuse(l.head, size)
			e.mu.Unlock()
			return ptr, nil
		}
	}
	ptr, err := e.allocSlow(size, s)
	e.mu.Unlock()
	return ptr, err
}

// reuse hands cached block b out again for a request of size bytes.
func (e *Engine) reuse(b *block, size uint64) uintptr {
	b.list.unlink(b)
	if b.kind == small {
		e.smallAge.unlink(b)
	} else {
		e.largeAge.unlink(b)
	}
	if b.event != 0 {
		e.dropEvent(b)
	}
	e.markLive(b, size)
	e.outcomes[OutcomeExact]++
	return b.ptr
}

func (e *Engine) markLive(b *block, size uint64) {
	b.live, b.req = true, size
	e.live += size
	e.peakLive = max(e.peakLive, e.live)
	e.liveBlocks++
}

func (e *Engine) allocSlow(size uint64, s Stream) (uintptr, error) {
	switch {
	case e.closed:
		return 0, ErrClosed
	case size == 0:
		return 0, ErrInvalidSize
	case size > e.capacity:
		return 0, fmt.Errorf("%w: %d bytes asked, capacity %d", ErrTooLarge, size, e.capacity)
	}
	r := (size + alignment - 1) &^ (alignment - 1)
	if s != e.hotStream && !e.multiStream {
		e.multiStream = true
		// Blocks freed so far recorded no event: one synchronize covers them.
		if err := e.synchronize(); err != nil {
			e.log.Warn("stitch: synchronize on seeing a second stream failed", "err", err)
		}
	}
	if l := e.listFor(r, s); l.head != nil {
		return e.reuse(l.head, size), nil
	}
	var b *block
	var out Outcome
	var err error
	if r < e.cfg.smallThreshold {
		b, out, err = e.allocSmall(r, s)
	} else {
		b, out, err = e.allocLarge(r, s)
	}
	if err != nil {
		var oom *OutOfMemoryError
		if errors.As(err, &oom) {
			oom.Requested = size
		}
		return 0, err
	}
	b.stream = s
	e.blocks[b.ptr] = b
	e.markLive(b, size)
	e.outcomes[out]++
	return b.ptr, nil
}

// listFor returns the free list of cached blocks of size r on stream s, making it if needed.
func (e *Engine) listFor(r uint64, s Stream) *freeList {
	lists := e.hotLists
	if s != e.hotStream {
		if lists = e.otherLists[s]; lists == nil {
			lists = make(sizeLists)
			e.otherLists[s] = lists
		}
	}
	l := lists[r]
	if l == nil {
		l = &freeList{}
		lists[r] = l
	}
	return l
}

// allocLarge serves r bytes (r at least the small threshold, or a page) from the large pool.
func (e *Engine) allocLarge(r uint64, s Stream) (*block, Outcome, error) {
	if b := e.carveLarge(r); b != nil {
		return b, OutcomeSplit, nil
	}
	if v := e.matchView(r); v != nil {
		return e.takeView(v, 0, r), OutcomeSplit, nil
	}
	if v, off := e.findWindow(r); v != nil {
		return e.takeView(v, off, r), OutcomeSplit, nil
	}
	if e.flushUntil(&e.largeAge, r) {
		if b := e.carveLarge(r); b != nil {
			return b, OutcomeSplit, nil
		}
	}
	if e.smallAge.n > 0 || len(e.pages) > 0 {
		// Cached small blocks may pin whole pages.
		e.flushUntil(&e.smallAge, ^uint64(0))
		e.releaseEmptyPages()
		if b := e.carveLarge(r); b != nil {
			return b, OutcomeSplit, nil
		}
	}
	if v, off := e.findWindow(r); v != nil {
		return e.takeView(v, off, r), OutcomeSplit, nil
	}
	out := OutcomeStitch
	synced := false
	for {
		pieces, reach := e.stitchPlan(r)
		if pieces != nil {
			e.log.Debug("stitch: mapping free pieces under a new range", "bytes", r, "pieces", len(pieces),
				"loose_bytes", e.loose.bytes, "loose_ranges", e.loose.len(), "views", len(e.views))
			b, err := e.stitch(pieces, r)
			if err != nil {
				return nil, 0, err
			}
			return b, out, nil
		}
		if e.log.Enabled(context.Background(), slog.LevelDebug) {
			var sliver uint64
			e.loose.byAddr.walk(func(s span) bool {
				if roundUp(s.start, e.g) > s.end/e.g*e.g {
					sliver += s.size()
				}
				return true
			})
			e.log.Debug("stitch: growing", "bytes", r, "reach", reach, "loose_bytes", e.loose.bytes, "loose_ranges", e.loose.len(),
				"inside_one_chunk", sliver, "small_free", e.smallFree.bytes, "small_cached", e.smallAge.bytes, "pages", len(e.pages),
				"live", e.live, "reserved", e.reserved)
		}
		err := e.grow((r - reach + e.g - 1) / e.g)
		if err != nil {
			if errors.Is(err, ErrOutOfMemory) && !synced && e.multiStream && (e.largeAge.n > 0 || e.smallAge.n > 0) {
				// Blocks freed on other streams wait for their events: wait for the device once.
				synced = true
				if e.synchronize() == nil {
					e.flushUntil(&e.smallAge, ^uint64(0))
					e.releaseEmptyPages()
					e.flushUntil(&e.largeAge, ^uint64(0))
					if b := e.carveLarge(r); b != nil {
						return b, OutcomeSplit, nil
					}
					continue
				}
			}
			if errors.Is(err, ErrOutOfMemory) {
				return nil, 0, e.outOfMemory(r, err)
			}
			return nil, 0, err
		}
		out = OutcomeNewChunks
		if b := e.carveLarge(r); b != nil {
			return b, out, nil
		}
	}
}

// carveLarge takes r bytes from the start of the best-fitting loose range.
func (e *Engine) carveLarge(r uint64) *block {
	sp, ok := e.loose.bestFit(r)
	if !ok {
		return nil
	}
	pos := e.placement(sp, r)
	e.loose.take(pos, pos+r)
	b := e.newBlock()
	b.kind, b.pos, b.size, b.ptr = primitive, pos, r, e.arenaBase+uintptr(pos)
	e.owners.insertWith(span{start: pos, end: pos + r}, b)
	return b
}

// flushUntil moves flushable cached blocks of one pool to its free ranges, oldest first, until one
// free range of at least r bytes forms; it reports whether one did.
func (e *Engine) flushUntil(age *ageList, r uint64) bool {
	order := e.flushBuf[:0]
	for b := age.oldest; b != nil; b = b.newer {
		order = append(order, b)
	}
	slices.SortFunc(order, func(a, b *block) int { return cmp.Compare(b.physStart(), a.physStart()) })
	found := false
	for _, b := range order {
		if e.flushable(b) {
			if e.flush(b) >= r {
				found = true
				break
			}
		}
	}
	clear(order)
	e.flushBuf = order[:0]
	return found
}

// flushable reports whether cached block b may serve other streams: the event recorded at its free
// has completed, or the device was synchronized since.
func (e *Engine) flushable(b *block) bool {
	if b.event != 0 {
		done, err := e.drv.eventDone(b.event)
		if err != nil || !done {
			return false
		}
		e.dropEvent(b)
		return true
	}
	return !e.multiStream || b.freeEpoch < e.epoch
}

// flush gives cached block b's bytes back to the free ranges and forgets it; it returns the size of
// the largest free range its bytes joined.
func (e *Engine) flush(b *block) uint64 {
	b.list.unlink(b)
	delete(e.blocks, b.ptr)
	var merged uint64
	if b.kind == small {
		e.smallAge.unlink(b)
		merged = e.flushSmall(b)
	} else {
		e.largeAge.unlink(b)
		merged = e.releaseLarge(b)
	}
	e.recycle(b)
	return merged
}

// releaseLarge returns a large block's bytes to the loose set (its view, if stitched, goes idle);
// it returns the size of the largest loose range they joined.
func (e *Engine) releaseLarge(b *block) uint64 {
	if b.kind == primitive {
		s := span{start: b.pos, end: b.pos + b.size}
		e.owners.remove(s)
		return e.loose.insert(s).size()
	}
	var merged uint64
	window(b.view, b.voff, b.size, func(p span) bool {
		e.owners.remove(p)
		merged = max(merged, e.loose.insert(p).size())
		return true
	})
	b.view.users--
	return merged
}

func (e *Engine) dropEvent(b *block) {
	if err := e.drv.destroyEvent(b.event); err != nil {
		e.log.Warn("stitch: destroy event failed; retried later", "err", err)
		e.orphans = append(e.orphans, orphan{ev: b.event})
	}
	b.event = 0
}

func (e *Engine) synchronize() error {
	if err := e.drv.synchronize(); err != nil {
		return err
	}
	e.epoch++
	return nil
}

func (e *Engine) newBlock() *block {
	if b := e.spare; b != nil {
		e.spare = b.next
		b.next = nil
		return b
	}
	return &block{}
}

func (e *Engine) recycle(b *block) {
	*b = block{next: e.spare}
	e.spare = b
}

// outOfMemory describes why r bytes cannot be had; cause is the refusal.
func (e *Engine) outOfMemory(r uint64, cause error) *OutOfMemoryError {
	largest, _ := e.loose.largest()
	_, reach := e.stitchPlan(^uint64(0))
	free := e.loose.bytes + e.largeAge.bytes + e.smallFree.bytes + e.smallAge.bytes
	for b := e.largeAge.oldest; b != nil; b = b.newer {
		largest.end = max(largest.end, largest.start+b.size)
	}
	return &OutOfMemoryError{
		Rounded: r, FreeBytes: free, FreePieces: e.loose.len() + e.largeAge.n + e.smallFree.len() + e.smallAge.n,
		LargestPiece: largest.size(), Stitchable: reach, Reserved: e.reserved + e.orphanBytes, Capacity: e.capacity, Err: cause,
	}
}

// Free gives back the block at ptr; size must be the size given to Alloc.
func (e *Engine) Free(ptr uintptr, size uint64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	b := e.blocks[ptr]
	switch {
	case b == nil:
		e.rejected++
		return fmt.Errorf("%w: %#x", ErrUnknownPointer, ptr)
	case !b.live:
		e.rejected++
		return fmt.Errorf("%w: %#x", ErrDoubleFree, ptr)
	case b.req != size:
		e.rejected++
		return fmt.Errorf("%w: %#x was allocated with %d bytes, freed with %d", ErrSizeMismatch, ptr, b.req, size)
	}
	e.cache(b)
	return nil
}

// cache makes live block b a cached block of its size and stream.
func (e *Engine) cache(b *block) {
	b.live = false
	e.live -= b.req
	e.liveBlocks--
	b.freeEpoch = e.epoch
	if e.multiStream {
		if ev, err := e.drv.recordEvent(b.stream); err == nil {
			b.event = ev
		} else {
			e.log.Warn("stitch: record event failed; the block waits for a synchronize", "err", err)
		}
	}
	if b.list == nil {
		b.list = e.listFor(b.size, b.stream)
	}
	b.list.push(b)
	if b.kind == small {
		e.smallAge.pushNewest(b)
	} else {
		e.largeAge.pushNewest(b)
	}
}

// EmptyCache waits for the device, then releases every cached stitched range and every physical
// allocation that no live block uses.
func (e *Engine) EmptyCache() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	return e.emptyCache()
}

func (e *Engine) emptyCache() error {
	_ = e.retryOrphans() // first, so that chunks an orphaned range maps become releasable
	if err := e.synchronize(); err != nil {
		return fmt.Errorf("stitch: synchronize before releasing memory: %w", err)
	}
	e.flushUntil(&e.smallAge, ^uint64(0))
	e.releaseEmptyPages()
	e.flushUntil(&e.largeAge, ^uint64(0))
	var errs []error
	if err := e.releaseIdleViews(); err != nil {
		errs = append(errs, err)
	}
	for _, pa := range e.sortedAllocs() {
		if e.releasable(pa) {
			if err := e.releaseAlloc(pa); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := e.retryOrphans(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (e *Engine) sortedAllocs() []*physAlloc {
	pas := make([]*physAlloc, 0, len(e.allocs))
	for _, pa := range e.allocs {
		pas = append(pas, pa)
	}
	slices.SortFunc(pas, func(a, b *physAlloc) int { return cmp.Compare(a.first, b.first) })
	return pas
}

// retryOrphans tries again to give back what an earlier error left behind; it returns the errors
// of what still fails.
func (e *Engine) retryOrphans() error {
	kept := e.orphans[:0]
	var errs []error
	keep := func(o orphan, err error) {
		kept = append(kept, o)
		errs = append(errs, err)
	}
	for _, o := range e.orphans {
		if o.ev != 0 {
			if err := e.drv.destroyEvent(o.ev); err != nil {
				keep(o, err)
			}
			continue
		}
		if o.mapped {
			unmapSize := o.size
			if o.chunks != nil {
				unmapSize = uint64(len(o.chunks)) * e.g
			}
			if err := e.drv.unmap(o.addr, unmapSize); err != nil {
				keep(o, err)
				continue
			}
			o.mapped = false
			if !e.closed && e.slots != nil {
				for _, c := range o.chunks {
					e.slots[c].views--
				}
				if o.slots[1] > 0 {
					e.blockSlots(o.slots[0], o.slots[1], false)
				}
			}
			o.chunks, o.slots = nil, [2]uint64{}
		}
		if o.h != 0 {
			if err := e.drv.release(o.h); err != nil {
				keep(o, err)
				continue
			}
			e.orphanBytes -= o.size
		} else {
			if err := e.drv.free(o.addr, o.size); err != nil {
				keep(o, err)
				continue
			}
			e.orphanVirt -= o.size
		}
	}
	e.orphans = kept
	return errors.Join(errs...)
}

// Reset frees every live block, then releases memory as EmptyCache does.
func (e *Engine) Reset() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	e.freeAll()
	return e.emptyCache()
}

func (e *Engine) freeAll() {
	var live []*block
	for _, b := range e.blocks {
		if b.live {
			live = append(live, b)
		}
	}
	slices.SortFunc(live, func(a, b *block) int { return cmp.Compare(a.ptr, b.ptr) })
	for _, b := range live {
		e.cache(b)
	}
}

// Close gives every driver object back. Blocks still live become invalid. Every later call fails
// with ErrClosed, except Close itself while something could not be given back: it tries again.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		if len(e.orphans) == 0 {
			return ErrClosed
		}
		if err := e.retryOrphans(); err != nil {
			return fmt.Errorf("stitch: %d driver objects still cannot be given back: %w", len(e.orphans), err)
		}
		return nil
	}
	var errs []error
	e.freeAll()
	if err := e.emptyCache(); err != nil {
		errs = append(errs, err)
	}
	// Whatever is still held (after a failure above, or cached blocks waiting for events) goes now;
	// what the driver refuses is kept as an orphan for the next Close.
	for _, age := range []*ageList{&e.smallAge, &e.largeAge} {
		for b := age.oldest; b != nil; b = b.newer {
			if b.event != 0 {
				e.dropEvent(b)
			}
		}
	}
	for _, v := range e.views {
		if err := e.unmapView(v); err != nil {
			errs = append(errs, err)
			e.orphans = append(e.orphans, orphan{addr: v.base, size: v.vsize, mapped: true})
			e.orphanVirt += v.vsize
		}
	}
	for _, pa := range e.sortedAllocs() {
		addr, size := e.arenaBase+uintptr(pa.first*e.g), pa.n*e.g
		e.reserved -= size
		e.orphanBytes += size
		if err := e.drv.unmap(addr, size); err != nil {
			errs = append(errs, err)
			e.orphans = append(e.orphans, orphan{h: pa.h, addr: addr, size: size, mapped: true})
			continue
		}
		if err := e.drv.release(pa.h); err != nil {
			errs = append(errs, err)
			e.orphans = append(e.orphans, orphan{h: pa.h, size: size})
			continue
		}
		e.orphanBytes -= size
	}
	e.orphans = append(e.orphans, orphan{addr: e.arenaBase, size: e.arenaSize})
	e.orphanVirt += e.arenaSize
	orphanErr := e.retryOrphans()
	e.closed = true
	e.arenaSize = 0
	e.blocks, e.pages, e.views, e.allocs, e.slots = nil, nil, nil, nil, nil
	e.loose, e.smallFree, e.owners = newFreeSet(), newFreeSet(), tree{}
	e.largeAge, e.smallAge = ageList{}, ageList{}
	e.hotLists, e.otherLists = nil, nil
	e.viewOldest, e.viewNewest, e.viewBytes = nil, nil, 0
	e.live, e.liveBlocks = 0, 0
	if len(e.orphans) > 0 {
		errs = append(errs, fmt.Errorf("stitch: %d driver objects could not be given back; Close again to retry: %w", len(e.orphans), orphanErr))
	}
	return errors.Join(errs...)
}

// Stats describes the engine now.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return Stats{
		LiveBytes: e.live, PeakLiveBytes: e.peakLive, LiveBlocks: e.liveBlocks,
		ReservedBytes: e.reserved + e.orphanBytes, PeakReservedBytes: e.peakReserved,
		VirtualBytes:   e.arenaSize + e.viewBytes + e.orphanVirt,
		StitchedBlocks: len(e.views), CachedBlocks: e.largeAge.n + e.smallAge.n, SmallPages: len(e.pages),
		Outcomes: e.outcomes, DriverCalls: e.drv.calls, RejectedFrees: e.rejected,
	}
}

// partialLoss is how many bytes of free range s a stitch could not use if s were one of its middle
// pieces: the parts of s in chunks it shares with other ranges.
func (e *Engine) partialLoss(s span) uint64 {
	if s.size() == 0 {
		return 0
	}
	lo, hi := roundUp(s.start, e.g), s.end/e.g*e.g
	if lo > hi {
		return s.size()
	}
	return lo - s.start + s.end - hi
}

// placement chooses where in free range sp a block of r bytes goes: at its start or at its end,
// whichever leaves the free remainder fewer bytes that a stitch could not use. (Ending the block on
// a chunk boundary inside the range was tried too; on the shared traces it never won.)
func (e *Engine) placement(sp span, r uint64) uint64 {
	pos := sp.start
	loss := e.partialLoss(span{start: sp.start + r, end: sp.end})
	if e.partialLoss(span{start: sp.start, end: sp.end - r}) < loss {
		pos = sp.end - r
	}
	return pos
}
