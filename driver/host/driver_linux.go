package host

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/gmlake/gmlake/stitch"
)

// Driver is a stitch.Driver over real host memory: one memfd for physical memory, PROT_NONE
// reservations for virtual ranges. See the package documentation.
type Driver struct {
	granularity  uint64
	capacity     uint64
	strictAccess bool
	log          *slog.Logger

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
	events     map[stitch.Event]struct{}
	nextEvent  stitch.Event
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
		ram, err := physicalRAM()
		if err != nil {
			return nil, fmt.Errorf("host driver: sysinfo: %w", err)
		}
		capacity = ram
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
		log:          cfg.logger,
		fd:           fd,
		regions:      make(map[stitch.PhysHandle]*region),
		nextHandle:   1,
		ranges:       make(map[uintptr]*vrange),
		events:       make(map[stitch.Event]struct{}),
		nextEvent:    1,
	}, nil
}

// Granularity is the unit of physical allocation and mapping.
func (d *Driver) Granularity() uint64 { return d.granularity }

// HostAccessible reports that mapped memory is ordinary process memory, readable and writable by Go
// code once SetAccess has been called (memory.TensorEngine requires a driver that says so).
func (d *Driver) HostAccessible() bool { return true }

// Capacity is the most physical memory the driver hands out at once.
func (d *Driver) Capacity() uint64 { return d.capacity }

// MemInfo reports the capacity not handed out by Create as free, and the capacity as total.
func (d *Driver) MemInfo() (free, total uint64, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return 0, 0, fmt.Errorf("mem_info: %w", ErrClosed)
	}
	return d.capacity - d.file.inUse, d.capacity, nil
}

// RecordEvent returns an event that is already complete: host work is synchronous.
func (d *Driver) RecordEvent(stitch.Stream) (stitch.Event, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return 0, fmt.Errorf("record_event: %w", ErrClosed)
	}
	e := d.nextEvent
	d.nextEvent++
	d.events[e] = struct{}{}
	return e, nil
}

// EventDone reports true for every live event.
func (d *Driver) EventDone(e stitch.Event) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false, fmt.Errorf("event_done: %w", ErrClosed)
	}
	if _, ok := d.events[e]; !ok {
		return false, fmt.Errorf("event_done %d: %w", e, ErrUnknownEvent)
	}
	return true, nil
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

// Synchronize returns at once: there is no queued host work.
func (d *Driver) Synchronize() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("synchronize: %w", ErrClosed)
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
