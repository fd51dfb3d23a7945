package stitch

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// bookDriver is the least Driver the engine runs on: bookkeeping only, every event complete. The
// package's own tests cannot use driver/sim (it imports this package).
type bookDriver struct {
	next  uint64
	addr  uintptr
	calls int
}

func (d *bookDriver) Granularity() uint64 { return 2 << 20 }
func (d *bookDriver) Create(uint64) (PhysHandle, error) {
	d.next++
	return PhysHandle(d.next), nil
}
func (d *bookDriver) Release(PhysHandle) error { return nil }
func (d *bookDriver) Reserve(size uint64) (uintptr, error) {
	if d.addr == 0 {
		d.addr = 1 << 44
	}
	a := d.addr
	d.addr += uintptr(size) + 2<<20
	return a, nil
}
func (d *bookDriver) Free(uintptr, uint64) error                    { return nil }
func (d *bookDriver) Map(uintptr, uint64, PhysHandle, uint64) error { return nil }
func (d *bookDriver) Unmap(uintptr, uint64) error                   { return nil }
func (d *bookDriver) SetAccess(uintptr, uint64) error               { return nil }
func (d *bookDriver) RecordEvent(Stream) (Event, error) {
	d.next++
	return Event(d.next), nil
}
func (d *bookDriver) EventDone(Event) (bool, error)    { return true, nil }
func (d *bookDriver) DestroyEvent(Event) error         { return nil }
func (d *bookDriver) Synchronize() error               { return nil }
func (d *bookDriver) MemInfo() (uint64, uint64, error) { return 1 << 40, 1 << 40, nil }

// busyEngine builds an engine holding one of everything Check walks: live and cached primitive
// blocks, a stitched block (so a view), cached blocks of a second stream, small blocks in a page,
// loose spans and an empty arena slot.
func busyEngine(t *testing.T) *Engine {
	t.Helper()
	const mib = 1 << 20
	e, err := New(&bookDriver{}, WithCapacity(64*mib))
	require.NoError(t, err)
	alloc := func(size uint64, s Stream) uintptr {
		p, err := e.Alloc(size, s)
		require.NoError(t, err)
		return p
	}
	free := func(p uintptr, size uint64) { require.NoError(t, e.Free(p, size)) }
	alloc(100, 0)
	small := alloc(3000, 0)
	var big []uintptr
	for range 8 {
		big = append(big, alloc(4*mib, 0))
	}
	for _, i := range []int{1, 3, 5} {
		free(big[i], 4*mib)
	}
	stitchedA := alloc(8*mib, 0) // two 4 MiB holes apart: a view
	alloc(6*mib, 0)
	// The capacity is spent: the request below must be stitched from the freed 4 MiB blocks.
	big = append(big, alloc(24*mib, 0))
	free(big[len(big)-1], 24*mib)
	free(stitchedA, 8*mib)
	other := alloc(4*mib, 1)
	free(other, 4*mib) // cached on stream 1
	free(small, 3000)  // cached small block
	free(big[0], 4*mib)
	require.NoError(t, e.Check())
	require.NotEmpty(t, e.views, "a stitched block was made")
	require.NotEmpty(t, e.pages)
	require.NotZero(t, e.largeAge.n)
	require.NotZero(t, e.smallAge.n)
	require.NotEmpty(t, e.otherLists)
	require.NotZero(t, e.loose.len()+e.smallFree.len())
	return e
}

// anyBlock returns a block of e matching keep.
func anyBlock(t *testing.T, e *Engine, keep func(*block) bool) *block {
	t.Helper()
	for _, b := range e.blocks.All() {
		if keep(b) {
			return b
		}
	}
	t.Fatal("no such block")
	return nil
}

func anyView(e *Engine) *view {
	for _, v := range e.views {
		return v
	}
	return nil
}

func anyPage(e *Engine) *page {
	for _, p := range e.pages {
		return p
	}
	return nil
}

func presentSlot(t *testing.T, e *Engine) int {
	for i, s := range e.slots {
		if s.present {
			return i
		}
	}
	t.Fatal("no chunk")
	return -1
}

// TestCheckReportsEveryCorruption corrupts one structure Check guards at a time, in an engine that
// is consistent before, and requires the report that names it.
func TestCheckReportsEveryCorruption(t *testing.T) {
	tests := []struct {
		name    string
		corrupt func(t *testing.T, e *Engine)
		want    string
	}{
		{"loose byte count", func(t *testing.T, e *Engine) { e.loose.bytes += 4096 }, "loose: spans hold"},
		{"loose size index", func(t *testing.T, e *Engine) {
			s, ok := e.loose.sizes().max()
			require.True(t, ok)
			e.loose.bySize.remove(s)
		}, "missing from the size index"},
		{"dropped loose size index", func(t *testing.T, e *Engine) {
			s, ok := e.loose.byAddr.max()
			require.True(t, ok)
			e.loose.bySize.clear()
			e.loose.sizeStale = true
			e.loose.bySize.insertUnwatched(s)
		}, "spans in a dropped size index"},
		{"small free count", func(t *testing.T, e *Engine) { e.smallFree.bytes-- }, "small free: spans hold"},
		{"pointer index", func(t *testing.T, e *Engine) {
			b := anyBlock(t, e, func(b *block) bool { return b.kind == primitive && b.live })
			e.blocks.Delete(uint64(b.ptr))
			e.blocks.Put(uint64(b.ptr+alignment), b)
		}, "block indexed at"},
		{"block size", func(t *testing.T, e *Engine) {
			anyBlock(t, e, func(b *block) bool { return b.live }).req = 0
		}, "requested 0"},
		{"block kind", func(t *testing.T, e *Engine) {
			anyBlock(t, e, func(b *block) bool { return b.kind == small }).kind = primitive
		}, "kind 0 with size"},
		{"live bytes", func(t *testing.T, e *Engine) { e.live += alignment }, "live blocks hold"},
		{"live block count", func(t *testing.T, e *Engine) { e.liveBlocks++ }, "live blocks hold"},
		{"live block in a free list", func(t *testing.T, e *Engine) {
			b := anyBlock(t, e, func(b *block) bool { return !b.live && b.kind == primitive })
			b.live = true
			e.live += b.req
			e.liveBlocks++
		}, "is in a free list"},
		{"age list count", func(t *testing.T, e *Engine) { e.largeAge.n++ }, "age list:"},
		{"age list bytes", func(t *testing.T, e *Engine) { e.smallAge.bytes += alignment }, "age list:"},
		{"age list pool", func(t *testing.T, e *Engine) {
			b := e.smallAge.oldest
			e.smallAge.unlink(b)
			e.largeAge.pushNewest(b)
		}, "in the wrong age list"},
		{"free list count", func(t *testing.T, e *Engine) {
			for _, l := range e.hotLists.All() {
				if l.head != nil {
					l.n++
					return
				}
			}
			t.Fatal("no free list")
		}, "free list ("},
		{"free list stream", func(t *testing.T, e *Engine) {
			for _, lists := range e.otherLists {
				for _, l := range lists.All() {
					if l.head != nil {
						l.head.stream = 99
						return
					}
				}
			}
			t.Fatal("no free list of another stream")
		}, "stream 99"},
		{"cached block in no list", func(t *testing.T, e *Engine) {
			b := anyBlock(t, e, func(b *block) bool { return !b.live && b.kind == primitive })
			b.list.unlink(b)
		}, "in free lists"},
		{"primitive off its arena offset", func(t *testing.T, e *Engine) {
			anyBlock(t, e, func(b *block) bool { return b.kind == primitive && b.live }).ptr += alignment
		}, "not at its arena offset"},
		{"overlapping blocks", func(t *testing.T, e *Engine) {
			b := anyBlock(t, e, func(b *block) bool { return b.kind == primitive && b.live && b.pos > 0 })
			b.pos -= e.g
			b.ptr -= uintptr(e.g)
			e.blocks.Delete(uint64(b.ptr + uintptr(e.g)))
			e.blocks.Put(uint64(b.ptr), b)
		}, "overlaps"},
		{"owner index", func(t *testing.T, e *Engine) {
			b := anyBlock(t, e, func(b *block) bool { return b.kind == primitive && b.live })
			require.True(t, e.owners.remove(span{start: b.pos, end: b.pos + b.size}))
		}, "owner index holds"},
		{"room bound above its room", func(t *testing.T, e *Engine) {
			e.syncRoom()
			var loosened span // a room with loose bytes, whose windows may flush nothing
			e.room.byAddr.walk(func(s span) bool {
				if e.roomBound(s, 1<<30, nil) == 0 {
					loosened = s
					return false
				}
				return true
			})
			require.NotZero(t, loosened.size(), "no room holds loose bytes")
			require.True(t, e.room.bySize.reweigh(loosened, 0))
		}, "is bounded by"},
		{"loose span over a block", func(t *testing.T, e *Engine) {
			b := anyBlock(t, e, func(b *block) bool { return b.kind == primitive && b.live })
			e.loose.add(span{start: b.pos, end: b.pos + alignment})
		}, "overlaps"},
		{"stitched block outside its view", func(t *testing.T, e *Engine) {
			anyBlock(t, e, func(b *block) bool { return b.kind == stitched }).voff += anyView(e).cap
		}, "not a window of its view"},
		{"view users", func(t *testing.T, e *Engine) { anyView(e).users++ }, "blocks use it, count says"},
		{"view held bytes", func(t *testing.T, e *Engine) { anyView(e).held += alignment }, "its blocks hold"},
		{"view size", func(t *testing.T, e *Engine) { anyView(e).vsize += e.g }, "malformed"},
		{"view capacity", func(t *testing.T, e *Engine) { anyView(e).cap += alignment }, "capacity"},
		{"view chunks", func(t *testing.T, e *Engine) {
			v := anyView(e)
			v.chunks[0], v.chunks[len(v.chunks)-1] = v.chunks[len(v.chunks)-1], v.chunks[0]
		}, "pieces need"},
		{"view bytes", func(t *testing.T, e *Engine) { e.viewBytes += e.g }, "views hold"},
		{"view list", func(t *testing.T, e *Engine) { e.viewUnlink(anyView(e)) }, "in the view list"},
		{"slot view count", func(t *testing.T, e *Engine) { e.slots[presentSlot(t, e)].views++ }, "views map it"},
		{"slot handle offset", func(t *testing.T, e *Engine) { e.slots[presentSlot(t, e)].hoff += e.g }, "does not match its allocation"},
		{"slot without chunk", func(t *testing.T, e *Engine) {
			i := presentSlot(t, e)
			e.slots[i].present = false
			e.holes++
		}, "holds no chunk"},
		{"blocked slot", func(t *testing.T, e *Engine) {
			e.slots = append(e.slots, slot{blocked: true})
			e.holes++
		}, "blocked by no orphan"},
		{"hole count", func(t *testing.T, e *Engine) { e.holes++ }, "empty slots, count says"},
		{"reserved bytes", func(t *testing.T, e *Engine) { e.reserved += e.g }, "reserved says"},
		{"peak reserved", func(t *testing.T, e *Engine) { e.peakReserved = 0 }, "peak"},
		{"page used bytes", func(t *testing.T, e *Engine) { anyPage(e).used += alignment }, "blocks use"},
		{"page not tiled", func(t *testing.T, e *Engine) {
			s, ok := e.smallFree.byAddr.max()
			require.True(t, ok)
			e.smallFree.drop(s)
		}, "page "},
		{"page malformed", func(t *testing.T, e *Engine) { anyPage(e).blk.size += e.g }, "malformed"},
		{"small block in an unknown page", func(t *testing.T, e *Engine) {
			anyBlock(t, e, func(b *block) bool { return b.kind == small }).page = &page{id: 1 << 40}
		}, "unknown page"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := busyEngine(t)
			tt.corrupt(t, e)
			err := e.Check()
			require.Error(t, err, "Check misses the corruption")
			require.True(t, strings.Contains(err.Error(), tt.want), "Check reports %q, not %q", err, tt.want)
		})
	}
}

// followingEngine builds a marked engine whose second iteration follows the memo of the first.
func followingEngine(t *testing.T) *Engine {
	t.Helper()
	const mib = 1 << 20
	e, err := New(&bookDriver{}, WithCapacity(64*mib))
	require.NoError(t, err)
	sizes := []uint64{4 * mib, 6 * mib, 3 * mib}
	e.MarkIteration()
	var ptrs []uintptr
	for _, s := range sizes {
		p, err := e.Alloc(s, 0)
		require.NoError(t, err)
		ptrs = append(ptrs, p)
	}
	for i, p := range ptrs {
		require.NoError(t, e.Free(p, sizes[i]))
	}
	e.MarkIteration()
	_, err = e.Alloc(sizes[0], 0)
	require.NoError(t, err)
	require.NoError(t, e.Check())
	require.Equal(t, memoFollowing, e.iter.phase, "the second iteration follows the first's memo")
	require.Len(t, e.memos, 1)
	return e
}

// TestCheckReportsMemoCorruption sets the memos and the memo state (memoState) to each combination
// their transitions cannot make, in an engine following a memo, and requires the report.
func TestCheckReportsMemoCorruption(t *testing.T) {
	tests := []struct {
		name    string
		corrupt func(e *Engine)
		want    string
	}{
		{"new shape while following", func(e *Engine) { e.iter.phase = memoNewShape }, "phase 4 with a followed memo"},
		{"following no memo", func(e *Engine) { e.iter.follow = nil }, "phase 2 with a followed memo of 0"},
		{"choosing while following", func(e *Engine) { e.iter.phase = memoChoosing }, "phase 1 with a followed memo"},
		{"phase out of range", func(e *Engine) { e.iter.phase = 9 }, "phase 9"},
		{"followed memo not remembered", func(e *Engine) { e.iter.follow = slices.Clone(e.iter.follow) }, "follows a memo not remembered"},
		{"cursor past the memo", func(e *Engine) { e.iter.cursor = len(e.iter.follow) + 1 }, "at entry 4 of 3"},
		{"dominating with no dominance", func(e *Engine) { e.iter.phase = memoDominating }, "follows a dominating memo at dominance 0"},
		{"dominating memo's sizes", func(e *Engine) {
			e.iter.phase, e.iter.dominance, e.iter.scattered = memoDominating, domOne, true
			e.iter.followSizes = map[uint64]bool{4 << 20: true}
		}, "the dominating memo has 3 sizes, 1 noted"},
		{"ended memo without a hand-over", func(e *Engine) { e.iter.scriptEnded = e.memos[0] }, "dominance 0 with an ended memo"},
		{"hand-over without an ended memo", func(e *Engine) {
			e.iter.dominance, e.iter.scattered = domHandedOver, true
		}, "dominance 3 with an ended memo of 0"},
		{"dominance not scattered", func(e *Engine) { e.iter.dominance = domOne }, "dominance 1, scattered false"},
		{"unmarked with memos", func(e *Engine) { e.iter = memoState{} }, "unmarked, yet 1 memos"},
		{"memo out of order", func(e *Engine) {
			m := e.memos[0]
			m[0], m[1] = m[1], m[0]
		}, "memo 0: entry 1"},
		{"current memo past the ordinal", func(e *Engine) { e.memoCur[0].ord = e.iterOrd + 1 }, "past the bound"},
		{"remembered count", func(e *Engine) { e.remembered++ }, "count says 4"},
		{"empty memo", func(e *Engine) { e.memos = append(e.memos, memo{}) }, "memo 1 is empty"},
		{"new shape's flush left owed", func(e *Engine) { e.iter.flushOwed = true }, "flush is owed between calls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := followingEngine(t)
			tt.corrupt(e)
			err := e.Check()
			require.Error(t, err, "Check misses the corruption")
			require.True(t, strings.Contains(err.Error(), tt.want), "Check reports %q, not %q", err, tt.want)
		})
	}
}
