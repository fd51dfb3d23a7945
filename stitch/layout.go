package stitch

import (
	"fmt"
	"log/slog"
	"math/bits"

	"github.com/gmlake/gmlake/internal/intmap"
)

// layout is the engine's layout core, the lowest of its three layers (doc.go): who owns each byte
// the engine holds. Every physical byte is in a handle mapped at the arena; every present byte of
// the arena is loose (the free set) or owned by one large block (live, cached, or lent to the
// small pool as a page); a stitched block owns arena ranges through the view that maps their
// handles. The layout's methods carve blocks from loose memory, grow and release handles, map and
// unmap views and keep the indexes over them (owners, room, stitchable); they read nothing of the
// block cache (cache.go) or of the policy that decides where a request goes (the Engine's own
// fields: memos, homes, contexts, the finder), so that both can change without touching what
// Check proves about the bytes.
//
// Each field says what it holds, which functions write it (New, Close and Reset aside, which set
// or clear everything) and which rule of Check covers it (layoutcheck.go: checkFreeSet,
// checkPhysical, checkViews, checkPages, checkRoom, checkStitchable; checkBlocks, on the Engine,
// covers the blocks against the free lists too).
//
// The first fields are read by every request and every free; they follow the hot fields of the
// Engine and the block cache in memory (TestEngineHotFieldsTogether).
type layout struct {
	capacity uint64 // physical bytes the engine may create (handles)
	// blocks: every live and cached block handed out by Alloc, by pointer (not pages): allocSlow
	// adds, flush removes. Check: checkBlocks (pointer, size, kind; live bytes), checkPhysical.
	blocks intmap.Map[*block]
	// roomQueue: blocks whose liveness changed since the room index was brought up to date
	// (setLive, roomChanged append; syncRoom empties).
	roomQueue []*block

	drv counted // the driver, with its calls counted (calls.go)
	log *slog.Logger

	// Handles and the arena (arena.go). Physical memory is handles (driver allocations), each
	// mapped whole at consecutive slots of the arena, one virtual range reserved at New.
	g         uint64  // driver granularity: the size of a slot (a chunk)
	pageSize  uint64  // bytes of a small-pool page
	arenaBase uintptr // the arena's address: a primitive block's pointer is arenaBase + its offset
	arenaSize uint64  // bytes of the arena, capacity rounded to G; 0 once closed
	// slots: one per chunk of the arena: the handle and offset in it of the chunk there, and how
	// many views map it. Written by growParts, releaseAlloc, blockSlots (handles), mapView,
	// unmapView, dropRange (view counts). Check: checkPhysical (each present slot matches its
	// allocation; blocked slots have an orphan), checkViews (view counts).
	slots []slot
	holes int // slots below len(slots) holding no chunk: growParts, releaseAlloc, blockSlots. Check: checkPhysical
	// holeFrom: no slot below it is a hole growParts may fill; where its search for holes starts:
	// growParts raises it, releaseAlloc and blockSlots lower it. Check: checkPhysical.
	holeFrom uint64
	// allocs: every live handle, by handle: growParts, releaseAlloc. Check: checkPhysical.
	allocs       map[PhysHandle]*physAlloc
	reserved     uint64 // bytes of present chunks: growParts, releaseAlloc. Check: checkPhysical
	peakReserved uint64 // most reserved ever: growParts. Check: checkPhysical (reserved ≤ peak)
	// orphans: driver objects an error left that the engine could not give back (undoRun,
	// releaseAlloc, dropRange, unmapView, destroyEvent add; retryOrphans, Close retry). Check:
	// checkPhysical (blocked slots), checkViews (the chunks an orphaned view range maps).
	orphans     []orphan
	orphanBytes uint64 // physical bytes the driver holds that the engine could not give back
	orphanVirt  uint64 // the same for virtual ranges

	// The free set (freeset.go): loose arena ranges, coalesced, by address and by size. Every
	// present byte is loose, or owned by one large block (live, cached, or a page). Taken by
	// carveAt and takeView; given back by releaseLarge and growParts; releaseAlloc takes a
	// handle's bytes out with the handle. Check: checkFreeSet("loose"), checkPhysical (loose
	// ranges and blocks tile the present chunks exactly).
	loose *freeSet
	// stitchable: what a stitch over every loose range reaches (stitchable.go), kept as the loose
	// set's size index changes (looseChanged). Check: checkStitchable.
	stitchable stitchable
	minStitch  uint64 // the smallest loose range a stitch takes (WithMinStitch; candidateOf)

	// Blocks and the owner index (block.go, carve.go).
	// owners: the arena ranges of every large block (live, cached, pages; a stitched block one
	// range per piece), by address: carveAt and takeView insert, releaseLarge removes. Check:
	// checkPhysical (it names exactly the blocks' ranges).
	owners tree
	// room: the offsets no live large block owns, coalesced (room.go): occupy and vacate, from
	// syncRoom and releaseLarge. roomQueue (first): blocks whose liveness changed since.
	// roomSerial: serials when syncRoom last ran (a queued block of a later serial is new to the
	// bounds). roomHint: the last room roomLoosened found whose bound is 0, valid while the room
	// index has not changed since (freeSet.changes). Check: checkRoom.
	room       *freeSet
	roomSerial uint64
	roomHint   roomHint
	spare      *block // recycled block structs, linked through next: newBlock, recycle
	serials    uint64 // block serials handed out: newBlock

	// Views (view.go): stitched virtual ranges mapping whole handles. mapView adds, unmapView
	// removes (marking the view gone); takeView moves a view to the newest end of the list.
	// Check: checkViews (each view's pieces, chunks, slot counts; the list holds every view once;
	// viewBytes), checkPhysical (users, held and inUse against the blocks using each view).
	views      map[uintptr]*view // by base address
	viewBytes  uint64            // virtual bytes of every view
	viewOldest *view             // every view, least recently used first: viewPush, viewUnlink
	viewNewest *view
	// viewsReleased counts the views whose virtual ranges were given back: unmapView. The policy
	// compares it with what it saw last to drop places that named a released view (findHomeBut,
	// rememberedSpans). Not checked.
	viewsReleased uint64
	maxViews      int    // idle views kept at most (WithMaxViews; trimViews)
	maxViewBytes  uint64 // virtual bytes of views kept at most (trimViews)

	// Pages: the small pool (small.go). A page is a large block lent to the pool; small blocks
	// are carved from it. addPage adds, releaseEmptyPages gives empty ones back. smallFree: the
	// pages' free ranges, tagged with the page's id so they never coalesce across pages: addPage,
	// carveSmall, flushSmall, releaseEmptyPages. Check: checkPages (small blocks and free ranges
	// tile every page; used counts), checkFreeSet("small free").
	pages      map[uint64]*page
	smallFree  *freeSet
	nextPageID uint64 // the last page id given: addPage

	// Scratch buffers, kept for reuse: each holds nothing between the calls that use it.
	candBuf []candidate // planFrom
	takeBuf []span      // the loose ranges inside a place being taken: takeLooseIn
}

// open makes the layout over driver d for the options c: the driver's granularity, the capacity
// (the device's memory where c sets none), the page size, and the arena, reserved whole. It
// settles the options that follow from those (c's handle size in whole chunks, its view budget).
func (l *layout) open(d Driver, c *config) error {
	l.drv, l.log = counted{d: d}, c.logger
	l.g = d.Granularity()
	if l.g == 0 || bits.OnesCount64(l.g) != 1 || l.g < alignment {
		return fmt.Errorf("%w: driver granularity %d is not a power of two ≥ %d", ErrBadOption, l.g, alignment)
	}
	l.capacity = c.capacity
	if l.capacity == 0 {
		_, total, err := l.drv.memInfo()
		if err != nil {
			return fmt.Errorf("stitch: asking the driver for its memory: %w", err)
		}
		l.capacity = total
	}
	if l.capacity == 0 {
		return fmt.Errorf("%w: zero capacity", ErrBadOption)
	}
	l.pageSize = c.smallPage
	if l.pageSize == 0 {
		l.pageSize = pageThresholds * c.smallThreshold
	}
	l.pageSize = max(l.g, roundUp(l.pageSize, l.g))
	if c.smallThreshold > l.pageSize {
		return fmt.Errorf("%w: small threshold %d above the page size %d", ErrBadOption, c.smallThreshold, l.pageSize)
	}
	if c.handleSize > 0 {
		c.handleSize = max(l.g, roundUp(c.handleSize, l.g))
	}
	l.arenaSize = roundUp(l.capacity, l.g)
	if c.maxViewBytes == 0 {
		c.maxViewBytes = viewBytesPerArena * l.arenaSize
		if c.maxViewBytes/viewBytesPerArena != l.arenaSize {
			c.maxViewBytes = ^uint64(0)
		}
	}
	l.minStitch, l.maxViews, l.maxViewBytes = c.minStitch, c.maxViews, c.maxViewBytes
	base, err := l.drv.reserve(l.arenaSize)
	if err != nil {
		return fmt.Errorf("stitch: reserving the %d-byte arena: %w", l.arenaSize, err)
	}
	l.arenaBase = base
	// The slots of the whole arena up to a bound (1.5 MiB of them): grown one growth at a time,
	// the slice was copied at each doubling, inside the iterations that reach a new peak.
	l.slots = make([]slot, 0, min(l.arenaSize/l.g, maxPreallocSlots))
	l.allocs = make(map[PhysHandle]*physAlloc)
	l.loose = l.newLoose()
	l.room = l.newRoom()
	l.views = make(map[uintptr]*view)
	l.pages = make(map[uint64]*page)
	l.smallFree = newFreeSet()
	return nil
}
