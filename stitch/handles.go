package stitch

import (
	"fmt"
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
//     and last chunk. A handle that a view maps, or that another block uses, is left as it is.
//   - A stitch's last piece is cut the same way before it is mapped.
//
// So each handle holds the bytes of one block (and the slivers of its end chunks), free memory is
// whole handles, and stitching it costs one handle per block it once held, not one per chunk.

// handleParts splits a growth of n chunks, the first need of which the request lacks, into the
// sizes (in chunks) of the handles to create: the need as one handle, the rest as another.
func (e *Engine) handleParts(n, need uint64) []uint64 {
	if !e.cfg.followBlocks {
		unit := e.cfg.handleSize / e.g
		var parts []uint64
		for at := uint64(0); at < n; at += unit {
			parts = append(parts, min(unit, n-at))
		}
		return parts
	}
	need = min(need, n)
	parts := []uint64{need}
	if n > need {
		parts = append(parts, n-need)
	}
	return parts
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
// strictly inside it, the handle is wholly loose and no view maps it. It returns the driver's
// error when one lost the handle's memory.
func (e *Engine) cutAt(c uint64) error {
	if !e.cfg.followBlocks || c >= uint64(len(e.slots)) || !e.slots[c].present || e.slots[c].hoff == 0 {
		return nil // no handle there, or c is where one begins
	}
	pa := e.allocs[e.slots[c].h]
	if _, ok := e.loose.containing(pa.first*e.g, (pa.first+pa.n)*e.g); !ok {
		return nil // another block uses it
	}
	if !e.releasable(pa) && !e.dropIdleViewsOn(pa) {
		return nil
	}
	parts := []uint64{c - pa.first, pa.first + pa.n - c}
	if e.reserved+e.orphanBytes+pa.n*e.g > e.capacity {
		return e.recutInPlace(pa, parts) // the new handles do not fit beside the old one
	}
	return e.recut(pa, parts)
}

// recutInPlace is recut for when the new handles cannot be created before pa is released: pa is
// unmapped and released first, then the new handles are created, mapped and made accessible. If
// that fails, pa's bytes are lost to the arena (its slots left empty) and the error is returned.
func (e *Engine) recutInPlace(pa *physAlloc, parts []uint64) error {
	addr, size := e.arenaBase+uintptr(pa.first*e.g), pa.n*e.g
	if err := e.drv.unmap(addr, size); err != nil {
		return nil
	}
	if err := e.drv.release(pa.h); err != nil {
		return e.mapBack(pa, addr, size, err)
	}
	made, err := e.createRun(pa.first, parts)
	if err != nil {
		e.loseAlloc(pa, false, true)
		return fmt.Errorf("stitch: re-cut of a handle: %w", err)
	}
	e.adopt(pa, made)
	return nil
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

// recut replaces handle pa, wholly loose and mapped by no view, with handles of parts chunks (in
// arena order, summing to pa.n) at the same slots: the new ones are created first, then pa is
// unmapped, the new ones mapped and made accessible, and pa released. The bytes stay loose
// throughout. On a driver error before pa is unmapped nothing changes; after it, pa is mapped
// back; if even that fails its slots are left empty and the error is returned.
func (e *Engine) recut(pa *physAlloc, parts []uint64) error {
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
			e.loseAlloc(pa, false, false)
			return fmt.Errorf("stitch: re-cut of a handle: %w", err)
		}
		return e.mapBack(pa, addr, size, err)
	}
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
		e.slots[i] = slot{blocked: e.slots[i].blocked}
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

// dropIdleViewsOn releases the views that map a chunk of pa, if no block uses any of them; it
// reports whether none maps pa now.
func (e *Engine) dropIdleViewsOn(pa *physAlloc) bool {
	var on []*view
	for _, v := range e.views {
		for _, c := range v.chunks {
			if c >= pa.first && c < pa.first+pa.n {
				if v.users > 0 {
					return false
				}
				on = append(on, v)
				break
			}
		}
	}
	for _, v := range on {
		if e.unmapView(v) != nil {
			return false
		}
	}
	return e.releasable(pa)
}

// mapBack maps pa, whose re-cut failed with err after its arena range [addr, addr+size) was
// unmapped, back over that range. It returns nil when pa is whole in the arena again; otherwise
// pa's bytes are lost to the arena (loseAlloc) and the re-cut's error is returned.
func (e *Engine) mapBack(pa *physAlloc, addr uintptr, size uint64, err error) error {
	if e.drv.mapRange(addr, size, pa.h, 0) == nil {
		if e.drv.setAccess(addr, size) == nil {
			return nil
		}
		if e.drv.unmap(addr, size) != nil {
			e.loseAlloc(pa, true, false)
			return fmt.Errorf("stitch: re-cut of a handle: %w", err)
		}
	}
	e.loseAlloc(pa, false, false)
	return fmt.Errorf("stitch: re-cut of a handle: %w", err)
}
