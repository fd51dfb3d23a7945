package bench

import (
	"time"

	"github.com/gmlake/gmlake/stitch"
	"github.com/google/btree"
)

// meteredDriver passes every call on to a stitch.Driver and records the successful ones in a
// DriverLedger: the bytes they cover, the handles they touch, and their cost under a CostModel,
// which is per handle. Release takes a handle, not a size, so the size of each live handle is
// kept; SetAccess and Unmap take a range, so every mapping (which handle is mapped where, from
// Map) is kept in address order, and a call over a range costs each mapping it covers. The
// wall time spent in the calls (the wrapped driver's and the metering's own) is booked too, so
// that a replay can tell the engine's own time from the driver's.
type meteredDriver struct {
	stitch.Driver
	ledger   *DriverLedger
	handles  map[stitch.PhysHandle]uint64 // size of each handle created and not released
	mappings *btree.BTreeG[mapping]       // live mappings by address
	pieces   []mapping                    // scratch for the mappings a range covers
	now      func() time.Time             // the clock of the wall time in calls
}

// mapping is one Map call's range: size bytes at addr, of one handle.
type mapping struct {
	addr uintptr
	size uint64
}

func (m mapping) end() uintptr { return m.addr + uintptr(m.size) }

func mappingLess(a, b mapping) bool { return a.addr < b.addr }

func newMeteredDriver(d stitch.Driver, m CostModel) *meteredDriver {
	return &meteredDriver{Driver: d, ledger: newDriverLedger(m), handles: make(map[stitch.PhysHandle]uint64),
		mappings: btree.NewG(16, mappingLess), now: time.Now}
}

// Create implements stitch.Driver.
func (d *meteredDriver) Create(size uint64) (stitch.PhysHandle, error) {
	start := d.now()
	h, err := d.Driver.Create(size)
	if err == nil {
		d.handles[h] = size
		d.ledger.vmm(stitch.CallCreate, size)
	}
	d.ledger.addWall(d.now().Sub(start))
	return h, err
}

// Release implements stitch.Driver.
func (d *meteredDriver) Release(h stitch.PhysHandle) error {
	start := d.now()
	err := d.Driver.Release(h)
	if err == nil {
		d.ledger.vmm(stitch.CallRelease, d.handles[h])
		delete(d.handles, h)
	}
	d.ledger.addWall(d.now().Sub(start))
	return err
}

// Reserve implements stitch.Driver.
func (d *meteredDriver) Reserve(size uint64) (uintptr, error) {
	start := d.now()
	addr, err := d.Driver.Reserve(size)
	if err == nil {
		d.ledger.vmm(stitch.CallReserve, size)
	}
	d.ledger.addWall(d.now().Sub(start))
	return addr, err
}

// Free implements stitch.Driver.
func (d *meteredDriver) Free(addr uintptr, size uint64) error {
	start := d.now()
	err := d.Driver.Free(addr, size)
	if err == nil {
		d.ledger.vmm(stitch.CallFree, size)
	}
	d.ledger.addWall(d.now().Sub(start))
	return err
}

// Map implements stitch.Driver: one handle, of which size bytes are mapped.
func (d *meteredDriver) Map(addr uintptr, size uint64, h stitch.PhysHandle, offset uint64) error {
	start := d.now()
	err := d.Driver.Map(addr, size, h, offset)
	if err == nil {
		d.mappings.ReplaceOrInsert(mapping{addr: addr, size: size})
		d.ledger.vmm(stitch.CallMap, size)
	}
	d.ledger.addWall(d.now().Sub(start))
	return err
}

// Unmap implements stitch.Driver: it costs every mapping in the range, and forgets them (the part
// in the range, for a mapping the range cuts, which the drivers refuse anyway).
func (d *meteredDriver) Unmap(addr uintptr, size uint64) error {
	start := d.now()
	err := d.Driver.Unmap(addr, size)
	if err == nil {
		d.ledger.vmmRange(stitch.CallUnmap, size, d.covered(addr, size))
		for _, m := range d.pieces {
			d.mappings.Delete(m)
			if m.addr < addr { // the part before the range stays mapped
				d.mappings.ReplaceOrInsert(mapping{addr: m.addr, size: uint64(addr - m.addr)})
			}
			if end := addr + uintptr(size); m.end() > end { // and the part after it
				d.mappings.ReplaceOrInsert(mapping{addr: end, size: uint64(m.end() - end)})
			}
		}
	}
	d.ledger.addWall(d.now().Sub(start))
	return err
}

// SetAccess implements stitch.Driver: it costs every mapping in the range.
func (d *meteredDriver) SetAccess(addr uintptr, size uint64) error {
	start := d.now()
	err := d.Driver.SetAccess(addr, size)
	if err == nil {
		d.ledger.vmmRange(stitch.CallSetAccess, size, d.covered(addr, size))
	}
	d.ledger.addWall(d.now().Sub(start))
	return err
}

// covered returns the bytes of each mapping that [addr, addr+size) covers, and leaves the
// mappings themselves in d.pieces.
func (d *meteredDriver) covered(addr uintptr, size uint64) []uint64 {
	end := addr + uintptr(size)
	d.pieces = d.pieces[:0]
	// A mapping starting before addr may reach into the range.
	d.mappings.DescendLessOrEqual(mapping{addr: addr}, func(m mapping) bool {
		if m.end() > addr {
			d.pieces = append(d.pieces, m)
		}
		return false
	})
	d.mappings.AscendRange(mapping{addr: addr + 1}, mapping{addr: end}, func(m mapping) bool {
		d.pieces = append(d.pieces, m)
		return true
	})
	bytes := make([]uint64, len(d.pieces))
	for i, m := range d.pieces {
		bytes[i] = uint64(min(m.end(), end) - max(m.addr, addr))
	}
	return bytes
}

// RecordEvent implements stitch.Driver.
func (d *meteredDriver) RecordEvent(s stitch.Stream) (stitch.Event, error) {
	start := d.now()
	ev, err := d.Driver.RecordEvent(s)
	return ev, d.meter(stitch.CallRecordEvent, start, err)
}

// EventDone implements stitch.Driver.
func (d *meteredDriver) EventDone(e stitch.Event) (bool, error) {
	start := d.now()
	done, err := d.Driver.EventDone(e)
	return done, d.meter(stitch.CallEventDone, start, err)
}

// DestroyEvent implements stitch.Driver.
func (d *meteredDriver) DestroyEvent(e stitch.Event) error {
	start := d.now()
	return d.meter(stitch.CallDestroyEvent, start, d.Driver.DestroyEvent(e))
}

// Synchronize implements stitch.Driver.
func (d *meteredDriver) Synchronize() error {
	start := d.now()
	return d.meter(stitch.CallSynchronize, start, d.Driver.Synchronize())
}

// MemInfo implements stitch.Driver.
func (d *meteredDriver) MemInfo() (free, total uint64, err error) {
	start := d.now()
	free, total, err = d.Driver.MemInfo()
	return free, total, d.meter(stitch.CallMemInfo, start, err)
}

// meter records a call of kind that covers no bytes when err is nil, books the wall time since
// start, and returns err.
func (d *meteredDriver) meter(kind stitch.CallKind, start time.Time, err error) error {
	if err == nil {
		d.ledger.vmm(kind, 0)
	}
	d.ledger.addWall(d.now().Sub(start))
	return err
}
