package reliability

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"

	"github.com/gmlake/gmlake/stitch"
)

// ErrUnmapped is returned by Resolve for bytes that no recorded mapping covers.
var ErrUnmapped = errors.New("reliability: address not mapped")

// PhysRange is a run of physical bytes: [Offset, Offset+Length) of allocation Handle.
type PhysRange struct {
	Handle stitch.PhysHandle
	Offset uint64
	Length uint64
}

// Tracker is a stitch.Driver that passes every call to another driver and records the reserved
// ranges and mappings that succeeded, so that Resolve can say which physical bytes an address range
// reaches. It is safe for concurrent use: Resolve may run while the engine calls the driver.
type Tracker struct {
	inner stitch.Driver
	guard *StreamGuard // told of events, synchronizes and releases; nil: none

	mu       sync.Mutex
	ranges   []*trackedRange // sorted by base
	failures []string        // failed calls since the last TakeFailures
}

type trackedRange struct {
	base uintptr
	size uint64
	maps []trackedMap // sorted by off, disjoint
}

type trackedMap struct {
	off, size uint64 // within the range
	h         stitch.PhysHandle
	hoff      uint64
}

var _ stitch.Driver = (*Tracker)(nil)

// NewTracker wraps d.
func NewTracker(d stitch.Driver) *Tracker { return &Tracker{inner: d} }

// Watch makes t tell g what the driver says of events, synchronizes and releases. Call it before
// the engine makes its first call.
func (t *Tracker) Watch(g *StreamGuard) { t.guard = g }

// Inner is the wrapped driver.
func (t *Tracker) Inner() stitch.Driver { return t.inner }

// Close closes the wrapped driver when it is an io.Closer.
func (t *Tracker) Close() error {
	if c, ok := t.inner.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// HostAccessible reports whether the wrapped driver's memory is host memory.
func (t *Tracker) HostAccessible() bool {
	h, ok := t.inner.(interface{ HostAccessible() bool })
	return ok && h.HostAccessible()
}

// Granularity implements stitch.Driver.
func (t *Tracker) Granularity() uint64 { return t.inner.Granularity() }

// Create implements stitch.Driver.
func (t *Tracker) Create(size uint64) (stitch.PhysHandle, error) {
	h, err := t.inner.Create(size)
	return h, t.failed(err)
}

// Release implements stitch.Driver.
func (t *Tracker) Release(h stitch.PhysHandle) error {
	if t.guard != nil {
		t.guard.Releasing(h)
	}
	if err := t.inner.Release(h); err != nil {
		return t.failed(err)
	}
	if t.guard != nil {
		t.guard.Released(h)
	}
	return nil
}

// Reserve implements stitch.Driver.
func (t *Tracker) Reserve(size uint64) (uintptr, error) {
	base, err := t.inner.Reserve(size)
	if err != nil {
		return base, t.failed(err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	i := sort.Search(len(t.ranges), func(i int) bool { return t.ranges[i].base > base })
	t.ranges = slices.Insert(t.ranges, i, &trackedRange{base: base, size: size})
	return base, nil
}

// Free implements stitch.Driver.
func (t *Tracker) Free(addr uintptr, size uint64) error {
	if err := t.inner.Free(addr, size); err != nil {
		return t.failed(err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if i := t.rangeIndex(addr); i >= 0 && t.ranges[i].base == addr {
		t.ranges = slices.Delete(t.ranges, i, i+1)
	}
	return nil
}

// Map implements stitch.Driver.
func (t *Tracker) Map(addr uintptr, size uint64, h stitch.PhysHandle, offset uint64) error {
	if err := t.inner.Map(addr, size, h, offset); err != nil {
		return t.failed(err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	i := t.rangeIndex(addr)
	if i < 0 {
		return nil // the driver accepted what it was never given by Reserve: Resolve will say so
	}
	r := t.ranges[i]
	off := uint64(addr - r.base)
	j := sort.Search(len(r.maps), func(j int) bool { return r.maps[j].off >= off })
	r.maps = slices.Insert(r.maps, j, trackedMap{off: off, size: size, h: h, hoff: offset})
	return nil
}

// Unmap implements stitch.Driver.
func (t *Tracker) Unmap(addr uintptr, size uint64) error {
	if err := t.inner.Unmap(addr, size); err != nil {
		return t.failed(err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if i := t.rangeIndex(addr); i >= 0 {
		r := t.ranges[i]
		lo, hi := uint64(addr-r.base), uint64(addr-r.base)+size
		r.maps = slices.DeleteFunc(r.maps, func(m trackedMap) bool { return m.off >= lo && m.off+m.size <= hi })
	}
	return nil
}

// SetAccess implements stitch.Driver.
func (t *Tracker) SetAccess(addr uintptr, size uint64) error {
	return t.failed(t.inner.SetAccess(addr, size))
}

// RecordEvent implements stitch.Driver.
func (t *Tracker) RecordEvent(s stitch.Stream) (stitch.Event, error) {
	e, err := t.inner.RecordEvent(s)
	if err == nil && t.guard != nil {
		t.guard.Recorded(e, s)
	}
	return e, t.failed(err)
}

// EventDone implements stitch.Driver.
func (t *Tracker) EventDone(e stitch.Event) (bool, error) {
	done, err := t.inner.EventDone(e)
	if err == nil && done && t.guard != nil {
		t.guard.Done(e)
	}
	return done, t.failed(err)
}

// DestroyEvent implements stitch.Driver.
func (t *Tracker) DestroyEvent(e stitch.Event) error {
	if err := t.inner.DestroyEvent(e); err != nil {
		return t.failed(err)
	}
	if t.guard != nil {
		t.guard.Destroyed(e)
	}
	return nil
}

// Synchronize implements stitch.Driver.
func (t *Tracker) Synchronize() error {
	if err := t.inner.Synchronize(); err != nil {
		return t.failed(err)
	}
	if t.guard != nil {
		t.guard.Synchronized()
	}
	return nil
}

// MemInfo implements stitch.Driver.
func (t *Tracker) MemInfo() (free, total uint64, err error) { return t.inner.MemInfo() }

// failed remembers a failed call for TakeFailures and returns err.
func (t *Tracker) failed(err error) error {
	if err != nil {
		t.mu.Lock()
		t.failures = append(t.failures, err.Error())
		t.mu.Unlock()
	}
	return err
}

// TakeFailures returns the errors of the driver calls that failed since the last call, and forgets them.
func (t *Tracker) TakeFailures() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.failures
	t.failures = nil
	return f
}

// Mappings is the number of mappings in place now.
func (t *Tracker) Mappings() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, r := range t.ranges {
		n += len(r.maps)
	}
	return n
}

// Resolve returns the physical ranges behind [addr, addr+size), in address order, merging runs
// that continue one another. Bytes that no mapping covers are an ErrUnmapped error.
func (t *Tracker) Resolve(addr uintptr, size uint64) ([]PhysRange, error) {
	return t.AppendResolve(nil, addr, size)
}

// AppendResolve is Resolve appending to dst.
func (t *Tracker) AppendResolve(dst []PhysRange, addr uintptr, size uint64) ([]PhysRange, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := t.rangeIndex(addr)
	if i < 0 {
		return dst, fmt.Errorf("%w: %#x is in no reserved range", ErrUnmapped, addr)
	}
	r := t.ranges[i]
	at, end := uint64(addr-r.base), uint64(addr-r.base)+size
	if end > r.size {
		return dst, fmt.Errorf("%w: [%#x, +%d) runs past its range [%#x, +%d)", ErrUnmapped, addr, size, r.base, r.size)
	}
	j := sort.Search(len(r.maps), func(j int) bool { return r.maps[j].off+r.maps[j].size > at })
	for ; at < end; j++ {
		if j >= len(r.maps) || r.maps[j].off > at {
			return dst, fmt.Errorf("%w: %#x (offset %d of range %#x)", ErrUnmapped, r.base+uintptr(at), at, r.base)
		}
		m := r.maps[j]
		n := min(end, m.off+m.size) - at
		p := PhysRange{Handle: m.h, Offset: m.hoff + at - m.off, Length: n}
		if k := len(dst) - 1; k >= 0 && dst[k].Handle == p.Handle && dst[k].Offset+dst[k].Length == p.Offset {
			dst[k].Length += n
		} else {
			dst = append(dst, p)
		}
		at += n
	}
	return dst, nil
}

// rangeIndex is the index of the range holding addr, or -1. The caller holds t.mu.
func (t *Tracker) rangeIndex(addr uintptr) int {
	i := sort.Search(len(t.ranges), func(i int) bool { return t.ranges[i].base > addr }) - 1
	if i < 0 || addr >= t.ranges[i].base+uintptr(t.ranges[i].size) {
		return -1
	}
	return i
}
