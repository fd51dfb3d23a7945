//go:build cuda || gmlakegpu

package cuda

// #include "libcuda.h"
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/gmlake/gmlake/stitch"
)

// The calls below are not part of stitch.Driver. They give tests and benchmarks what they need
// beside it: plain cuMemAlloc memory (the baselines), copies between host and device, and streams.

// MemAlloc allocates size bytes with cuMemAlloc. Out of memory wraps stitch.ErrOutOfMemory.
func (d *Driver) MemAlloc(size uint64) (uintptr, error) {
	if d.closed {
		return 0, ErrClosed
	}
	var addr C.uint64_t
	if err := check("cuMemAlloc", C.gm_mem_alloc(d.ctx, C.size_t(size), &addr)); err != nil {
		return 0, err
	}
	return uintptr(addr), nil
}

// MemFree frees memory from MemAlloc with cuMemFree.
func (d *Driver) MemFree(addr uintptr) error {
	if d.closed {
		return ErrClosed
	}
	return check("cuMemFree", C.gm_mem_free(d.ctx, C.uint64_t(addr)))
}

// CopyToDevice copies src to device address dst (cuMemcpyHtoD; returns when the copy is done).
func (d *Driver) CopyToDevice(dst uintptr, src []byte) error {
	if d.closed {
		return ErrClosed
	}
	if len(src) == 0 {
		return nil
	}
	return check("cuMemcpyHtoD", C.gm_copy_htod(d.ctx, C.uint64_t(dst), unsafe.Pointer(&src[0]), C.size_t(len(src))))
}

// CopyFromDevice copies len(dst) bytes from device address src (cuMemcpyDtoH).
func (d *Driver) CopyFromDevice(dst []byte, src uintptr) error {
	if d.closed {
		return ErrClosed
	}
	if len(dst) == 0 {
		return nil
	}
	return check("cuMemcpyDtoH", C.gm_copy_dtoh(d.ctx, unsafe.Pointer(&dst[0]), C.uint64_t(src), C.size_t(len(dst))))
}

// MemsetAsync queues a fill of n bytes at dst with value on stream s (cuMemsetD8Async).
func (d *Driver) MemsetAsync(dst uintptr, value byte, n uint64, s stitch.Stream) error {
	if d.closed {
		return ErrClosed
	}
	return check("cuMemsetD8Async", C.gm_memset_async(d.ctx, C.uint64_t(dst), C.uchar(value), C.size_t(n), C.uintptr_t(s)))
}

// NewStream creates a non-blocking stream (cuStreamCreate).
func (d *Driver) NewStream() (stitch.Stream, error) {
	if d.closed {
		return 0, ErrClosed
	}
	var s C.uintptr_t
	if err := check("cuStreamCreate", C.gm_stream_create(d.ctx, &s)); err != nil {
		return 0, err
	}
	return stitch.Stream(s), nil
}

// DestroyStream destroys a stream from NewStream.
func (d *Driver) DestroyStream(s stitch.Stream) error {
	if d.closed {
		return ErrClosed
	}
	if s == 0 {
		return fmt.Errorf("cuStreamDestroy: the default stream cannot be destroyed")
	}
	return check("cuStreamDestroy", C.gm_stream_destroy(d.ctx, C.uintptr_t(s)))
}

// SynchronizeStream waits for the work queued on s (cuStreamSynchronize).
func (d *Driver) SynchronizeStream(s stitch.Stream) error {
	if d.closed {
		return ErrClosed
	}
	return check("cuStreamSynchronize", C.gm_stream_synchronize(d.ctx, C.uintptr_t(s)))
}
