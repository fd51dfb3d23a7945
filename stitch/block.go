package stitch

import "github.com/gmlake/gmlake/internal/intmap"

// blockKind says where a block's bytes are.
type blockKind uint8

const (
	primitive blockKind = iota // a range of the arena: [pos, pos+size)
	stitched                   // the prefix of a view
	small                      // a range of a page, below the small threshold
)

// block is a piece of memory handed out by Alloc (or a page held by the small pool). A block is
// live (owned by the caller) or cached (freed, kept whole for a request of exactly its size on its
// stream). Fields are guarded by Engine.mu. A block struct is made by newBlock (carveAt, takeView,
// carveSmall fill it in) and recycled by recycle after flush or releaseEmptyPages; Check covers
// every field but the settling ones (checkBlocks, checkPhysical, checkPages, checkRoom).
type block struct {
	// The first cache line: what a free, an exact match and a free list's walk touch (freeList.push
	// walks first and next), so that a request whose block the executor's work evicted from the
	// caches misses once on it rather than on each field.
	first uint64    // physStart: set when made (firstByte). Check: checkBlocks
	next  *block    // in list (freeList.push, unlink); in layout.spare while recycled
	prev  *block    //
	list  *freeList // the free list of its size and stream (set once, at the first free). Check: checkBlocks
	size  uint64    // rounded to alignment; set when made. Check: checkBlocks
	req   uint64    // size the caller asked for; Free must name it: markLive. Check: checkBlocks
	kind  blockKind // where its bytes are; set when made. Check: checkBlocks (kind against size)
	live  bool      // owned by the caller (a page: held by the small pool): setLive only. Check: checkBlocks, checkRoom

	roomLive  bool   // live as the room index has it: syncRoom, releaseLarge. Check: checkRoom
	roomQueue bool   // in layout.roomQueue, so roomLive may differ from live: roomChanged, syncRoom. Check: checkRoom
	indexed   bool   // in layout.blocks (allocSlow, recarve; addPage takes a page out). Check: checkBlocks, checkPages
	older     *block // in the pool's age list (ageList.pushNewest, unlink). Check: checkBlocks
	newer     *block

	ptr    uintptr // what Alloc returned; the key in layout.blocks. Set when made
	stream Stream  // the stream it serves: allocSlow. Check: checkBlocks (its free list's stream)
	// Set while cached (cache), read by the flushing rules (settled).
	freeEpoch uint64 // blockCache.epoch at free: a Synchronize since then makes it safe everywhere
	freeSeq   uint64 // its number among its stream's frees, when several streams are in use
	pos       uint64 // primitive: arena offset of the first byte (carveAt). Check: checkPhysical
	view      *view  // stitched: the view it is a window of (takeView). Check: checkPhysical
	voff      uint64 // stitched: offset of the window in the view (takeView). Check: checkPhysical
	// page: small: the page holding it (carveSmall); large: the page it is, while the small pool
	// holds it (addPage; releaseEmptyPages clears it). Check: checkPages
	page   *page
	serial uint64 // distinct for each block newBlock makes: a recycled struct is another block. newBlock

	// To 192 bytes, a size class whose objects begin on a cache line, so that the first line
	// above is one line (TestBlockLayout).
	_ [48]byte
}

// freeList holds cached blocks of one size on one stream, lowest physical address first, so that a
// request gets the same block whatever order the frees came in.
type freeList struct {
	head, tail *block
	// last is the block pushed last, while it is in the list. A push walks from whichever of the
	// head, the tail and last lies nearest its block by address: a training loop frees blocks of
	// one size in runs of neighbours (a layer's activations, a step's gradients), so the next
	// block's place is often next to the last one's. Blocks read besides the head and the tail per
	// push, in the steady iterations of three repetitions: the H200 ResNet-18 loop 0.54 from the
	// head, 0.22 from the nearer end, 0.11 from the nearest of the three; ResNet-50 1.9, 1.03, 0.31;
	// llama1b-full (repeated twice) 5.1 or more, 4.6, 2.4. Each is a cache miss on a GPU host.
	last *block
	n    int
}

func (l *freeList) push(b *block) {
	// Address order: the lowest block is reused first, whatever the order of frees. A block above
	// every other goes last at once (frees often come in address order: a layer's blocks, freed
	// in the order they were carved).
	first := b.physStart()
	var prev, at *block // b goes between them
	switch {
	case l.tail == nil || l.tail.physStart() < first:
		prev = l.tail
	case l.head.physStart() > first:
		at = l.head
	default:
		// Walk from the nearest by address of the head, the tail and the block pushed last.
		from, gap := l.head, first-l.head.physStart()
		if d := l.tail.physStart() - first; d < gap {
			from, gap = l.tail, d
		}
		if f := l.last; f != nil && max(f.physStart(), first)-min(f.physStart(), first) < gap {
			from = f
		}
		if from.physStart() < first {
			prev, at = from, from.next
			for at.physStart() < first { // the tail is above first
				prev, at = at, at.next
			}
		} else {
			prev, at = from.prev, from
			for prev.physStart() > first { // the head is below first
				prev, at = prev.prev, prev
			}
		}
	}
	b.prev, b.next = prev, at
	if prev != nil {
		prev.next = b
	} else {
		l.head = b
	}
	if at != nil {
		at.prev = b
	} else {
		l.tail = b
	}
	l.last = b
	l.n++
}

// physStart is the arena offset of a block's first byte (a small block's address), the key of the
// free lists' and flushUntil's order: kept in the block when it is made (firstByte), so that a
// free list's walk does not walk a stitched block's view for it.
func (b *block) physStart() uint64 { return b.first }

// firstByte is what physStart answers for b, worked out from where b lies.
func (b *block) firstByte() uint64 {
	switch b.kind {
	case primitive:
		return b.pos
	case stitched:
		var first uint64
		window(b.view, b.voff, b.size, func(p span) bool { first = p.start; return false })
		return first
	default:
		return uint64(b.ptr)
	}
}

func (l *freeList) unlink(b *block) {
	if l.last == b {
		l.last = nil
	}
	if b.prev != nil {
		b.prev.next = b.next
	} else {
		l.head = b.next
	}
	if b.next != nil {
		b.next.prev = b.prev
	} else {
		l.tail = b.prev
	}
	b.next, b.prev = nil, nil
	l.n--
}

// ageList holds the cached blocks of one pool (large or small) in order of free: the set that
// flushing and Close walk.
type ageList struct {
	oldest, newest *block
	n              int
	bytes          uint64
}

func (a *ageList) pushNewest(b *block) {
	b.newer, b.older = nil, a.newest
	if a.newest != nil {
		a.newest.newer = b
	} else {
		a.oldest = b
	}
	a.newest = b
	a.n++
	a.bytes += b.size
}

func (a *ageList) unlink(b *block) {
	if b.older != nil {
		b.older.newer = b.newer
	} else {
		a.oldest = b.newer
	}
	if b.newer != nil {
		b.newer.older = b.older
	} else {
		a.newest = b.older
	}
	b.older, b.newer = nil, nil
	a.n--
	a.bytes -= b.size
}

// sizeLists maps a rounded size to its free list, for one stream. It is read on every request
// (the exact-match path), so it is an intmap.Map rather than a Go map.
type sizeLists = intmap.Map[*freeList]

func (l *layout) newBlock() *block {
	l.serials++
	if b := l.spare; b != nil {
		l.spare = b.next
		b.next = nil
		b.serial = l.serials
		return b
	}
	return &block{serial: l.serials}
}

func (l *layout) recycle(b *block) {
	*b = block{next: l.spare}
	l.spare = b
}

// addressOf is the pointer of a block at place h: Alloc returns it, and layout.blocks is keyed
// by it (primitiveAt, windowBlock).
func (l *layout) addressOf(h home) uintptr {
	if h.v == nil {
		return l.arenaBase + uintptr(h.off)
	}
	return h.v.base + uintptr(h.v.head+h.off)
}

// index names block b in the pointer index (blocks): allocSlow, for a block not named there yet
// (a re-carved block keeps its name: recarve).
func (l *layout) index(b *block) {
	l.blocks.Put(uint64(b.ptr), b)
	b.indexed = true
}

// unindex takes block b out of the pointer index: flush, dissolveInto.
func (l *layout) unindex(b *block) { l.blocks.Delete(uint64(b.ptr)) }
