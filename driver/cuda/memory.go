package cuda

import (
	"fmt"
	"unsafe"

	"github.com/gmlake/gmlake/internal/libcuda"
	"github.com/gmlake/gmlake/stitch"
)

// The calls below are not part of stitch.Driver. They give tests and benchmarks what they need
// beside it: plain cuMemAlloc memory (the baselines), copies between host and device, and streams.

// MemAlloc allocates size bytes with cuMemAlloc. Out of memory wraps stitch.ErrOutOfMemory.
func (d *Driver) MemAlloc(size uint64) (uintptr, error) {
	if d.closed {
		return 0, ErrClosed
	}
	var addr uint64
	r := d.in(func() (r libcuda.Result) {
		addr, r = libcuda.MemAlloc(size)
		return r
	})
	if err := check("cuMemAlloc", r); err != nil {
		return 0, err
	}
	return uintptr(addr), nil
}

// MemFree frees memory from MemAlloc with cuMemFree.
func (d *Driver) MemFree(addr uintptr) error {
	if d.closed {
		return ErrClosed
	}
	return check("cuMemFree", d.in(func() libcuda.Result { return libcuda.MemFree(uint64(addr)) }))
}

// CopyToDevice copies src to device address dst (cuMemcpyHtoD; returns when the copy is done).
func (d *Driver) CopyToDevice(dst uintptr, src []byte) error {
	if d.closed {
		return ErrClosed
	}
	if len(src) == 0 {
		return nil
	}
	return check("cuMemcpyHtoD", d.in(func() libcuda.Result {
		return libcuda.MemcpyHtoD(uint64(dst), unsafe.Pointer(&src[0]), uint64(len(src)))
	}))
}

// CopyFromDevice copies len(dst) bytes from device address src (cuMemcpyDtoH).
func (d *Driver) CopyFromDevice(dst []byte, src uintptr) error {
	if d.closed {
		return ErrClosed
	}
	if len(dst) == 0 {
		return nil
	}
	return check("cuMemcpyDtoH", d.in(func() libcuda.Result {
		return libcuda.MemcpyDtoH(unsafe.Pointer(&dst[0]), uint64(src), uint64(len(dst)))
	}))
}

// MemsetAsync queues a fill of n bytes at dst with value on stream s (cuMemsetD8Async).
func (d *Driver) MemsetAsync(dst uintptr, value byte, n uint64, s stitch.Stream) error {
	if d.closed {
		return ErrClosed
	}
	return check("cuMemsetD8Async", d.in(func() libcuda.Result {
		return libcuda.MemsetD8Async(uint64(dst), value, n, uintptr(s))
	}))
}

// NewStream creates a non-blocking stream (cuStreamCreate).
func (d *Driver) NewStream() (stitch.Stream, error) {
	if d.closed {
		return 0, ErrClosed
	}
	var s uintptr
	r := d.in(func() (r libcuda.Result) {
		s, r = libcuda.StreamCreate(libcuda.StreamNonBlocking)
		return r
	})
	if err := check("cuStreamCreate", r); err != nil {
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
	return check("cuStreamDestroy", d.in(func() libcuda.Result { return libcuda.StreamDestroy(uintptr(s)) }))
}

// SynchronizeStream waits for the work queued on s (cuStreamSynchronize).
func (d *Driver) SynchronizeStream(s stitch.Stream) error {
	if d.closed {
		return ErrClosed
	}
	return check("cuStreamSynchronize", d.in(func() libcuda.Result { return libcuda.StreamSynchronize(uintptr(s)) }))
}
