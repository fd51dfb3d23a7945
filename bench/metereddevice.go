package bench

import "github.com/gmlake/gmlake/baseline"

// meteredDevice passes every call on to a baseline.Device and records the successful ones, with
// the bytes they cover, in a DriverLedger: a Malloc as a cuMemAlloc, a Free as a cuMemFree of the
// bytes that Malloc took. It is to the baselines what meteredDriver is to the engine.
type meteredDevice struct {
	baseline.Device
	ledger *DriverLedger
	sizes  map[uintptr]uint64 // size of each live allocation
}

func newMeteredDevice(d baseline.Device, m CostModel) *meteredDevice {
	return &meteredDevice{Device: d, ledger: newDriverLedger(m), sizes: make(map[uintptr]uint64)}
}

// Malloc implements baseline.Device.
func (d *meteredDevice) Malloc(size uint64) (uintptr, error) {
	p, err := d.Device.Malloc(size)
	if err == nil {
		d.sizes[p] = size
		d.ledger.malloc(size)
	}
	return p, err
}

// Free implements baseline.Device.
func (d *meteredDevice) Free(ptr uintptr) error {
	err := d.Device.Free(ptr)
	if err == nil {
		d.ledger.mallocFree(d.sizes[ptr])
		delete(d.sizes, ptr)
	}
	return err
}

// ledgerOf gives an allocator the ledger of its device or driver calls (DriverAccounter).
type ledgerOf struct{ ledger *DriverLedger }

// DriverLedger implements DriverAccounter.
func (l ledgerOf) DriverLedger() *DriverLedger { return l.ledger }

// The allocators of package baseline with their ledgers: every method of the allocator (Check,
// CallsByKind, MarkIteration, Engine where it has them) stays reachable.
type (
	meteredGMLake struct {
		*baseline.GMLake
		ledgerOf
	}
	meteredFirstFit struct {
		*baseline.FirstFit
		ledgerOf
	}
	meteredCaching struct {
		*baseline.Caching
		ledgerOf
	}
	meteredDirect struct {
		*baseline.Direct
		ledgerOf
	}
)

// metered returns a with the ledger l.
func metered(a baseline.Allocator, l *DriverLedger) baseline.Allocator {
	switch a := a.(type) {
	case *baseline.GMLake:
		return meteredGMLake{a, ledgerOf{l}}
	case *baseline.FirstFit:
		return meteredFirstFit{a, ledgerOf{l}}
	case *baseline.Caching:
		return meteredCaching{a, ledgerOf{l}}
	case *baseline.Direct:
		return meteredDirect{a, ledgerOf{l}}
	}
	return a
}
