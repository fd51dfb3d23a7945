package baseline

import (
	"fmt"

	"github.com/gmlake/gmlake/internal/units"
	"github.com/gmlake/gmlake/stitch"
)

// Direct pools nothing: every Alloc is one Device.Malloc and every Free one Device.Free. It is the
// floor for fragmentation and the ceiling for driver calls.
type Direct struct {
	dev      Device
	live     map[uintptr]uint64 // requested size of each live block
	reserved uint64             // sum of the rounded sizes of live blocks
	calls    uint64
}

// NewDirect returns a Direct allocator over dev.
func NewDirect(dev Device) *Direct {
	return &Direct{dev: dev, live: make(map[uintptr]uint64)}
}

// Name implements Allocator.
func (d *Direct) Name() string { return NameDirect }

// Alloc implements Allocator.
func (d *Direct) Alloc(size uint64, _ stitch.Stream) (uintptr, error) {
	d.calls++
	p, err := d.dev.Malloc(size)
	if err != nil {
		return 0, fmt.Errorf("direct: %w", err)
	}
	d.live[p] = size
	d.reserved += units.RoundUp(size, 512)
	return p, nil
}

// Free implements Allocator.
func (d *Direct) Free(ptr uintptr, size uint64) error {
	got, ok := d.live[ptr]
	switch {
	case !ok:
		return fmt.Errorf("direct: free %#x: %w", ptr, ErrUnknownPointer)
	case got != size:
		return fmt.Errorf("direct: free %#x of %d bytes, allocated %d: %w", ptr, size, got, ErrSizeMismatch)
	}
	d.calls++
	if err := d.dev.Free(ptr); err != nil {
		return fmt.Errorf("direct: %w", err)
	}
	delete(d.live, ptr)
	d.reserved -= units.RoundUp(size, 512)
	return nil
}

// Reserved implements Allocator.
func (d *Direct) Reserved() uint64 { return d.reserved }

// DriverCalls implements Allocator.
func (d *Direct) DriverCalls() uint64 { return d.calls }

// Close implements Allocator.
func (d *Direct) Close() error {
	for p, size := range d.live {
		if err := d.Free(p, size); err != nil {
			return err
		}
	}
	return nil
}
