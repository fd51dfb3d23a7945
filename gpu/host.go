//go:build cuda || gmlakegpu

package gpu

// #include "libcuda.h"
import "C"

import (
	"unsafe"
)

// PinnedBuffer is page-locked host memory (cuMemAllocHost): copies between it and the device run
// asynchronously at full bus speed, which activation offload needs. Its contents may be read or
// written only when no copy that uses it is queued (after Synchronize).
type PinnedBuffer struct {
	dev  *Device
	p    unsafe.Pointer
	data []float32
}

// NewPinned allocates n float32s of pinned host memory.
func (d *Device) NewPinned(n int) (*PinnedBuffer, error) {
	var p unsafe.Pointer
	if err := check("cuMemAllocHost", C.gk_mem_alloc_host(d.ctx, C.size_t(max(n, 1)*4), &p)); err != nil {
		return nil, err
	}
	return &PinnedBuffer{dev: d, p: p, data: unsafe.Slice((*float32)(p), n)}, nil
}

// Data is the buffer's memory as a slice (valid until Free).
func (b *PinnedBuffer) Data() []float32 { return b.data }

// Free releases the buffer.
func (b *PinnedBuffer) Free() error {
	if b.p == nil {
		return nil
	}
	err := check("cuMemFreeHost", C.gk_mem_free_host(b.dev.ctx, b.p))
	b.p, b.data = nil, nil
	return err
}

// Offload queues a copy of the contiguous tensor src into b (device to host) and returns at once.
func (d *Device) Offload(b *PinnedBuffer, src *Tensor) error {
	if !src.Contiguous() || src.Len() > len(b.data) {
		return shapeError("Offload", "%v into a pinned buffer of %d", src.shape, len(b.data))
	}
	return check("cuMemcpyDtoHAsync", C.gk_copy_dtoh_async(d.ctx, b.p, C.uint64_t(src.ptr),
		C.size_t(src.Len()*4), C.uintptr_t(d.stream)))
}

// Restore queues a copy of b's first dst.Len() values into the contiguous tensor dst.
func (d *Device) Restore(dst *Tensor, b *PinnedBuffer) error {
	if !dst.Contiguous() || dst.Len() > len(b.data) {
		return shapeError("Restore", "a pinned buffer of %d into %v", len(b.data), dst.shape)
	}
	return check("cuMemcpyHtoDAsync", C.gk_copy_htod_async(d.ctx, C.uint64_t(dst.ptr), b.p,
		C.size_t(dst.Len()*4), C.uintptr_t(d.stream)))
}
