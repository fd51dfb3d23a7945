package stitch

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
)

// Handles that follow the blocks.
//
// Every VMM call costs per handle it touches (../GPU.md: a stitch of 1 GiB costs 18 ms over 2 MiB
// handles and 0.07 ms over one 1 GiB handle), so the fewer handles a block spans, the cheaper it is
// to create, to stitch under a view and to give back. But a view maps a handle only whole, from its
// offset 0: free bytes in the middle of a handle, between two blocks, can never join a view, and a
// large handle shared by several blocks strands them. So the engine sizes handles to the blocks:
//
//   - A growth creates the request's deficit as one handle and the headroom beyond it (growth
//     slack, warm-up growth) as another; pages grow one handle per page.
//   - When a large block is carved from free memory, every handle that lies wholly in free memory
//     and that a boundary of the block cuts is re-created as the handles on either side of the cut
//     (fitHandles: one Create per part, an Unmap and a Release of the old one, a Map per part and one
//     SetAccess), at chunk boundaries: the block's bytes then fill whole handles but for its first
//     and last chunk. A handle that another block or a used view uses is left as it is.
//   - With iterations marked, an idle view (no block uses it) that maps a handle being re-cut
//     keeps its range: the handle's mapping there is replaced by the new handles' (an Unmap, a Map
//     per new handle and a SetAccess: remapSite), so the places memos give in it stay valid and
//     the view is not stitched again when the shape recurs. Only a view whose first or last piece
//     the cut would leave outside its end handle is released, and unmarked every idle view over
//     the handle is (viewSites says why). Releasing them marked too made repeated iterations keep
//     stitching (opt1.3b-full: 37 calls per iteration in the fourth of four repetitions, now 0)
//     and cost the multi-scale ResNet-50 1.0154 x peak active (now 1.0055).
//   - Unmapping and releasing are not ordered with the device's work: a re-cut after a free first
//     waits for the device (one Synchronize until the next free).
//   - A stitch's last piece is cut the same way before it is mapped.
//
// So each handle holds the bytes of one block (and the slivers of its end chunks), free memory is
// whole handles, and stitching it costs one handle per block it once held, not one per chunk.

// handleParts splits a growth of n chunks, the first need of which the request lacks, into the
// sizes (in chunks) of the handles to create: handles of the handle size (WithHandleSize, else
// sized to the headroom: handleUnit), the last one short, the need first as handles of
// deficitUnit's size where that is larger; when handles follow the blocks, the need as one handle
// and the rest as another.
func (e *Engine) handleParts(n, need uint64) []uint64 {
	need = min(need, n)
	if !e.cfg.followBlocks {
		unit := e.handleUnit()
		var parts []uint64
		at := uint64(0)
		if big := e.deficitUnit(need); big > unit {
			for ; at < need; at += big {
				parts = append(parts, min(big, need-at))
			}
		}
		for ; at < n; at += unit {
			parts = append(parts, min(unit, n-at))
		}
		return parts
	}
	parts := []uint64{need}
	if n > need {
		parts = append(parts, n-need)
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
// 1/deficitHeadroomShare of the room, at most maxHandleBytes. Once the caller has marked a whole
// iteration, the room times its share of the capacity over deficitMarkedShare instead: larger
// handles far from the capacity, the same at a quarter of it, smaller nearer (tunables.go says why).
func (e *Engine) deficitBytes(room uint64) uint64 {
	if !e.callerMarks || len(e.memos) == 0 {
		return min(room/deficitHeadroomShare, maxHandleBytes)
	}
	return min(uint64(float64(room)*(float64(room)/float64(e.capacity))/deficitMarkedShare), maxHandleBytes)
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

// fitHandles cuts the handles under a new large block [pos, end) at the chunk boundaries around its
// ends, where a handle lies wholly in free memory and no view maps it. It returns the driver's
// error when one left part of [pos, end) without memory (its slots empty): the block cannot go
// there.
func (e *Engine) fitHandles(pos, end uint64) error {
	if !e.cfg.followBlocks {
		return nil
	}
	for _, cut := range e.endCuts(pos, end, true) {
		if err := e.cutAt(cut); err != nil {
			return err
		}
	}
	return nil
}

// endCuts are the chunk boundaries fitHandles cuts at for a block [pos, end): around it, and around
// its first and last chunks when it shares them (it starts or ends inside a chunk), so that a
// neighbour using the rest of such a chunk pins only that chunk's handle; the cuts at its start only
// with head.
func (e *Engine) endCuts(pos, end uint64, head bool) []uint64 {
	cuts := e.cutBuf[:0]
	if head {
		cuts = append(cuts, pos/e.g)
		if pos%e.g != 0 {
			cuts = append(cuts, pos/e.g+1)
		}
	}
	if end%e.g != 0 && end/e.g > pos/e.g+1 {
		cuts = append(cuts, end/e.g)
	}
	cuts = append(cuts, (end+e.g-1)/e.g)
	e.cutBuf = cuts
	return cuts
}

// cutAt re-creates the handle holding arena chunk c as two handles meeting at c, when c lies
// strictly inside it, the handle is wholly loose and no used view or orphaned range maps it. Idle
// views that map it keep their ranges: the handle's mapping in each is replaced by the new
// handles' (viewSites, remapSite). Unmapping and releasing are not ordered with the device's work,
// so when a block was freed since the last Synchronize the re-cut first waits for the device (one
// Synchronize, after which every re-cut until the next free goes without). It returns the driver's
// error when one lost the handle's memory.
func (e *Engine) cutAt(c uint64) error {
	if !e.cfg.followBlocks || c >= uint64(len(e.slots)) || !e.slots[c].present || e.slots[c].hoff == 0 {
		return nil // no handle there, or c is where one begins
	}
	pa := e.allocs[e.slots[c].h]
	if _, ok := e.loose.containing(pa.first*e.g, (pa.first+pa.n)*e.g); !ok {
		return nil // another block uses it
	}
	sites, drop, ok := e.viewSites(pa, c)
	if !ok {
		return nil
	}
	if e.unsynced && e.synchronize() != nil {
		// Work queued before a free may still use pa's bytes: without the wait, pa stays whole.
		return nil
	}
	for _, v := range drop {
		if e.unmapView(v) != nil {
			return nil
		}
	}
	if e.slots[pa.first].views != int32(len(sites)) {
		return nil // an orphaned range still maps it
	}
	parts := []uint64{c - pa.first, pa.first + pa.n - c}
	if e.reserved+e.orphanBytes+pa.n*e.g > e.capacity {
		return e.recutInPlace(pa, parts, sites) // the new handles do not fit beside the old one
	}
	return e.recut(pa, parts, sites)
}

// viewSite is a place where a view maps a handle about to be re-cut: the view, and the offset of
// the handle's mapping in its range.
type viewSite struct {
	v   *view
	off uint64
}

// viewSites returns where idle views map pa, for a re-cut at chunk c, in address order, when
// iterations are marked: the memos name places in views, which the next iteration of a shape
// takes again. A view whose end pieces the cut would leave in a handle of their own that holds
// none of their bytes (the cut at or before its first piece's start in its first handle, at or
// past its last piece's end in its last) is to be released instead (drop), and unmarked every
// idle view over pa is: kept there, they drew later requests into views and cost capacity
// (gmlake-bench, 19 traces unmarked: up to 1.139 x peak active instead of 1.030). It changes
// nothing; false when a used view maps pa.
func (e *Engine) viewSites(pa *physAlloc, c uint64) (sites []viewSite, drop []*view, ok bool) {
	if e.slots[pa.first].views == 0 {
		return nil, nil, true // views map handles whole: none maps any chunk of pa
	}
	sites = e.siteBuf[:0]
	for _, v := range e.views {
		at := len(sites)
		for i, ch := range v.chunks {
			if ch == pa.first {
				sites = append(sites, viewSite{v: v, off: uint64(i) * e.g})
			}
		}
		if len(sites) == at {
			continue
		}
		if v.users > 0 {
			e.siteBuf = sites[:0]
			return nil, nil, false
		}
		if !e.marked() {
			drop = append(drop, v)
			sites = sites[:at]
			continue
		}
		for _, s := range sites[at:] {
			first, last := s.off == 0, s.off+pa.n*e.g == v.vsize
			if first && c*e.g <= v.pieces[0].start || last && c*e.g >= v.pieces[len(v.pieces)-1].end {
				drop = append(drop, v)
				sites = sites[:at]
				break
			}
		}
	}
	e.siteBuf = sites
	slices.SortFunc(sites, func(a, b viewSite) int {
		return cmp.Or(cmp.Compare(a.v.base, b.v.base), cmp.Compare(a.off, b.off))
	})
	return sites, drop, true
}

// remapSite replaces pa's mapping at site s of an idle view with the handles made of it (in arena
// order, covering pa's chunks): an Unmap, a Map per new handle and a SetAccess. On a driver error
// it returns what is mapped at the site now (pa, or the new handles mapped so far) with the error.
func (e *Engine) remapSite(s viewSite, pa *physAlloc, made []physAlloc) ([]physAlloc, error) {
	if err := e.drv.unmap(s.v.base+uintptr(s.off), pa.n*e.g); err != nil {
		return []physAlloc{*pa}, err
	}
	return e.mapSite(s, pa, made)
}

// remapSites moves every site's mapping of pa onto made. A view whose remap fails is released, by
// its mappings one at a time (dropSiteView): it was idle, so only its places are lost.
func (e *Engine) remapSites(pa *physAlloc, made []physAlloc, sites []viewSite) {
	for i, s := range sites {
		if s.v.gone {
			continue
		}
		left, err := e.remapSite(s, pa, made)
		if err == nil {
			continue
		}
		e.log.Error("stitch: remapping a re-cut handle under a view failed; the view is released", "err", err)
		e.dropSiteView(sites, i, pa.n, remapped(i, left, made, []physAlloc{*pa}))
	}
}

// remapped gives what each site maps while the sites are moved onto new handles in order and
// site i failed: the sites before it map made, site i what its failed move left, the sites after
// it rest (dropSiteView's mapped).
func remapped(i int, left, made, rest []physAlloc) func(j int) []physAlloc {
	return func(j int) []physAlloc {
		switch {
		case j == i:
			return left
		case j < i:
			return made
		}
		return rest
	}
}

// dropSiteView releases the view of sites[i], whose mapping at each of its sites j is mapped(j)
// (dropSplitView).
func (e *Engine) dropSiteView(sites []viewSite, i int, n uint64, mapped func(j int) []physAlloc) {
	v := sites[i].v
	at := map[uint64][]physAlloc{}
	for j, s := range sites {
		if s.v == v {
			at[s.off] = mapped(j)
		}
	}
	e.dropSplitView(v, at, n)
}

// dropSplitView releases idle view v, whose mappings at the offsets in at (each a site of a
// re-cut handle of n chunks) are the handles listed there (none: nothing mapped), every other
// offset mapping one handle of the arena whole. Each mapping is unmapped on its own; one that
// fails is kept as an orphan, and so is the range, freed once they are unmapped.
func (e *Engine) dropSplitView(v *view, at map[uint64][]physAlloc, n uint64) {
	type mapping struct{ off, n uint64 }
	var maps []mapping
	for off := uint64(0); off < v.vsize; {
		if hs, ok := at[off]; ok {
			for _, h := range hs {
				maps = append(maps, mapping{off + (h.first-hs[0].first)*e.g, h.n})
			}
			off += n * e.g
			continue
		}
		k := e.allocs[e.slots[v.chunks[off/e.g]].h].n
		maps = append(maps, mapping{off, k})
		off += k * e.g
	}
	e.viewUnlink(v)
	for _, c := range v.chunks {
		e.slots[c].views--
	}
	kept := false
	for _, m := range maps {
		addr := v.base + uintptr(m.off)
		if err := e.drv.unmap(addr, m.n*e.g); err != nil {
			e.log.Error("stitch: unmap of a view's mapping failed; kept as orphan", "err", err)
			kept = true
			chunks := slices.Clone(v.chunks[m.off/e.g : m.off/e.g+m.n])
			for _, c := range chunks {
				e.slots[c].views++ // the orphan still maps them
			}
			e.orphans = append(e.orphans, orphan{addr: addr, size: m.n * e.g, mapped: true, chunks: chunks, part: true})
		}
	}
	if kept || e.drv.free(v.base, v.vsize) != nil {
		e.orphans = append(e.orphans, orphan{addr: v.base, size: v.vsize})
		e.orphanVirt += v.vsize
	}
	delete(e.views, v.base)
	v.gone = true
	e.viewsReleased++
	e.forgetAway()
	e.viewBytes -= v.vsize
}

// recutInPlace is recut for when the new handles cannot be created before pa is released: pa is
// unmapped from the idle views' sites and the arena and released first, then the new handles are
// created, mapped and made accessible in the arena and at the sites. If a site cannot be unmapped
// its view is released (dropSiteView); if pa stays mapped there, or the arena's part fails before
// pa is released, the views already unmapped are released and pa stays as it was. If pa's
// release or the creation fails, pa's bytes are lost to the arena (its slots left empty) and the
// error is returned, the views already unmapped released.
func (e *Engine) recutInPlace(pa *physAlloc, parts []uint64, sites []viewSite) error {
	addr, size := e.arenaBase+uintptr(pa.first*e.g), pa.n*e.g
	unmapped := 0
	holed := func() { // releases the views whose sites [0, unmapped) map nothing now
		for i := range unmapped {
			if !sites[i].v.gone {
				e.dropSiteView(sites, i, pa.n, func(j int) []physAlloc {
					if j < unmapped {
						return nil
					}
					return []physAlloc{*pa}
				})
			}
		}
	}
	for i, s := range sites {
		if s.v.gone {
			continue
		}
		if err := e.drv.unmap(s.v.base+uintptr(s.off), size); err != nil {
			e.dropSiteView(sites, i, pa.n, func(j int) []physAlloc {
				if j < i {
					return nil
				}
				return []physAlloc{*pa}
			})
		}
		unmapped = i + 1
	}
	counted := int32(0) // the views alive still count their sites' chunks
	for _, s := range sites {
		if !s.v.gone {
			counted++
		}
	}
	if e.slots[pa.first].views != counted { // a failed unmap left pa mapped under an orphaned range
		holed()
		return nil
	}
	if err := e.drv.unmap(addr, size); err != nil {
		holed()
		return nil
	}
	if err := e.drv.release(pa.h); err != nil {
		holed()
		return e.mapBack(pa, addr, size, err, nil)
	}
	made, err := e.createRun(pa.first, parts)
	if err != nil {
		holed()
		e.loseAlloc(pa, false, true)
		return fmt.Errorf("stitch: re-cut of a handle: %w", err)
	}
	for i, s := range sites {
		if s.v.gone {
			continue
		}
		if left, err := e.mapSite(s, pa, made); err != nil {
			e.dropSiteView(sites, i, pa.n, remapped(i, left, made, nil))
		}
	}
	e.adopt(pa, made)
	return nil
}

// mapSite maps the handles made of pa at site s, where nothing is mapped, and makes them
// accessible. On a driver error it returns the handles mapped there so far with the error.
func (e *Engine) mapSite(s viewSite, pa *physAlloc, made []physAlloc) ([]physAlloc, error) {
	addr := s.v.base + uintptr(s.off)
	for i, m := range made {
		if err := e.drv.mapRange(addr+uintptr((m.first-pa.first)*e.g), m.n*e.g, m.h, 0); err != nil {
			return made[:i], err
		}
	}
	if err := e.drv.setAccess(addr, pa.n*e.g); err != nil {
		return made, err
	}
	return nil, nil
}

// adopt puts the handles made in place of pa into the engine's tables.
func (e *Engine) adopt(pa *physAlloc, made []physAlloc) {
	delete(e.allocs, pa.h)
	for _, m := range made {
		e.allocs[m.h] = &physAlloc{h: m.h, first: m.first, n: m.n}
		for i := uint64(0); i < m.n; i++ {
			s := &e.slots[m.first+i]
			s.h, s.hoff = m.h, i*e.g
		}
	}
}

// recut replaces handle pa, wholly loose and mapped by no used view, with handles of parts chunks
// (in arena order, summing to pa.n) at the same slots: the new ones are created first, then pa is
// unmapped, the new ones mapped and made accessible, then the idle views' sites of pa are remapped
// to them (remapSites), and pa released. The bytes stay loose throughout. On a driver error before
// pa is unmapped nothing changes; after it, pa is mapped back (the views still map it); if even
// that fails its slots are left empty and the error is returned.
func (e *Engine) recut(pa *physAlloc, parts []uint64, sites []viewSite) error {
	made := make([]physAlloc, 0, len(parts))
	at := pa.first
	for _, k := range parts {
		h, err := e.drv.create(k * e.g)
		if err != nil {
			for _, m := range slices.Backward(made) {
				e.undoRun(m, false)
			}
			return nil
		}
		made = append(made, physAlloc{h: h, first: at, n: k})
		at += k
	}
	addr, size := e.arenaBase+uintptr(pa.first*e.g), pa.n*e.g
	if err := e.drv.unmap(addr, size); err != nil {
		for _, m := range slices.Backward(made) {
			e.undoRun(m, false)
		}
		return nil
	}
	mapped := 0
	var err error
	for _, m := range made {
		if err = e.drv.mapRange(e.arenaBase+uintptr(m.first*e.g), m.n*e.g, m.h, 0); err != nil {
			break
		}
		mapped++
	}
	if err == nil {
		err = e.drv.setAccess(addr, size)
	}
	if err != nil {
		// Back to pa: the new handles go, pa is mapped again.
		blocked := false
		for i, m := range slices.Backward(made) {
			e.undoRun(m, i < mapped)
		}
		for i := pa.first; i < pa.first+pa.n; i++ {
			blocked = blocked || e.slots[i].blocked
		}
		if blocked {
			e.dropSites(pa, sites)
			e.loseAlloc(pa, false, false)
			return fmt.Errorf("stitch: re-cut of a handle: %w", err)
		}
		return e.mapBack(pa, addr, size, err, sites)
	}
	e.remapSites(pa, made, sites)
	if err := e.drv.release(pa.h); err != nil {
		e.log.Error("stitch: release of a re-cut handle failed; kept as orphan", "err", err)
		e.orphans = append(e.orphans, orphan{h: pa.h, size: size})
		e.orphanBytes += size
	}
	e.adopt(pa, made)
	return nil
}

// loseAlloc gives up handle pa after a failed recut: its loose bytes leave the arena and its slots
// become empty (blocked while still mapped), and the handle is released or kept as an orphan
// (released already, if so).
func (e *Engine) loseAlloc(pa *physAlloc, stillMapped, released bool) {
	addr, size := e.arenaBase+uintptr(pa.first*e.g), pa.n*e.g
	e.loose.take(pa.first*e.g, (pa.first+pa.n)*e.g)
	for i := pa.first; i < pa.first+pa.n; i++ {
		e.slots[i] = slot{blocked: e.slots[i].blocked, views: e.slots[i].views} // an orphaned view mapping may still count
		e.holes++
	}
	e.holeFrom = min(e.holeFrom, pa.first)
	delete(e.allocs, pa.h)
	e.reserved -= size
	if stillMapped {
		e.orphans = append(e.orphans, orphan{h: pa.h, addr: addr, size: size, mapped: true, slots: [2]uint64{pa.first, pa.n}})
		e.orphanBytes += size
		e.blockSlots(pa.first, pa.n, true)
		return
	}
	if !released {
		if err := e.drv.release(pa.h); err != nil {
			e.orphans = append(e.orphans, orphan{h: pa.h, size: size})
			e.orphanBytes += size
		}
	}
	e.log.Error("stitch: a handle could not be mapped back after a failed re-cut; its memory is given up")
}

// growPages grows count pages of n chunks each: one handle per page when handles follow the
// blocks, handles of the handle size otherwise.
func (e *Engine) growPages(count, n uint64) error {
	if !e.cfg.followBlocks {
		return e.grow(count*n, count*n)
	}
	parts := make([]uint64, count)
	for i := range parts {
		parts[i] = n
	}
	return e.growParts(parts)
}

// mapBack maps pa, whose re-cut failed with err after its arena range [addr, addr+size) was
// unmapped, back over that range. It returns nil when pa is whole in the arena again; otherwise
// the views that still map pa at sites are released, pa's bytes are lost to the arena
// (loseAlloc) and the re-cut's error is returned.
func (e *Engine) mapBack(pa *physAlloc, addr uintptr, size uint64, err error, sites []viewSite) error {
	if e.drv.mapRange(addr, size, pa.h, 0) == nil {
		if e.drv.setAccess(addr, size) == nil {
			return nil
		}
		if e.drv.unmap(addr, size) != nil {
			e.dropSites(pa, sites)
			e.loseAlloc(pa, true, false)
			return fmt.Errorf("stitch: re-cut of a handle: %w", err)
		}
	}
	e.dropSites(pa, sites)
	e.loseAlloc(pa, false, false)
	return fmt.Errorf("stitch: re-cut of a handle: %w", err)
}

// dropSites releases the views that still map pa whole at sites, before pa is lost to the arena.
func (e *Engine) dropSites(pa *physAlloc, sites []viewSite) {
	for i, s := range sites {
		if !s.v.gone {
			e.dropSiteView(sites, i, pa.n, func(int) []physAlloc { return []physAlloc{*pa} })
		}
	}
}
