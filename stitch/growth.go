package stitch

import "math/bits"

// Growth: how much memory a growth creates and the sizes of its handles. The rules here are policy
// (they read what the engine has seen of the job); the layout creates what they decide (growParts,
// arena.go).
//
// Every VMM call costs per handle it touches (../GPU.md: a stitch of 1 GiB costs 18 ms over 2 MiB
// handles and 0.07 ms over one 1 GiB handle), so the fewer handles memory is made of, the cheaper
// it is to create, to stitch under a view and to give back. But a view maps a handle only whole,
// from its offset 0: free bytes in the middle of a handle, between two blocks, can never join a
// view, and a large handle shared by several blocks strands them. A handle keeps the size it was
// created with for as long as it lives, so the engine chooses that size when it grows, from what
// the growth is for and how much room the capacity leaves (handleParts; tunables.go says what each
// rule was measured to cost and save):
//
//   - before the engine has seen a whole iteration, handles of the headroom share or, far below a
//     large capacity, of firstHandleBytes (handleUnit);
//   - after it, a growth's deficit (a new peak's excess) as handles of deficitUnit's size and the
//     rest, the bytes made ahead, of the headroom share;
//   - with WithHandleSize, one fixed size.
//
// Handles are never re-cut to the blocks carved from them: re-creating a handle around a block
// costs a Create per part, an Unmap, a Release (per byte) and a Map per part, and measured on the
// 39 traces it cost far more driver time than the stitches it made cheaper saved (tunables.go,
// "Handles re-cut to the blocks").

// handleParts splits a growth of n chunks, the first need of which the request lacks, into the
// sizes (in chunks) of the handles to create: handles of the handle size (WithHandleSize, else
// sized to the headroom: handleUnit), the need first as handles of deficitUnit's size where that
// is larger. Each run of handles of one size ends short; a short end under 1/shortTailShare of
// its size joins the handle before it (cutRun), except with WithHandleSize.
func (e *Engine) handleParts(n, need uint64) []uint64 {
	need = min(need, n)
	unit := e.handleUnit()
	join := e.cfg.handleSize == 0
	var parts []uint64
	if big := e.deficitUnit(need); big > unit {
		parts = cutRun(nil, need, big, join)
		n -= need
	}
	return cutRun(parts, n, unit, join)
}

// cutRun appends to parts a run of n chunks cut into handles of size chunks, the last one short;
// with join, a short last handle under 1/shortTailShare of size joins the one before it, so that
// a run makes no handle much smaller than its others (tunables.go says why).
func cutRun(parts []uint64, n, size uint64, join bool) []uint64 {
	first := len(parts)
	for at := uint64(0); at < n; at += size {
		parts = append(parts, min(size, n-at))
	}
	if k := len(parts); join && k-first > 1 && parts[k-1] < size/shortTailShare {
		parts[k-2] += parts[k-1]
		parts = parts[:k-1]
	}
	return parts
}

// deficitUnit is the size, in chunks, of the handles that hold the first need chunks of a growth
// (what the request lacks), 0 where they are sized like the rest (handleUnit): once the engine has
// seen a whole iteration of the job (seenIteration), a growth is a new peak's excess, and its
// deficit is created as one handle, at most 1/deficitHeadroomShare of what the capacity still
// allows and at most maxHandleBytes (tunables.go says why).
func (e *Engine) deficitUnit(need uint64) uint64 {
	if !e.seenIteration || e.cfg.handleSize > 0 {
		return 0
	}
	held := e.reserved + e.orphanBytes
	if held >= e.capacity {
		return 0
	}
	return min(need, e.deficitBytes(e.capacity-held)/e.g)
}

// deficitBytes is the most bytes one handle of a growth's deficit (deficitUnit) or of the bytes
// made ahead of a new peak (peakAhead) may hold when room bytes are left below the capacity:
// 1/deficitHeadroomShare of the room, at most maxHandleBytes. Once a whole iteration is known
// (wholeIterationKnown), the room times its share of the capacity over deficitMarkedShare instead:
// larger handles far from the capacity, the same at a quarter of it, smaller nearer (tunables.go
// says why).
func (e *Engine) deficitBytes(room uint64) uint64 {
	if !e.wholeIterationKnown() {
		return min(room/deficitHeadroomShare, maxHandleBytes)
	}
	return min(uint64(float64(room)*(float64(room)/float64(e.capacity))/deficitMarkedShare), maxHandleBytes)
}

// wholeIterationKnown reports whether the engine knows a whole iteration of the job: marked, the
// caller has marked one (a memo is remembered); never marked, the finder has found an iteration's
// beginning at a deep trough (deepFound), past the first iteration's forward pass, where its first
// boundaries may lie.
func (e *Engine) wholeIterationKnown() bool {
	if e.callerMarks {
		return len(e.memos) > 0
	}
	return e.deepFound
}

// handleUnit is the size, in chunks, of the handles a growth creates: the handle size if
// WithHandleSize set one, else the largest power of two whose bytes are at most
// 1/handleHeadroomShare of what the capacity still allows beyond the memory held (the room:
// reserved and orphaned bytes held; before the engine has seen a whole iteration, seenIteration,
// firstHandleBytes of the room where that is more and no more than the memory held) and at most
// maxHandleBytes, and at least one chunk (tunables.go says why).
func (e *Engine) handleUnit() uint64 {
	if e.cfg.handleSize > 0 {
		return e.cfg.handleSize / e.g
	}
	held := e.reserved + e.orphanBytes
	if held >= e.capacity {
		return 1
	}
	bound := min((e.capacity-held)/handleHeadroomShare, maxHandleBytes)
	if !e.seenIteration {
		bound = max(bound, min(firstHandleBytes(e.capacity-held), held))
	}
	limit := bound / e.g
	if limit == 0 {
		return 1
	}
	return uint64(1) << (bits.Len64(limit) - 1)
}

// firstHandleBytes is the most bytes a handle made before the engine has seen a whole iteration
// (the job's setup and first iteration, marked or not) may hold when room bytes are left below the
// capacity: the room times its own share of firstHandleRoomScale, so that a handle's share of the
// room grows with the room (a 139 GiB room: 1/943 of it, 151 MiB; a 16 GiB room: 1/8192 of it, the
// headroom share), at most maxHandleBytes.
func firstHandleBytes(room uint64) uint64 {
	r := float64(room)
	return uint64(min(r*r/firstHandleRoomScale, maxHandleBytes))
}

// growthExtra is how many chunks beyond the n a growth needs to create as headroom: as many as the
// current iteration has grown so far (since the last MarkIteration; since New without marks), so that
// an iteration that keeps growing does it in ever fewer, larger steps, but at most the growth slack
// times the memory reserved; before the first memo, up to the warm-up growth (WithWarmupGrowth);
// in the first iteration, its bytes ahead (firstAhead); never past the capacity.
func (e *Engine) growthExtra(n uint64) uint64 {
	limit := min(uint64(float64(e.reserved)*e.cfg.growthSlack)/e.g, e.grownIter/e.g)
	least := e.firstAhead() // the bytes a growth makes at the least
	if len(e.memos) == 0 {
		least = max(least, e.cfg.warmupGrowth)
	}
	if unit := (least + e.g - 1) / e.g; n < unit {
		limit = max(limit, unit-n)
	}
	used := e.reserved + e.orphanBytes + n*e.g
	if used >= e.capacity {
		return 0
	}
	return min(limit, (e.capacity-used)/e.g)
}

// firstIterationFar reports whether the engine is building the job's memory before it has seen a
// whole iteration (seenIteration: the setup and the first iteration, marked or not) with the
// memory held at most 1/firstAheadFarShare of the room below the capacity. There a growth makes
// bytes ahead of its request (firstAhead); near the capacity, where a minimum capacity is
// decided, it does not.
func (e *Engine) firstIterationFar() bool {
	if e.seenIteration {
		return false
	}
	held := e.reserved + e.orphanBytes
	return held < e.capacity && held <= (e.capacity-held)/firstAheadFarShare
}

// firstAhead is how many bytes a growth creates at the least before the engine has seen an
// iteration, far from the capacity (firstIterationFar): 1/firstAheadRoomShare of what the capacity
// still allows beyond the memory held, but no more than the memory held (a small job on a large
// device at most doubles what it holds); 0 otherwise, with fixed handles and with WithExactGrowth.
// The bytes ahead are loose memory that the next requests take, so the setup and the first
// iteration grow in a few large steps where they made one per request and stitched what the loose
// memory could not hold in one range (tunables.go says what it was measured to cost and save).
func (e *Engine) firstAhead() uint64 {
	if e.cfg.handleSize > 0 || e.cfg.exactGrowth || !e.firstIterationFar() {
		return 0
	}
	held := e.reserved + e.orphanBytes
	return min((e.capacity-held)/firstAheadRoomShare, held)
}

// peakAhead is how many chunks beyond need a growth creates once the engine has seen an iteration
// (seenIteration): as many as the current iteration has grown so far (grownIter), at most
// deficitBytes of what the capacity allows beyond the need, and 0 with fixed handles.
// An iteration that passes the job's peak (a longer sequence, a larger batch) then grows in a few
// ever larger handles, where it would make one per request. The bytes ahead are loose memory that
// the iteration's next requests take; tunables.go says what it was measured to cost and save.
func (e *Engine) peakAhead(need uint64) uint64 {
	if !e.seenIteration || e.cfg.handleSize > 0 {
		return 0
	}
	used := e.reserved + e.orphanBytes + need*e.g
	if used >= e.capacity {
		return 0
	}
	return min(e.grownIter, e.deficitBytes(e.capacity-used)) / e.g
}

// grow creates n chunks in free arena slots (holes left by EmptyCache first, lowest first, then
// past the end), the first need of which a request lacks (with the bytes ahead of a new peak,
// peakAhead), as handles sized by handleParts, and adds them to the loose set. The search for
// holes starts at holeFrom, below which every hole has been filled, so that a growth after a
// release near the arena's end does not walk the slots before it. On any driver error everything
// created by this call is undone.
func (e *Engine) grow(n, need uint64) error {
	return e.growParts(e.handleParts(n, need))
}
