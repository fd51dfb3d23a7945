package bench

import "github.com/gmlake/gmlake/stitch"

// meteredDriver passes every call on to a stitch.Driver and records the successful ones, with the
// bytes they cover, in a DriverLedger. The engine counts calls itself (stitch.Stats.DriverCalls);
// this adds the bytes, which the costs depend on. Release takes a handle, not a size, so the sizes
// of live handles are kept.
type meteredDriver struct {
	stitch.Driver
	ledger  *DriverLedger
	handles map[stitch.PhysHandle]uint64 // size of each handle created and not released
}

func newMeteredDriver(d stitch.Driver, m CostModel) *meteredDriver {
	return &meteredDriver{Driver: d, ledger: newDriverLedger(m), handles: make(map[stitch.PhysHandle]uint64)}
}

// Create implements stitch.Driver.
func (d *meteredDriver) Create(size uint64) (stitch.PhysHandle, error) {
	h, err := d.Driver.Create(size)
	if err == nil {
		d.handles[h] = size
		d.ledger.vmm(stitch.CallCreate, size)
	}
	return h, err
}

// Release implements stitch.Driver.
func (d *meteredDriver) Release(h stitch.PhysHandle) error {
	err := d.Driver.Release(h)
	if err == nil {
		d.ledger.vmm(stitch.CallRelease, d.handles[h])
		delete(d.handles, h)
	}
	return err
}

// Reserve implements stitch.Driver.
func (d *meteredDriver) Reserve(size uint64) (uintptr, error) {
	addr, err := d.Driver.Reserve(size)
	if err == nil {
		d.ledger.vmm(stitch.CallReserve, size)
	}
	return addr, err
}

// Free implements stitch.Driver.
func (d *meteredDriver) Free(addr uintptr, size uint64) error {
	return d.meter(stitch.CallFree, size, d.Driver.Free(addr, size))
}

// Map implements stitch.Driver.
func (d *meteredDriver) Map(addr uintptr, size uint64, h stitch.PhysHandle, offset uint64) error {
	return d.meter(stitch.CallMap, size, d.Driver.Map(addr, size, h, offset))
}

// Unmap implements stitch.Driver.
func (d *meteredDriver) Unmap(addr uintptr, size uint64) error {
	return d.meter(stitch.CallUnmap, size, d.Driver.Unmap(addr, size))
}

// SetAccess implements stitch.Driver.
func (d *meteredDriver) SetAccess(addr uintptr, size uint64) error {
	return d.meter(stitch.CallSetAccess, size, d.Driver.SetAccess(addr, size))
}

// RecordEvent implements stitch.Driver.
func (d *meteredDriver) RecordEvent(s stitch.Stream) (stitch.Event, error) {
	ev, err := d.Driver.RecordEvent(s)
	return ev, d.meter(stitch.CallRecordEvent, 0, err)
}

// EventDone implements stitch.Driver.
func (d *meteredDriver) EventDone(e stitch.Event) (bool, error) {
	done, err := d.Driver.EventDone(e)
	return done, d.meter(stitch.CallEventDone, 0, err)
}

// DestroyEvent implements stitch.Driver.
func (d *meteredDriver) DestroyEvent(e stitch.Event) error {
	return d.meter(stitch.CallDestroyEvent, 0, d.Driver.DestroyEvent(e))
}

// Synchronize implements stitch.Driver.
func (d *meteredDriver) Synchronize() error {
	return d.meter(stitch.CallSynchronize, 0, d.Driver.Synchronize())
}

// MemInfo implements stitch.Driver.
func (d *meteredDriver) MemInfo() (free, total uint64, err error) {
	free, total, err = d.Driver.MemInfo()
	return free, total, d.meter(stitch.CallMemInfo, 0, err)
}

// meter records a call of kind over bytes when err is nil, and returns err.
func (d *meteredDriver) meter(kind stitch.CallKind, bytes uint64, err error) error {
	if err == nil {
		d.ledger.vmm(kind, bytes)
	}
	return err
}
