//go:build cuda || gmlakegpu

package cuda

// #include <stdlib.h>
// #include "libcuda.h"
import "C"

import (
	"fmt"
	"log/slog"
	"math/bits"
	"unsafe"

	"github.com/gmlake/gmlake/stitch"
)

// Driver is a stitch.Driver over one CUDA device's virtual memory management API, in the device's
// primary context. It is not safe for concurrent use (the engine serialises its calls).
type Driver struct {
	ctx         C.CUcontext // the device's primary context, retained by New, released by Close
	ordinal     int
	name        string
	totalMem    uint64
	granularity uint64
	syncUnmap   bool
	idleEvents  []C.uintptr_t // recorded-and-done events kept for reuse; cuEventCreate is not free
	maxIdle     int
	closed      bool
	log         *slog.Logger

	// phys holds, for each PhysHandle given out by Create, the CUDA handles of its chunks, one per
	// granularity in order: cuMemMap maps a CUDA handle only from offset 0 (CUDA_ERROR_NOT_SUPPORTED
	// otherwise), so mapping part of a physical allocation means mapping some of its chunks.
	phys       map[stitch.PhysHandle][]C.uint64_t
	nextHandle stitch.PhysHandle
}

var _ stitch.Driver = (*Driver)(nil)

// New loads the driver library, retains device's primary context and checks that the device
// supports virtual memory management. Errors that mean "no usable GPU" wrap ErrUnavailable.
func New(opts ...Option) (*Driver, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := loadLibrary(cfg.library); err != nil {
		return nil, err
	}
	var (
		name  [256]C.char
		total C.size_t
		vmm   C.int
	)
	if err := check("cuDeviceGet", C.gm_device_info(C.int(cfg.ordinal), &name[0], C.int(len(name)), &total, &vmm)); err != nil {
		return nil, fmt.Errorf("device %d: %w", cfg.ordinal, err)
	}
	if vmm == 0 {
		return nil, fmt.Errorf("%w: device %d (%s) lacks virtual memory management", ErrUnavailable, cfg.ordinal, C.GoString(&name[0]))
	}
	d := &Driver{
		ordinal:   cfg.ordinal,
		name:      C.GoString(&name[0]),
		totalMem:  uint64(total),
		syncUnmap: cfg.syncUnmap,
		maxIdle:   cfg.maxIdleEvents,
		log:       cfg.logger,
		phys:      make(map[stitch.PhysHandle][]C.uint64_t),
	}
	if err := check("cuDevicePrimaryCtxRetain", C.gm_primary_retain(C.int(cfg.ordinal), &d.ctx)); err != nil {
		return nil, err
	}
	gran, err := d.pickGranularity(cfg.granularity)
	if err != nil {
		C.gm_primary_release(C.int(d.ordinal))
		return nil, err
	}
	d.granularity = gran
	d.log.Info("cuda driver ready", "device", d.ordinal, "name", d.name, "total", d.totalMem, "granularity", gran)
	return d, nil
}

func (d *Driver) pickGranularity(want uint64) (uint64, error) {
	var minimum, recommended C.size_t
	if err := check("cuMemGetAllocationGranularity", C.gm_granularity(d.ctx, C.int(d.ordinal), 0, &minimum)); err != nil {
		return 0, err
	}
	if err := check("cuMemGetAllocationGranularity", C.gm_granularity(d.ctx, C.int(d.ordinal), 1, &recommended)); err != nil {
		return 0, err
	}
	if want == 0 {
		return uint64(recommended), nil
	}
	if bits.OnesCount64(want) != 1 || want%uint64(minimum) != 0 {
		return 0, fmt.Errorf("%w: %d bytes asked, device minimum %d", ErrGranularity, want, uint64(minimum))
	}
	return want, nil
}

// Close destroys the events kept for reuse and releases the primary context. Memory still mapped
// or created through the Driver is the caller's to release first (Engine.Close does).
func (d *Driver) Close() error {
	if d.closed {
		return nil
	}
	d.closed = true
	var first error
	for _, ev := range d.idleEvents {
		if err := check("cuEventDestroy", C.gm_event_destroy(d.ctx, ev)); err != nil && first == nil {
			first = err
		}
	}
	d.idleEvents = nil
	if err := check("cuDevicePrimaryCtxRelease", C.gm_primary_release(C.int(d.ordinal))); err != nil && first == nil {
		first = err
	}
	return first
}

// Ordinal is the device's ordinal.
func (d *Driver) Ordinal() int { return d.ordinal }

// Name is the device's name, as the driver reports it.
func (d *Driver) Name() string { return d.name }

// TotalMem is the device's memory in bytes.
func (d *Driver) TotalMem() uint64 { return d.totalMem }

// Context is the device's primary CUcontext, for libraries that need it current (dist/nccl's
// InitRank).
func (d *Driver) Context() uintptr { return uintptr(unsafe.Pointer(d.ctx)) }

// Granularity is the unit of physical memory and of mappings: every size given to Create,
// Reserve, Free, Map and Unmap is a multiple of it.
func (d *Driver) Granularity() uint64 { return d.granularity }

func (d *Driver) aligned(call string, sizes ...uint64) error {
	if d.closed {
		return ErrClosed
	}
	for _, s := range sizes {
		if s%d.granularity != 0 {
			return fmt.Errorf("%s: %w: %d (granularity %d)", call, ErrGranularity, s, d.granularity)
		}
	}
	return nil
}

// Create allocates size bytes of device memory: one cuMemCreate per granularity-sized chunk (see
// Driver.phys). Out of memory wraps stitch.ErrOutOfMemory; nothing is left allocated on failure.
func (d *Driver) Create(size uint64) (stitch.PhysHandle, error) {
	if err := d.aligned("cuMemCreate", size); err != nil {
		return 0, err
	}
	if size == 0 {
		return 0, fmt.Errorf("cuMemCreate: %w: 0", ErrGranularity)
	}
	// Creating chunk by chunk, a request the device cannot hold would create (and then release)
	// every chunk it can before failing: tens of thousands on an H200. Ask first.
	var free, total C.size_t
	if err := check("cuMemGetInfo", C.gm_mem_info(d.ctx, &free, &total)); err != nil {
		return 0, err
	}
	if size > uint64(free) {
		return 0, fmt.Errorf("cuMemCreate: %d bytes asked, %d of %d free: %w", size, uint64(free), uint64(total), stitch.ErrOutOfMemory)
	}
	chunks := make([]C.uint64_t, size/d.granularity)
	err := check("cuMemCreate", C.gm_create_chunks(d.ctx, C.int(d.ordinal), C.size_t(d.granularity), &chunks[0], C.size_t(len(chunks))))
	if err != nil {
		return 0, err
	}
	d.nextHandle++
	d.phys[d.nextHandle] = chunks
	return d.nextHandle, nil
}

// Release frees physical memory with cuMemRelease of each chunk. The device memory goes back once
// no mapping uses it any more.
func (d *Driver) Release(h stitch.PhysHandle) error {
	if d.closed {
		return ErrClosed
	}
	chunks, ok := d.phys[h]
	if !ok {
		return fmt.Errorf("cuMemRelease: %w: %d", ErrUnknownHandle, h)
	}
	delete(d.phys, h)
	return check("cuMemRelease", C.gm_release_chunks(d.ctx, &chunks[0], C.size_t(len(chunks))))
}

// Reserve reserves a virtual range aligned to the granularity with cuMemAddressReserve.
func (d *Driver) Reserve(size uint64) (uintptr, error) {
	if err := d.aligned("cuMemAddressReserve", size); err != nil {
		return 0, err
	}
	var addr C.uint64_t
	err := check("cuMemAddressReserve", C.gm_address_reserve(d.ctx, C.size_t(size), C.size_t(d.granularity), &addr))
	if err != nil {
		return 0, err
	}
	return uintptr(addr), nil
}

// Free returns a virtual range with cuMemAddressFree.
func (d *Driver) Free(addr uintptr, size uint64) error {
	if err := d.aligned("cuMemAddressFree", size); err != nil {
		return err
	}
	return check("cuMemAddressFree", C.gm_address_free(d.ctx, C.uint64_t(addr), C.size_t(size)))
}

// Map maps [offset, offset+size) of h at addr: one cuMemMap per chunk. The range is not
// accessible until SetAccess: the engine sets access once over a whole new mapping, never per
// chunk, since each chunk an access call covers costs ~27 µs on an H200 whatever the call's shape.
func (d *Driver) Map(addr uintptr, size uint64, h stitch.PhysHandle, offset uint64) error {
	if err := d.aligned("cuMemMap", size, offset); err != nil {
		return err
	}
	chunks, ok := d.phys[h]
	if !ok {
		return fmt.Errorf("cuMemMap: %w: %d", ErrUnknownHandle, h)
	}
	first, n := offset/d.granularity, size/d.granularity
	if n == 0 || first+n > uint64(len(chunks)) {
		return fmt.Errorf("cuMemMap: %w: [%d, %d) of a %d-byte allocation", ErrOutOfRange, offset, offset+size,
			uint64(len(chunks))*d.granularity)
	}
	return check("cuMemMap", C.gm_map_chunks(d.ctx, C.uint64_t(addr), C.size_t(d.granularity), &chunks[first], C.size_t(n)))
}

// Unmap unmaps [addr, addr+size) chunk by chunk with cuMemUnmap, after waiting for the context's
// queued work unless WithUnmapSync(false) was given.
func (d *Driver) Unmap(addr uintptr, size uint64) error {
	if err := d.aligned("cuMemUnmap", size); err != nil {
		return err
	}
	sync := C.int(0)
	if d.syncUnmap {
		sync = 1
	}
	return check("cuMemUnmap", C.gm_unmap_chunks(d.ctx, C.uint64_t(addr), C.size_t(d.granularity), C.size_t(size/d.granularity), sync))
}

// SetAccess makes [addr, addr+size) readable and writable from the device with one cuMemSetAccess.
func (d *Driver) SetAccess(addr uintptr, size uint64) error {
	if err := d.aligned("cuMemSetAccess", size); err != nil {
		return err
	}
	return check("cuMemSetAccess", C.gm_set_access(d.ctx, C.int(d.ordinal), C.uint64_t(addr), C.size_t(size)))
}

// RecordEvent records an event on stream s (a CUstream; 0 is the legacy default stream), reusing
// an idle event when one is kept.
func (d *Driver) RecordEvent(s stitch.Stream) (stitch.Event, error) {
	if d.closed {
		return 0, ErrClosed
	}
	var reuse C.uintptr_t
	if n := len(d.idleEvents); n > 0 {
		reuse = d.idleEvents[n-1]
		d.idleEvents = d.idleEvents[:n-1]
	}
	var ev C.uintptr_t
	if err := check("cuEventRecord", C.gm_event_record(d.ctx, reuse, C.uintptr_t(s), &ev)); err != nil {
		if ev != 0 {
			C.gm_event_destroy(d.ctx, ev)
		}
		return 0, err
	}
	return stitch.Event(ev), nil
}

// EventDone reports whether the work before e has completed, with cuEventQuery.
func (d *Driver) EventDone(e stitch.Event) (bool, error) {
	if d.closed {
		return false, ErrClosed
	}
	switch r := C.gm_event_query(d.ctx, C.uintptr_t(e)); r {
	case C.CUDA_SUCCESS:
		return true, nil
	case C.CUDA_ERROR_NOT_READY:
		return false, nil
	default:
		return false, check("cuEventQuery", r)
	}
}

// DestroyEvent hands e back. Completed events are kept (up to a bound) for the next RecordEvent;
// others are destroyed, which the driver defers until they complete.
func (d *Driver) DestroyEvent(e stitch.Event) error {
	if d.closed {
		return ErrClosed
	}
	if len(d.idleEvents) < d.maxIdle && C.gm_event_query(d.ctx, C.uintptr_t(e)) == C.CUDA_SUCCESS {
		d.idleEvents = append(d.idleEvents, C.uintptr_t(e))
		return nil
	}
	return check("cuEventDestroy", C.gm_event_destroy(d.ctx, C.uintptr_t(e)))
}

// Synchronize waits for all work queued in the context, with cuCtxSynchronize.
func (d *Driver) Synchronize() error {
	if d.closed {
		return ErrClosed
	}
	return check("cuCtxSynchronize", C.gm_ctx_synchronize(d.ctx))
}

// MemInfo returns the device's free and total memory, with cuMemGetInfo.
func (d *Driver) MemInfo() (free, total uint64, err error) {
	if d.closed {
		return 0, 0, ErrClosed
	}
	var f, t C.size_t
	if err := check("cuMemGetInfo", C.gm_mem_info(d.ctx, &f, &t)); err != nil {
		return 0, 0, err
	}
	return uint64(f), uint64(t), nil
}
