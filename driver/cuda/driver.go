package cuda

import (
	"fmt"
	"log/slog"
	"math/bits"

	"github.com/gmlake/gmlake/internal/libcuda"
	"github.com/gmlake/gmlake/stitch"
)

// Driver is a stitch.Driver over one CUDA device's virtual memory management API, in the device's
// primary context. It is not safe for concurrent use (the engine serialises its calls).
type Driver struct {
	ctx         libcuda.Context // the device's primary context, retained by New, released by Close
	ordinal     int
	name        string
	totalMem    uint64
	granularity uint64
	syncUnmap   bool
	idleEvents  []uintptr // recorded-and-done events kept for reuse; cuEventCreate is not free
	maxIdle     int
	closed      bool
	log         *slog.Logger

	// phys holds, for each PhysHandle given out by Create, its one CUDA handle and size: every VMM
	// call costs per handle it touches, so a PhysHandle is one CUDA allocation of the size asked.
	// cuMemMap maps a CUDA handle only whole and from offset 0 (CUDA_ERROR_NOT_SUPPORTED
	// otherwise), and so does Map.
	phys       map[stitch.PhysHandle]physAlloc
	nextHandle stitch.PhysHandle
}

// physAlloc is one CUDA physical allocation.
type physAlloc struct {
	handle uint64
	size   uint64
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
	name, total, vmm, err := deviceInfo(cfg.ordinal)
	if err != nil {
		return nil, fmt.Errorf("device %d: %w", cfg.ordinal, err)
	}
	if vmm == 0 {
		return nil, fmt.Errorf("%w: device %d (%s) lacks virtual memory management", ErrUnavailable, cfg.ordinal, name)
	}
	d := &Driver{
		ordinal:   cfg.ordinal,
		name:      name,
		totalMem:  total,
		syncUnmap: cfg.syncUnmap,
		maxIdle:   cfg.maxIdleEvents,
		log:       cfg.logger,
		phys:      make(map[stitch.PhysHandle]physAlloc),
	}
	ctx, r := libcuda.PrimaryCtxRetain(cfg.ordinal)
	if err := check("cuDevicePrimaryCtxRetain", r); err != nil {
		return nil, err
	}
	d.ctx = ctx
	gran, err := d.pickGranularity(cfg.granularity)
	if err != nil {
		libcuda.PrimaryCtxRelease(d.ordinal)
		return nil, err
	}
	d.granularity = gran
	d.log.Info("cuda driver ready", "device", d.ordinal, "name", d.name, "total", d.totalMem, "granularity", gran)
	return d, nil
}

// deviceInfo is the name, memory and VMM support (1 or 0) of device ordinal.
func deviceInfo(ordinal int) (name string, total uint64, vmm int, err error) {
	dev, r := libcuda.DeviceGet(ordinal)
	if r == libcuda.Success {
		name, r = libcuda.DeviceGetName(dev)
	}
	if r == libcuda.Success {
		total, r = libcuda.DeviceTotalMem(dev)
	}
	if r == libcuda.Success {
		vmm, r = libcuda.DeviceGetAttribute(libcuda.AttrVirtualMemoryManagement, dev)
	}
	return name, total, vmm, check("cuDeviceGet", r)
}

// in runs f with the Driver's context current on the calling thread (see doc.go).
func (d *Driver) in(f func() libcuda.Result) libcuda.Result { return libcuda.In(d.ctx, f) }

func (d *Driver) pickGranularity(want uint64) (uint64, error) {
	var minimum, recommended uint64
	prop := libcuda.PinnedOn(d.ordinal)
	r := d.in(func() (r libcuda.Result) {
		if minimum, r = libcuda.MemGetAllocationGranularity(&prop, libcuda.GranularityMinimum); r != libcuda.Success {
			return r
		}
		recommended, r = libcuda.MemGetAllocationGranularity(&prop, libcuda.GranularityRecommended)
		return r
	})
	if err := check("cuMemGetAllocationGranularity", r); err != nil {
		return 0, err
	}
	if want == 0 {
		return recommended, nil
	}
	if bits.OnesCount64(want) != 1 || want%minimum != 0 {
		return 0, fmt.Errorf("%w: %d bytes asked, device minimum %d", ErrGranularity, want, minimum)
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
		if err := check("cuEventDestroy", d.in(func() libcuda.Result { return libcuda.EventDestroy(ev) })); err != nil && first == nil {
			first = err
		}
	}
	d.idleEvents = nil
	if err := check("cuDevicePrimaryCtxRelease", libcuda.PrimaryCtxRelease(d.ordinal)); err != nil && first == nil {
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

// Context is the device's primary CUcontext, for libraries that need it current (dataparallel/nccl's
// InitRank).
func (d *Driver) Context() uintptr { return uintptr(d.ctx) }

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

// Create allocates size bytes of device memory with one cuMemCreate: one handle, whatever its
// size. Out of memory wraps stitch.ErrOutOfMemory; nothing is left allocated on failure.
func (d *Driver) Create(size uint64) (stitch.PhysHandle, error) {
	if err := d.aligned("cuMemCreate", size); err != nil {
		return 0, err
	}
	if size == 0 {
		return 0, fmt.Errorf("cuMemCreate: %w: 0", ErrGranularity)
	}
	prop := libcuda.PinnedOn(d.ordinal)
	var h uint64
	r := d.in(func() (r libcuda.Result) {
		h, r = libcuda.MemCreate(size, &prop)
		return r
	})
	if err := check("cuMemCreate", r); err != nil {
		return 0, fmt.Errorf("%d bytes: %w", size, err)
	}
	d.nextHandle++
	d.phys[d.nextHandle] = physAlloc{handle: h, size: size}
	return d.nextHandle, nil
}

// Release frees physical memory with cuMemRelease. The device memory goes back once no mapping
// uses it any more.
func (d *Driver) Release(h stitch.PhysHandle) error {
	if d.closed {
		return ErrClosed
	}
	p, ok := d.phys[h]
	if !ok {
		return fmt.Errorf("cuMemRelease: %w: %d", ErrUnknownHandle, h)
	}
	delete(d.phys, h)
	return check("cuMemRelease", d.in(func() libcuda.Result { return libcuda.MemRelease(p.handle) }))
}

// Reserve reserves a virtual range aligned to the granularity with cuMemAddressReserve.
func (d *Driver) Reserve(size uint64) (uintptr, error) {
	if err := d.aligned("cuMemAddressReserve", size); err != nil {
		return 0, err
	}
	var addr uint64
	r := d.in(func() (r libcuda.Result) {
		addr, r = libcuda.MemAddressReserve(size, d.granularity)
		return r
	})
	if err := check("cuMemAddressReserve", r); err != nil {
		return 0, err
	}
	return uintptr(addr), nil
}

// Free returns a virtual range with cuMemAddressFree.
func (d *Driver) Free(addr uintptr, size uint64) error {
	if err := d.aligned("cuMemAddressFree", size); err != nil {
		return err
	}
	return check("cuMemAddressFree", d.in(func() libcuda.Result { return libcuda.MemAddressFree(uint64(addr), size) }))
}

// Map maps h whole at addr with one cuMemMap: offset must be 0 and size the handle's (the driver
// maps a handle only whole, from its start). The range is not accessible until SetAccess.
func (d *Driver) Map(addr uintptr, size uint64, h stitch.PhysHandle, offset uint64) error {
	if err := d.aligned("cuMemMap", size, offset); err != nil {
		return err
	}
	p, ok := d.phys[h]
	if !ok {
		return fmt.Errorf("cuMemMap: %w: %d", ErrUnknownHandle, h)
	}
	if offset != 0 || size != p.size {
		return fmt.Errorf("cuMemMap: %w: [%d, %d) of a %d-byte allocation", ErrOutOfRange, offset, offset+size, p.size)
	}
	return check("cuMemMap", d.in(func() libcuda.Result { return libcuda.MemMap(uint64(addr), size, 0, p.handle) }))
}

// Unmap unmaps [addr, addr+size), whole mappings of one or more handles, with one cuMemUnmap,
// after waiting for the context's queued work unless WithUnmapSync(false) was given.
func (d *Driver) Unmap(addr uintptr, size uint64) error {
	if err := d.aligned("cuMemUnmap", size); err != nil {
		return err
	}
	var synced error
	r := d.in(func() libcuda.Result {
		if d.syncUnmap {
			if r := libcuda.CtxSynchronize(); r != libcuda.Success {
				synced = check("cuCtxSynchronize", r)
				return libcuda.Success
			}
		}
		return libcuda.MemUnmap(uint64(addr), size)
	})
	if synced != nil {
		return fmt.Errorf("cuMemUnmap: waiting for queued work: %w", synced)
	}
	return check("cuMemUnmap", r)
}

// SetAccess makes [addr, addr+size) readable and writable from the device with one cuMemSetAccess.
func (d *Driver) SetAccess(addr uintptr, size uint64) error {
	if err := d.aligned("cuMemSetAccess", size); err != nil {
		return err
	}
	access := libcuda.ReadWriteOn(d.ordinal)
	return check("cuMemSetAccess", d.in(func() libcuda.Result { return libcuda.MemSetAccess(uint64(addr), size, &access) }))
}

// RecordEvent records an event on stream s (a CUstream; 0 is the legacy default stream), reusing
// an idle event when one is kept.
func (d *Driver) RecordEvent(s stitch.Stream) (stitch.Event, error) {
	if d.closed {
		return 0, ErrClosed
	}
	var ev uintptr
	if n := len(d.idleEvents); n > 0 {
		ev = d.idleEvents[n-1]
		d.idleEvents = d.idleEvents[:n-1]
	}
	call := "cuEventRecord"
	r := d.in(func() (r libcuda.Result) {
		if ev == 0 {
			if ev, r = libcuda.EventCreate(libcuda.EventDisableTiming); r != libcuda.Success {
				call = "cuEventCreate"
				return r
			}
		}
		if r = libcuda.EventRecord(ev, uintptr(s)); r != libcuda.Success {
			libcuda.EventDestroy(ev)
		}
		return r
	})
	if err := check(call, r); err != nil {
		return 0, err
	}
	return stitch.Event(ev), nil
}

// EventDone reports whether the work before e has completed, with cuEventQuery.
func (d *Driver) EventDone(e stitch.Event) (bool, error) {
	if d.closed {
		return false, ErrClosed
	}
	switch r := d.in(func() libcuda.Result { return libcuda.EventQuery(uintptr(e)) }); r {
	case libcuda.Success:
		return true, nil
	case libcuda.NotReady:
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
	keep := false
	r := d.in(func() libcuda.Result {
		if len(d.idleEvents) < d.maxIdle && libcuda.EventQuery(uintptr(e)) == libcuda.Success {
			keep = true
			return libcuda.Success
		}
		return libcuda.EventDestroy(uintptr(e))
	})
	if keep {
		d.idleEvents = append(d.idleEvents, uintptr(e))
	}
	return check("cuEventDestroy", r)
}

// Synchronize waits for all work queued in the context, with cuCtxSynchronize.
func (d *Driver) Synchronize() error {
	if d.closed {
		return ErrClosed
	}
	return check("cuCtxSynchronize", d.in(libcuda.CtxSynchronize))
}

// MemInfo returns the device's free and total memory, with cuMemGetInfo.
func (d *Driver) MemInfo() (free, total uint64, err error) {
	if d.closed {
		return 0, 0, ErrClosed
	}
	r := d.in(func() (r libcuda.Result) {
		free, total, r = libcuda.MemGetInfo()
		return r
	})
	if err := check("cuMemGetInfo", r); err != nil {
		return 0, 0, err
	}
	return free, total, nil
}
