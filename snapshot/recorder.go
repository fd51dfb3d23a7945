package snapshot

import (
	"sort"
	"sync"
	"time"

	"github.com/gmlake/gmlake/stitch"
)

// Recorder is a stitch.Driver that passes every call on to the driver it wraps and remembers the
// engine's mappings, and a log of allocations, frees and mappings that Snapshot turns into a
// PyTorch memory snapshot. Give it to the engine as its driver (stitch.New, gmlake.WithDriver) and
// call RecordAlloc and RecordFree where the engine's Alloc and Free succeed. It is safe for
// concurrent use.
type Recorder struct {
	stitch.Driver

	mu       sync.Mutex
	start    time.Time
	arena    uintptr             // the first range reserved: the engine's arena
	arenaEnd uintptr             //
	ranges   map[uintptr]uint64  // reserved ranges other than the arena (views), by start
	maps     map[uintptr]mapping // live mappings by virtual address
	created  map[stitch.PhysHandle]uint64
	live     map[uintptr]liveBlock // live allocations by address
	events   []Event
}

type mapping struct {
	size   uint64
	handle stitch.PhysHandle
	offset uint64
}

type liveBlock struct {
	size   uint64
	stream stitch.Stream
}

// Event is one entry of a device trace.
type Event struct {
	Action string // alloc, free_requested, free_completed, segment_map, segment_unmap
	Addr   uintptr
	Size   uint64
	Stream stitch.Stream
	TimeUS int64 // microseconds since the Recorder was made
}

// NewRecorder wraps d.
func NewRecorder(d stitch.Driver) *Recorder {
	return &Recorder{Driver: d, start: time.Now(), ranges: map[uintptr]uint64{}, maps: map[uintptr]mapping{},
		created: map[stitch.PhysHandle]uint64{}, live: map[uintptr]liveBlock{}}
}

func (r *Recorder) event(action string, addr uintptr, size uint64, s stitch.Stream) {
	r.events = append(r.events, Event{Action: action, Addr: addr, Size: size, Stream: s,
		TimeUS: time.Since(r.start).Microseconds()})
}

// RecordAlloc notes that the engine handed out size bytes at ptr for stream s.
func (r *Recorder) RecordAlloc(ptr uintptr, size uint64, s stitch.Stream) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live[ptr] = liveBlock{size: size, stream: s}
	r.event("alloc", ptr, size, s)
}

// RecordFree notes that the block at ptr (of size bytes) was given back.
func (r *Recorder) RecordFree(ptr uintptr, size uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.live[ptr].stream
	delete(r.live, ptr)
	r.event("free_requested", ptr, size, s)
	r.event("free_completed", ptr, size, s)
}

// Create implements stitch.Driver.
func (r *Recorder) Create(size uint64) (stitch.PhysHandle, error) {
	h, err := r.Driver.Create(size)
	if err == nil {
		r.mu.Lock()
		r.created[h] = size
		r.mu.Unlock()
	}
	return h, err
}

// Release implements stitch.Driver.
func (r *Recorder) Release(h stitch.PhysHandle) error {
	err := r.Driver.Release(h)
	if err == nil {
		r.mu.Lock()
		delete(r.created, h)
		r.mu.Unlock()
	}
	return err
}

// Reserve implements stitch.Driver: the first range is the arena, later ones are views.
func (r *Recorder) Reserve(size uint64) (uintptr, error) {
	addr, err := r.Driver.Reserve(size)
	if err == nil {
		r.mu.Lock()
		if r.arenaEnd == 0 {
			r.arena, r.arenaEnd = addr, addr+uintptr(size)
		} else {
			r.ranges[addr] = size
		}
		r.mu.Unlock()
	}
	return addr, err
}

// Free implements stitch.Driver.
func (r *Recorder) Free(addr uintptr, size uint64) error {
	err := r.Driver.Free(addr, size)
	if err == nil {
		r.mu.Lock()
		delete(r.ranges, addr)
		r.mu.Unlock()
	}
	return err
}

// Map implements stitch.Driver.
func (r *Recorder) Map(addr uintptr, size uint64, h stitch.PhysHandle, offset uint64) error {
	err := r.Driver.Map(addr, size, h, offset)
	if err == nil {
		r.mu.Lock()
		r.maps[addr] = mapping{size: size, handle: h, offset: offset}
		if r.inArena(addr) {
			r.event("segment_map", addr, size, 0)
		}
		r.mu.Unlock()
	}
	return err
}

// Unmap implements stitch.Driver: it covers whole earlier mappings.
func (r *Recorder) Unmap(addr uintptr, size uint64) error {
	err := r.Driver.Unmap(addr, size)
	if err == nil {
		r.mu.Lock()
		for a, m := range r.maps {
			if a >= addr && a+uintptr(m.size) <= addr+uintptr(size) {
				delete(r.maps, a)
			}
		}
		if r.inArena(addr) {
			r.event("segment_unmap", addr, size, 0)
		}
		r.mu.Unlock()
	}
	return err
}

func (r *Recorder) inArena(addr uintptr) bool { return addr >= r.arena && addr < r.arenaEnd }

// sortedMaps is the live mappings in address order, with their addresses.
func (r *Recorder) sortedMaps() []placed {
	out := make([]placed, 0, len(r.maps))
	for a, m := range r.maps {
		out = append(out, placed{addr: a, mapping: m})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].addr < out[j].addr })
	return out
}

type placed struct {
	addr uintptr
	mapping
}
