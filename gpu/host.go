package gpu

import (
	"unsafe"

	"github.com/gmlake/gmlake/internal/dl"
	"github.com/gmlake/gmlake/internal/libcuda"
)

// PinnedBuffer is page-locked host memory (cuMemAllocHost): copies between it and the device run
// asynchronously at full bus speed, which activation offload needs. Its contents may be read or
// written only when no copy that uses it is queued (after Synchronize).
type PinnedBuffer struct {
	dev  *Device
	p    uintptr // page-locked host memory from the driver, outside the Go heap
	data []float32
}

// NewPinned allocates n float32s of pinned host memory.
func (d *Device) NewPinned(n int) (*PinnedBuffer, error) {
	var p uintptr
	r := d.in(func() (r libcuda.Result) {
		p, r = libcuda.MemAllocHost(uint64(max(n, 1) * 4))
		return r
	})
	if err := check("cuMemAllocHost", r); err != nil {
		return nil, err
	}
	var data []float32
	if bytes := dl.CBytes(p, n*4); len(bytes) > 0 {
		data = unsafe.Slice((*float32)(unsafe.Pointer(&bytes[0])), n)
	}
	return &PinnedBuffer{dev: d, p: p, data: data}, nil
}

// Data is the buffer's memory as a slice (valid until Free).
func (b *PinnedBuffer) Data() []float32 { return b.data }

// Free releases the buffer.
func (b *PinnedBuffer) Free() error {
	if b.p == 0 {
		return nil
	}
	err := check("cuMemFreeHost", b.dev.in(func() libcuda.Result { return libcuda.MemFreeHost(b.p) }))
	b.p, b.data = 0, nil
	return err
}

// Offload queues a copy of the contiguous tensor src into b (device to host) and returns at once.
func (d *Device) Offload(b *PinnedBuffer, src *Tensor) error {
	if !src.Contiguous() || src.Len() > len(b.data) {
		return shapeError("Offload", "%v into a pinned buffer of %d", src.shape, len(b.data))
	}
	return check("cuMemcpyDtoHAsync", d.in(func() libcuda.Result {
		return libcuda.MemcpyDtoHAsync(b.p, uint64(src.ptr), uint64(src.Len()*4), d.stream)
	}))
}

// Restore queues a copy of b's first dst.Len() values into the contiguous tensor dst.
func (d *Device) Restore(dst *Tensor, b *PinnedBuffer) error {
	if !dst.Contiguous() || dst.Len() > len(b.data) {
		return shapeError("Restore", "a pinned buffer of %d into %v", len(b.data), dst.shape)
	}
	return check("cuMemcpyHtoDAsync", d.in(func() libcuda.Result {
		return libcuda.MemcpyHtoDAsync(uint64(dst.ptr), b.p, uint64(dst.Len()*4), d.stream)
	}))
}
