package host

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gmlake/gmlake/stitch"
)

// Driver is a stitch.Driver over real host memory: one memfd for physical memory, PROT_NONE
// reservations for virtual ranges. See the package documentation.
type Driver struct {
	granularity  uint64
	capacity     uint64
	strictAccess bool
	manualEvents bool
	eventLatency time.Duration
	log          *slog.Logger
	backing      func() (backing, error) // what the machine can back: machineBacking but in tests

	mu     sync.Mutex // guards everything below
	closed bool
	fd     int
	file   fileSpace
	// regions: live physical allocations by handle. Handles are never reused, so a stale handle is
	// always detected even when its file region has been handed out again.
	regions    map[stitch.PhysHandle]*region
	nextHandle stitch.PhysHandle
	// ranges: reserved virtual ranges by base address; rangeBases keeps the bases sorted for lookups
	// of interior addresses.
	ranges     map[uintptr]*vrange
	rangeBases []uintptr
	events     map[stitch.Event]*hostEvent
	nextEvent  stitch.Event
}

// hostEvent is a recorded event. Host work is synchronous, so an event is complete at once unless
// the driver was made to stand for a device with queued work (WithManualEvents, WithEventLatency).
type hostEvent struct {
	stream   stitch.Stream
	done     bool
	recorded time.Time
}

var _ stitch.Driver = (*Driver)(nil)

// memfdSerial numbers the memfds, so that each Driver's memory is told apart in /proc/self/maps.
var memfdSerial atomic.Uint64

// New creates a Driver. It fails with ErrBadOption when the granularity is not a power of two and a
// multiple of the page size, or the capacity is smaller than one granule.
func New(opts ...Option) (*Driver, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	page := uint64(unix.Getpagesize())
	g := cfg.granularity
	if g == 0 || g&(g-1) != 0 || g%page != 0 {
		return nil, fmt.Errorf("%w: granularity %d is not a power of two multiple of the page size %d",
			ErrBadOption, g, page)
	}
	capacity := cfg.capacity
	if capacity == 0 {
		b, err := machineBacking()
		if err != nil {
			return nil, err
		}
		capacity = b.total
	}
	capacity -= capacity % g
	if capacity == 0 {
		return nil, fmt.Errorf("%w: capacity %d is smaller than the granularity %d", ErrBadOption, cfg.capacity, g)
	}
	fd, err := unix.MemfdCreate(fmt.Sprintf("gmlake-host-%d", memfdSerial.Add(1)), unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("host driver: memfd_create: %w", err)
	}
	return &Driver{
		granularity:  g,
		capacity:     capacity,
		strictAccess: cfg.strictAccess,
		manualEvents: cfg.manualEvents,
		eventLatency: cfg.eventLatency,
		log:          cfg.logger,
		backing:      machineBacking,
		fd:           fd,
		regions:      make(map[stitch.PhysHandle]*region),
		nextHandle:   1,
		ranges:       make(map[uintptr]*vrange),
		events:       make(map[stitch.Event]*hostEvent),
		nextEvent:    1,
	}, nil
}

// Granularity is the unit of physical allocation and mapping.
func (d *Driver) Granularity() uint64 { return d.granularity }

// HostAccessible reports that mapped memory is ordinary process memory, readable and writable by Go
// code once SetAccess has been called (memory.TensorEngine requires a driver that says so).
func (d *Driver) HostAccessible() bool { return true }

// Capacity is the most physical memory the driver hands out at once (WithCapacity, or what the
// machine can hold at New); MemInfo and Create also heed what the machine can back now.
func (d *Driver) Capacity() uint64 { return d.capacity }

// MemInfo reports as total the capacity or what the machine (its cgroup limits included) can hold,
// whichever is less, and as free what Create would hand out now: the capacity not handed out, but
// no more than the machine can still back, less what was handed out and is not backed yet.
func (d *Driver) MemInfo() (free, total uint64, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return 0, 0, fmt.Errorf("mem_info: %w", ErrClosed)
	}
	b, free, err := d.room()
	if err != nil {
		return 0, 0, err
	}
	return free, min(d.capacity, b.total), nil
}

// room is the machine's backing and how many more bytes Create may hand out. The caller holds d.mu.
func (d *Driver) room() (backing, uint64, error) {
	b, err := d.backing()
	if err != nil {
		return backing{}, 0, err
	}
	free := d.capacity - d.file.inUse
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return backing{}, 0, fmt.Errorf("host driver: fstat memfd: %w", err)
	}
	// Handed out but never touched: the kernel does not count it yet, but will have to back it.
	unbacked := d.file.inUse - min(d.file.inUse, uint64(st.Blocks)*512)
	if b.available > unbacked {
		free = min(free, b.available-unbacked)
	} else {
		free = 0
	}
	return b, free - free%d.granularity, nil
}

// RecordEvent records an event on s. It is complete at once (host work is synchronous), unless
// WithManualEvents or WithEventLatency says otherwise.
func (d *Driver) RecordEvent(s stitch.Stream) (stitch.Event, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return 0, fmt.Errorf("record_event: %w", ErrClosed)
	}
	e := d.nextEvent
	d.nextEvent++
	d.events[e] = &hostEvent{stream: s, done: !d.manualEvents && d.eventLatency == 0, recorded: time.Now()}
	return e, nil
}

// EventDone reports whether e has completed: at once by default, once its latency has passed
// with WithEventLatency, when CompleteEvent or Synchronize says so with WithManualEvents. An
// event completes every earlier event of its stream.
func (d *Driver) EventDone(e stitch.Event) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false, fmt.Errorf("event_done: %w", ErrClosed)
	}
	ev, ok := d.events[e]
	if !ok {
		return false, fmt.Errorf("event_done %d: %w", e, ErrUnknownEvent)
	}
	if !ev.done && !d.manualEvents && time.Since(ev.recorded) >= d.eventLatency {
		d.completeThrough(e, ev.stream)
	}
	return ev.done, nil
}

// CompleteEvent completes e and every event recorded before it on its stream (WithManualEvents).
func (d *Driver) CompleteEvent(e stitch.Event) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("complete_event: %w", ErrClosed)
	}
	ev, ok := d.events[e]
	if !ok {
		return fmt.Errorf("complete_event %d: %w", e, ErrUnknownEvent)
	}
	d.completeThrough(e, ev.stream)
	return nil
}

// completeThrough completes e and the earlier events of stream s. The caller holds d.mu.
func (d *Driver) completeThrough(e stitch.Event, s stitch.Stream) {
	for id, ev := range d.events {
		if ev.stream == s && id <= e {
			ev.done = true
		}
	}
}

// DestroyEvent forgets e.
func (d *Driver) DestroyEvent(e stitch.Event) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("destroy_event: %w", ErrClosed)
	}
	if _, ok := d.events[e]; !ok {
		return fmt.Errorf("destroy_event %d: %w", e, ErrUnknownEvent)
	}
	delete(d.events, e)
	return nil
}

// Synchronize waits until every event recorded so far has completed (with WithEventLatency,
// until the newest one's latency has passed) and completes them all.
func (d *Driver) Synchronize() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("synchronize: %w", ErrClosed)
	}
	var last time.Time
	for _, ev := range d.events {
		if !ev.done && ev.recorded.After(last) {
			last = ev.recorded
		}
	}
	if wait := d.eventLatency - time.Since(last); !d.manualEvents && !last.IsZero() && wait > 0 {
		time.Sleep(wait)
	}
	for _, ev := range d.events {
		ev.done = true
	}
	return nil
}

// Close unmaps every reserved range, closes the memfd (which frees all physical memory) and makes
// every later call fail with ErrClosed. Closing twice returns ErrClosed.
func (d *Driver) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("close: %w", ErrClosed)
	}
	d.closed = true
	var errs []error
	for base, r := range d.ranges {
		if err := munmap(base, r.size); err != nil {
			errs = append(errs, fmt.Errorf("munmap %#x+%d: %w", base, r.size, err))
		}
	}
	if err := unix.Close(d.fd); err != nil {
		errs = append(errs, fmt.Errorf("close memfd: %w", err))
	}
	d.ranges, d.rangeBases, d.regions, d.events = nil, nil, nil, nil
	d.file = fileSpace{}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("host driver: close: %w", err)
	}
	return nil
}

// checkSize validates a size given to Create, Reserve, Map, Unmap, SetAccess or Free.
func (d *Driver) checkSize(size uint64) error {
	if size == 0 || size%d.granularity != 0 {
		return fmt.Errorf("%w: %d is not a positive multiple of the granularity %d", ErrInvalidSize, size, d.granularity)
	}
	return nil
}
