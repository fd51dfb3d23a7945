package snapshot

import (
	"fmt"
	"sort"

	"github.com/gmlake/gmlake/stitch"
)

// Segment types: the arena's mapped runs hold the physical memory; a stitched view maps some of it
// again at its own addresses.
const (
	SegmentArena    = "large"
	SegmentStitched = "stitched"
)

// Block states, as PyTorch names them.
const (
	StateActive   = "active_allocated"
	StateInactive = "inactive"
)

// Snapshot is the engine's memory at one moment and the trace that led there.
type Snapshot struct {
	Segments []Segment
	Trace    []Event
}

// Segment is a run of mapped virtual memory.
type Segment struct {
	Address uintptr
	Size    uint64
	Type    string // SegmentArena or SegmentStitched
	Stream  stitch.Stream
	Blocks  []Block // in address order, covering the segment
}

// Block is a piece of a segment.
type Block struct {
	Address   uintptr
	Size      uint64
	Requested uint64 // bytes asked for; 0 for arena memory mapped under a live view
	State     string // StateActive or StateInactive
	Frame     string // for arena memory under a view: which view; else empty
}

// Reserved is the bytes of the arena segments: the physical memory mapped.
func (s Snapshot) Reserved() uint64 {
	var n uint64
	for _, seg := range s.Segments {
		if seg.Type == SegmentArena {
			n += seg.Size
		}
	}
	return n
}

// Requested is the requested bytes of the active blocks: the live bytes.
func (s Snapshot) Requested() uint64 {
	var n uint64
	for _, seg := range s.Segments {
		for _, b := range seg.Blocks {
			if b.State == StateActive {
				n += b.Requested
			}
		}
	}
	return n
}

// Snapshot lays out the engine's memory now (see the package documentation) with the trace so far.
func (r *Recorder) Snapshot() Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	maps := r.sortedMaps()
	var segs []Segment
	// Arena: runs of adjacent mappings.
	for _, m := range maps {
		if !r.inArena(m.addr) {
			continue
		}
		if n := len(segs); n > 0 && segs[n-1].Address+uintptr(segs[n-1].Size) == m.addr {
			segs[n-1].Size += m.size
			continue
		}
		segs = append(segs, Segment{Address: m.addr, Size: m.size, Type: SegmentArena})
	}
	// Views: one segment each, as much of it as is mapped.
	views := make([]uintptr, 0, len(r.ranges))
	for a := range r.ranges {
		views = append(views, a)
	}
	sort.Slice(views, func(i, j int) bool { return views[i] < views[j] })
	for _, v := range views {
		var mapped uint64
		for _, m := range maps {
			if m.addr >= v && m.addr < v+uintptr(r.ranges[v]) {
				mapped += m.size
			}
		}
		if mapped > 0 {
			segs = append(segs, Segment{Address: v, Size: mapped, Type: SegmentStitched})
		}
	}
	active := make(map[int][]Block) // by segment index
	live := make([]uintptr, 0, len(r.live))
	for p := range r.live {
		live = append(live, p)
	}
	sort.Slice(live, func(i, j int) bool { return live[i] < live[j] })
	for _, p := range live {
		b := r.live[p]
		i := segmentOf(segs, p)
		if i < 0 {
			continue // not in mapped memory: nothing to show it in
		}
		segs[i].Stream = b.stream
		active[i] = append(active[i], Block{Address: p, Size: b.size, Requested: b.size, State: StateActive})
		if segs[i].Type == SegmentStitched {
			for _, piece := range r.underView(maps, p, b.size) {
				if j := segmentOf(segs, piece.Address); j >= 0 {
					piece.Frame = fmt.Sprintf("mapped under stitched view %#x", segs[i].Address)
					active[j] = append(active[j], piece)
				}
			}
		}
	}
	for i := range segs {
		segs[i].Blocks = fill(segs[i], active[i])
	}
	return Snapshot{Segments: segs, Trace: append([]Event(nil), r.events...)}
}

// underView is the arena memory mapped at [p, p+size) of a view, as blocks.
func (r *Recorder) underView(maps []placed, p uintptr, size uint64) []Block {
	var out []Block
	end := p + uintptr(size)
	for _, vm := range maps {
		lo, hi := max(vm.addr, p), min(vm.addr+uintptr(vm.size), end)
		if r.inArena(vm.addr) || lo >= hi {
			continue
		}
		// The handle's bytes [off, off+n) as the view maps them; find where the arena maps them.
		off := vm.offset + uint64(lo-vm.addr)
		n := uint64(hi - lo)
		for _, am := range maps {
			if !r.inArena(am.addr) || am.handle != vm.handle {
				continue
			}
			a, b := max(off, am.offset), min(off+n, am.offset+am.size)
			if a < b {
				out = append(out, Block{Address: am.addr + uintptr(a-am.offset), Size: b - a, State: StateActive})
			}
		}
	}
	return out
}

func segmentOf(segs []Segment, p uintptr) int {
	for i, s := range segs {
		if p >= s.Address && p < s.Address+uintptr(s.Size) {
			return i
		}
	}
	return -1
}

// fill sorts a segment's active blocks and adds inactive blocks in the gaps.
func fill(seg Segment, active []Block) []Block {
	sort.Slice(active, func(i, j int) bool { return active[i].Address < active[j].Address })
	var out []Block
	at, end := seg.Address, seg.Address+uintptr(seg.Size)
	for _, b := range active {
		if b.Address > at {
			out = append(out, Block{Address: at, Size: uint64(b.Address - at), State: StateInactive})
		}
		if b.Address+uintptr(b.Size) > end {
			b.Size = uint64(end - b.Address)
		}
		out = append(out, b)
		at = max(at, b.Address+uintptr(b.Size))
	}
	if at < end {
		out = append(out, Block{Address: at, Size: uint64(end - at), State: StateInactive})
	}
	return out
}
