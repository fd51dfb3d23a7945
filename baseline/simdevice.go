package baseline

import (
	"fmt"

	"github.com/gmlake/gmlake/internal/units"
)

// SimDevice is an accounting-only Device: it hands out distinct addresses, never memory, and refuses
// a Malloc that would take the bytes in use past its capacity. Sizes are rounded up to its alignment
// (512 bytes, cudaMalloc's), which is what a real device would account.
type SimDevice struct {
	capacity uint64             // 0 = unlimited
	align    uint64             // rounding of each Malloc
	used     uint64             // bytes allocated now
	peak     uint64             // high-water mark of used
	next     uintptr            // next address to hand out; addresses are never reused
	sizes    map[uintptr]uint64 // live allocation sizes, rounded
	calls    uint64             // Malloc and Free calls, failed ones included
}

// SimDeviceOption configures a SimDevice.
type SimDeviceOption func(*SimDevice)

// WithDeviceCapacity limits the bytes a SimDevice hands out at once; 0 means unlimited.
func WithDeviceCapacity(bytes uint64) SimDeviceOption {
	return func(d *SimDevice) { d.capacity = bytes }
}

// WithDeviceAlignment sets the rounding of every Malloc (a power of two; default 512).
func WithDeviceAlignment(bytes uint64) SimDeviceOption { return func(d *SimDevice) { d.align = bytes } }

// NewSimDevice returns an empty simulated device.
func NewSimDevice(opts ...SimDeviceOption) *SimDevice {
	d := &SimDevice{align: 512, next: 1 << 40, sizes: make(map[uintptr]uint64)}
	for _, o := range opts {
		o(d)
	}
	return d
}

// Malloc implements Device.
func (d *SimDevice) Malloc(size uint64) (uintptr, error) {
	d.calls++
	size = units.RoundUp(max(size, 1), d.align)
	if d.capacity != 0 && d.used+size > d.capacity {
		return 0, fmt.Errorf("sim device: malloc %s with %s of %s in use: %w",
			units.FormatBytes(size), units.FormatBytes(d.used), units.FormatBytes(d.capacity), ErrOutOfMemory)
	}
	p := d.next
	d.next += uintptr(units.RoundUp(size, 1<<21)) // keep segments apart, as a real address space would
	d.sizes[p] = size
	d.used += size
	d.peak = max(d.peak, d.used)
	return p, nil
}

// Free implements Device.
func (d *SimDevice) Free(ptr uintptr) error {
	d.calls++
	size, ok := d.sizes[ptr]
	if !ok {
		return fmt.Errorf("sim device: free %#x: %w", ptr, ErrUnknownPointer)
	}
	delete(d.sizes, ptr)
	d.used -= size
	return nil
}

// Used is the bytes allocated now; Peak their high-water mark; Calls the Malloc and Free calls made.
func (d *SimDevice) Used() uint64  { return d.used }
func (d *SimDevice) Peak() uint64  { return d.peak }
func (d *SimDevice) Calls() uint64 { return d.calls }
