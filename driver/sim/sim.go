package sim

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/gmlake/gmlake/internal/btree"
	"github.com/gmlake/gmlake/stitch"
)

// Errors returned for calls a real driver would reject. Each is wrapped with the details.
var (
	ErrInvalid    = errors.New("sim: invalid argument")       // size 0, unaligned size/offset/address
	ErrNotFound   = errors.New("sim: no such object")         // unknown handle, range or event
	ErrNotMapped  = errors.New("sim: not mapped")             // unmap/set access over unmapped bytes
	ErrOverlap    = errors.New("sim: overlapping mapping")    // map over an existing mapping
	ErrOutOfRange = errors.New("sim: outside reserved range") // map outside a reserved range
	ErrBusy       = errors.New("sim: still in use")           // release mapped memory, free a range with mappings
	ErrInjected   = errors.New("sim: injected fault")         // the default error of an injected fault
)

// DefaultCapacity is the physical memory of a Driver made without WithCapacity: 1 TiB.
const DefaultCapacity = 1 << 40

// DefaultGranularity is the granularity of a Driver made without WithGranularity: 2 MiB, as on CUDA.
const DefaultGranularity = 2 << 20

// firstAddress is where fabricated virtual addresses start; far from zero so that a stray
// small integer is never mistaken for an address.
const firstAddress = 1 << 44

// Option configures a Driver.
type Option func(*Driver)

// WithCapacity sets the physical memory in bytes; Create beyond it fails with ErrOutOfMemory.
func WithCapacity(bytes uint64) Option { return func(d *Driver) { d.capacity = bytes } }

// WithGranularity sets the granularity (a power of two).
func WithGranularity(g uint64) Option { return func(d *Driver) { d.granularity = g } }

// WithFault makes the n-th call (1-based, counted from now) of kind fail with err (ErrInjected if nil).
func WithFault(kind stitch.CallKind, n int, err error) Option {
	return func(d *Driver) { d.failNth(kind, n, err) }
}

// WithEventDelay makes every event complete only after EventDone has been asked about it k times.
func WithEventDelay(k int) Option { return func(d *Driver) { d.eventDelay = k } }

// WithManualEvents makes events complete only when the test says so: CompleteEvent,
// CompleteStream, CompleteEvents or Synchronize. Until then EventDone reports false however often
// it is asked.
func WithManualEvents() Option { return func(d *Driver) { d.manual = true } }

// WithEventLatency makes every event complete once latency has passed since it was recorded (and
// not before, however often EventDone is asked), as queued device work would.
func WithEventLatency(latency time.Duration) Option {
	return func(d *Driver) { d.latency, d.now = latency, time.Now }
}

// Live counts the objects a Driver holds, for leak checks.
type Live struct {
	Handles       int    // physical allocations not released
	Ranges        int    // virtual ranges not freed
	Mappings      int    // Map calls not undone
	Events        int    // events not destroyed
	PhysicalBytes uint64 // bytes of physical memory created and not released
	VirtualBytes  uint64 // bytes of virtual ranges reserved and not freed
}

type fault struct {
	at  uint64 // fail when the call counter reaches this value
	err error
}

type handle struct {
	size   uint64
	mapped int // mappings that reference it
}

type mapping struct {
	off, size uint64 // within the range
	h         stitch.PhysHandle
	hoff      uint64
	access    bool
}

type vrange struct {
	base uintptr
	size uint64
	// maps: the range's mappings by their offset, disjoint. A B-tree, not a sorted slice: an
	// engine's arena holds tens of thousands of handles, and a map or unmap in the middle of a
	// slice moves every mapping after it.
	maps btree.Map[mapping]
}

type event struct {
	stream   stitch.Stream
	queries  int
	done     bool
	recorded time.Time // with WithEventLatency
}

// EventState describes one event the driver holds.
type EventState struct {
	Event  stitch.Event
	Stream stitch.Stream
	Done   bool
}

// Driver is the simulated driver. Make one with New.
type Driver struct {
	mu          sync.Mutex
	capacity    uint64
	granularity uint64
	eventDelay  int
	manual      bool          // WithManualEvents
	latency     time.Duration // WithEventLatency
	now         func() time.Time

	calls  [stitch.NumCallKinds]uint64
	faults [stitch.NumCallKinds][]fault

	physical   uint64
	nextHandle stitch.PhysHandle
	handles    map[stitch.PhysHandle]*handle
	nextAddr   uintptr
	ranges     []*vrange // sorted by base (bases only grow, so appends keep the order)
	mappings   int
	virtual    uint64
	nextEvent  stitch.Event
	events     map[stitch.Event]*event
}

var _ stitch.Driver = (*Driver)(nil)

// New makes a simulated driver.
func New(opts ...Option) *Driver {
	d := &Driver{
		capacity:    DefaultCapacity,
		granularity: DefaultGranularity,
		handles:     make(map[stitch.PhysHandle]*handle),
		events:      make(map[stitch.Event]*event),
		nextAddr:    firstAddress,
	}
	for _, o := range opts {
		o(d)
	}
	return d
}

// FailNth makes the n-th call (1-based, counted from now) of kind fail with err (ErrInjected if nil).
// The failed call has no effect.
func (d *Driver) FailNth(kind stitch.CallKind, n int, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.failNth(kind, n, err)
}

func (d *Driver) failNth(kind stitch.CallKind, n int, err error) {
	if err == nil {
		err = ErrInjected
	}
	d.faults[kind] = append(d.faults[kind], fault{at: d.calls[kind] + uint64(n), err: err})
}

// ClearFaults drops every pending injected fault.
func (d *Driver) ClearFaults() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.faults = [stitch.NumCallKinds][]fault{}
}

// SetCapacity changes the physical capacity; memory already created stays.
func (d *Driver) SetCapacity(bytes uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.capacity = bytes
}

// CompleteEvents marks every event recorded so far as done.
func (d *Driver) CompleteEvents() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, ev := range d.events {
		ev.done = true
	}
}

// CompleteEvent marks e done, and with it every event recorded before it on its stream: a stream
// runs its work in order. It fails with ErrNotFound for an event the driver does not hold.
func (d *Driver) CompleteEvent(e stitch.Event) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	ev, ok := d.events[e]
	if !ok {
		return fmt.Errorf("%w: event %d", ErrNotFound, e)
	}
	d.completeThrough(e, ev.stream)
	return nil
}

// CompleteStream marks every event recorded so far on stream s done.
func (d *Driver) CompleteStream(s stitch.Stream) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, ev := range d.events {
		if ev.stream == s {
			ev.done = true
		}
	}
}

// completeThrough marks done e and every earlier event of stream s. The caller holds d.mu.
func (d *Driver) completeThrough(e stitch.Event, s stitch.Stream) {
	for id, ev := range d.events {
		if ev.stream == s && id <= e {
			ev.done = true
		}
	}
}

// Events lists the events the driver holds, oldest first.
func (d *Driver) Events() []EventState {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]EventState, 0, len(d.events))
	for id, ev := range d.events {
		out = append(out, EventState{Event: id, Stream: ev.stream, Done: ev.done})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Event < out[j].Event })
	return out
}

// Calls returns how many times each method was called (failed calls included).
func (d *Driver) Calls() [stitch.NumCallKinds]uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls
}

// TotalCalls returns the number of calls of every kind together.
func (d *Driver) TotalCalls() uint64 {
	var n uint64
	for _, c := range d.Calls() {
		n += c
	}
	return n
}

// Live returns the objects the driver holds now.
func (d *Driver) Live() Live {
	d.mu.Lock()
	defer d.mu.Unlock()
	return Live{Handles: len(d.handles), Ranges: len(d.ranges), Mappings: d.mappings,
		Events: len(d.events), PhysicalBytes: d.physical, VirtualBytes: d.virtual}
}

// call counts a call of kind and returns the injected fault due now, if any.
func (d *Driver) call(kind stitch.CallKind) error {
	d.calls[kind]++
	fs := d.faults[kind]
	for i, f := range fs {
		if f.at == d.calls[kind] {
			d.faults[kind] = append(fs[:i:i], fs[i+1:]...)
			return fmt.Errorf("%s call %d: %w", kind, f.at, f.err)
		}
	}
	return nil
}

func (d *Driver) aligned(v uint64) bool { return v%d.granularity == 0 }

// Granularity implements stitch.Driver. It is not counted as a call: it is a constant.
func (d *Driver) Granularity() uint64 { return d.granularity }

// Create implements stitch.Driver.
func (d *Driver) Create(size uint64) (stitch.PhysHandle, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.call(stitch.CallCreate); err != nil {
		return 0, err
	}
	if size == 0 || !d.aligned(size) {
		return 0, fmt.Errorf("%w: create %d bytes", ErrInvalid, size)
	}
	if d.physical+size > d.capacity {
		return 0, fmt.Errorf("sim: create %d bytes with %d of %d in use: %w",
			size, d.physical, d.capacity, stitch.ErrOutOfMemory)
	}
	d.nextHandle++
	d.handles[d.nextHandle] = &handle{size: size}
	d.physical += size
	return d.nextHandle, nil
}

// Release implements stitch.Driver.
func (d *Driver) Release(h stitch.PhysHandle) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.call(stitch.CallRelease); err != nil {
		return err
	}
	ph, ok := d.handles[h]
	if !ok {
		return fmt.Errorf("%w: release handle %d", ErrNotFound, h)
	}
	if ph.mapped > 0 {
		return fmt.Errorf("%w: release handle %d mapped %d times", ErrBusy, h, ph.mapped)
	}
	delete(d.handles, h)
	d.physical -= ph.size
	return nil
}

// Reserve implements stitch.Driver.
func (d *Driver) Reserve(size uint64) (uintptr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.call(stitch.CallReserve); err != nil {
		return 0, err
	}
	if size == 0 || !d.aligned(size) {
		return 0, fmt.Errorf("%w: reserve %d bytes", ErrInvalid, size)
	}
	r := &vrange{base: d.nextAddr, size: size}
	d.nextAddr += uintptr(size + d.granularity) // a gap, so that ranges never touch
	d.ranges = append(d.ranges, r)
	d.virtual += size
	return r.base, nil
}

// Free implements stitch.Driver.
func (d *Driver) Free(addr uintptr, size uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.call(stitch.CallFree); err != nil {
		return err
	}
	i := d.rangeIndex(addr)
	if i < 0 || d.ranges[i].base != addr {
		return fmt.Errorf("%w: free of %#x, not a reserved range", ErrNotFound, addr)
	}
	r := d.ranges[i]
	if r.size != size {
		return fmt.Errorf("%w: free of %#x with size %d, reserved %d", ErrInvalid, addr, size, r.size)
	}
	if r.maps.Len() > 0 {
		return fmt.Errorf("%w: free of %#x with %d mappings", ErrBusy, addr, r.maps.Len())
	}
	d.ranges = append(d.ranges[:i], d.ranges[i+1:]...)
	d.virtual -= size
	return nil
}

// rangeIndex returns the index of the reserved range holding addr, or -1.
func (d *Driver) rangeIndex(addr uintptr) int {
	i := sort.Search(len(d.ranges), func(i int) bool { return d.ranges[i].base > addr }) - 1
	if i < 0 || addr >= d.ranges[i].base+uintptr(d.ranges[i].size) {
		return -1
	}
	return i
}

// span finds the reserved range holding [addr, addr+size) and the offset of addr in it.
func (d *Driver) span(op string, addr uintptr, size uint64) (*vrange, uint64, error) {
	if size == 0 || !d.aligned(size) || !d.aligned(uint64(addr)) {
		return nil, 0, fmt.Errorf("%w: %s [%#x, +%d)", ErrInvalid, op, addr, size)
	}
	i := d.rangeIndex(addr)
	if i < 0 {
		return nil, 0, fmt.Errorf("%w: %s at %#x", ErrOutOfRange, op, addr)
	}
	r := d.ranges[i]
	off := uint64(addr - r.base)
	if off+size > r.size {
		return nil, 0, fmt.Errorf("%w: %s [%#x, +%d) past the end of [%#x, +%d)", ErrOutOfRange, op, addr, size, r.base, r.size)
	}
	return r, off, nil
}

// Map implements stitch.Driver.
func (d *Driver) Map(addr uintptr, size uint64, h stitch.PhysHandle, offset uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.call(stitch.CallMap); err != nil {
		return err
	}
	r, off, err := d.span("map", addr, size)
	if err != nil {
		return err
	}
	ph, ok := d.handles[h]
	if !ok {
		return fmt.Errorf("%w: map of handle %d", ErrNotFound, h)
	}
	if offset != 0 || size != ph.size {
		// As cuMemMap: a handle is mapped whole, from its offset 0 (CUDA error 801 otherwise).
		return fmt.Errorf("%w: map [%d, +%d) of a %d-byte handle: a handle maps only whole", ErrInvalid, offset, size, ph.size)
	}
	if c := r.maps.Floor(off + size - 1); c.Valid() && c.Value().off+c.Value().size > off {
		return fmt.Errorf("%w: map [%#x, +%d)", ErrOverlap, addr, size)
	}
	r.maps.Insert(off, mapping{off: off, size: size, h: h, hoff: offset})
	ph.mapped++
	d.mappings++
	return nil
}

// covered returns the mappings that exactly tile [off, off+size), or an error.
func (r *vrange) covered(op string, off, size uint64) ([]mapping, error) {
	var ms []mapping
	at := off
	for c := r.maps.Get(off); c.Valid() && at < off+size; c = c.Next() {
		m := c.Value()
		if m.off != at {
			break
		}
		ms = append(ms, *m)
		at += m.size
	}
	if at != off+size || len(ms) == 0 {
		return nil, fmt.Errorf("%w: %s [%#x, +%d) does not cover whole mappings", ErrNotMapped, op, r.base+uintptr(off), size)
	}
	return ms, nil
}

// first returns the cursor at the mapping that holds off or, if none does, the first after it.
func (r *vrange) first(off uint64) btree.Cursor[mapping] {
	if c := r.maps.Floor(off); c.Valid() && c.Value().off+c.Value().size > off {
		return c
	}
	return r.maps.Ceil(off)
}

// Unmap implements stitch.Driver.
func (d *Driver) Unmap(addr uintptr, size uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.call(stitch.CallUnmap); err != nil {
		return err
	}
	r, off, err := d.span("unmap", addr, size)
	if err != nil {
		return err
	}
	ms, err := r.covered("unmap", off, size)
	if err != nil {
		return err
	}
	for _, m := range ms {
		d.handles[m.h].mapped--
		r.maps.Delete(m.off)
	}
	d.mappings -= len(ms)
	return nil
}

// SetAccess implements stitch.Driver. The range must be mapped (it may span several mappings).
func (d *Driver) SetAccess(addr uintptr, size uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.call(stitch.CallSetAccess); err != nil {
		return err
	}
	r, off, err := d.span("set access", addr, size)
	if err != nil {
		return err
	}
	// Access may be set over part of a mapping, so check coverage byte-range-wise.
	at := off
	for c := r.first(off); c.Valid() && at < off+size; c = c.Next() {
		m := c.Value()
		if m.off > at {
			break
		}
		m.access = true
		at = m.off + m.size
	}
	if at < off+size {
		return fmt.Errorf("%w: set access [%#x, +%d)", ErrNotMapped, addr, size)
	}
	return nil
}

// Accessible reports whether every byte of [addr, addr+size) is mapped with access set.
func (d *Driver) Accessible(addr uintptr, size uint64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	i := d.rangeIndex(addr)
	if i < 0 {
		return false
	}
	r := d.ranges[i]
	off := uint64(addr - r.base)
	at := off
	for c := r.first(off); c.Valid() && at < off+size; c = c.Next() {
		m := c.Value()
		if m.off > at || !m.access {
			return false
		}
		at = m.off + m.size
	}
	return at >= off+size
}

// RecordEvent implements stitch.Driver.
func (d *Driver) RecordEvent(s stitch.Stream) (stitch.Event, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.call(stitch.CallRecordEvent); err != nil {
		return 0, err
	}
	d.nextEvent++
	ev := &event{stream: s}
	if d.latency > 0 {
		ev.recorded = d.now()
	}
	d.events[d.nextEvent] = ev
	return d.nextEvent, nil
}

// EventDone implements stitch.Driver.
func (d *Driver) EventDone(e stitch.Event) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.call(stitch.CallEventDone); err != nil {
		return false, err
	}
	ev, ok := d.events[e]
	if !ok {
		return false, fmt.Errorf("%w: event %d", ErrNotFound, e)
	}
	switch {
	case ev.done:
	case d.manual:
	case d.latency > 0:
		ev.done = d.now().Sub(ev.recorded) >= d.latency
	default:
		ev.done = ev.queries >= d.eventDelay
	}
	ev.queries++
	if ev.done {
		d.completeThrough(e, ev.stream) // what ran before it on its stream is done too
	}
	return ev.done, nil
}

// DestroyEvent implements stitch.Driver.
func (d *Driver) DestroyEvent(e stitch.Event) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.call(stitch.CallDestroyEvent); err != nil {
		return err
	}
	if _, ok := d.events[e]; !ok {
		return fmt.Errorf("%w: event %d", ErrNotFound, e)
	}
	delete(d.events, e)
	return nil
}

// Synchronize implements stitch.Driver: every event recorded so far completes.
func (d *Driver) Synchronize() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.call(stitch.CallSynchronize); err != nil {
		return err
	}
	for _, ev := range d.events {
		ev.done = true
	}
	return nil
}

// MemInfo implements stitch.Driver.
func (d *Driver) MemInfo() (free, total uint64, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.call(stitch.CallMemInfo); err != nil {
		return 0, 0, err
	}
	if d.physical > d.capacity {
		return 0, d.capacity, nil
	}
	return d.capacity - d.physical, d.capacity, nil
}

// PhysRange is a byte range of one physical allocation.
type PhysRange struct {
	Handle stitch.PhysHandle
	Offset uint64
	Size   uint64
}

// Resolve returns the physical bytes behind [addr, addr+size), in order, or an error if any byte is
// not mapped with access set. Tests use it to prove that live blocks never share physical bytes.
func (d *Driver) Resolve(addr uintptr, size uint64) ([]PhysRange, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	i := d.rangeIndex(addr)
	if i < 0 {
		return nil, fmt.Errorf("%w: resolve %#x", ErrOutOfRange, addr)
	}
	r := d.ranges[i]
	off, end := uint64(addr-r.base), uint64(addr-r.base)+size
	if end > r.size {
		return nil, fmt.Errorf("%w: resolve [%#x, +%d) past its range", ErrOutOfRange, addr, size)
	}
	var out []PhysRange
	at := off
	for c := r.first(off); c.Valid() && at < end; c = c.Next() {
		m := c.Value()
		if m.off > at || !m.access {
			break
		}
		n := min(end, m.off+m.size) - at
		pr := PhysRange{Handle: m.h, Offset: m.hoff + at - m.off, Size: n}
		if k := len(out) - 1; k >= 0 && out[k].Handle == pr.Handle && out[k].Offset+out[k].Size == pr.Offset {
			out[k].Size += n
		} else {
			out = append(out, pr)
		}
		at += n
	}
	if at < end {
		return nil, fmt.Errorf("%w: byte %#x not mapped with access", ErrNotMapped, r.base+uintptr(at))
	}
	return out, nil
}
