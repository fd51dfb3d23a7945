package gpu

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"unsafe"

	"github.com/gmlake/gmlake/internal/libcuda"
)

// ErrShape is wrapped by every error about operand shapes, strides or sizes.
var ErrShape = errors.New("gpu: shape mismatch")

func shapeError(op, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrShape, op, fmt.Sprintf(format, args...))
}

// Tensor is a float32 array in device memory: a base pointer, a shape and strides in elements.
// A Tensor made by NewTensor owns its memory (Free returns it to the allocator); views made by
// Reshape, Permute, Slice and BroadcastTo share their base's memory and must not outlive it.
type Tensor struct {
	dev     *Device
	ptr     uintptr
	shape   []int
	strides []int
	bytes   uint64 // allocated size, 0 for views
}

// NewTensor allocates an uninitialised contiguous tensor from the Device's allocator.
func (d *Device) NewTensor(shape ...int) (*Tensor, error) {
	if d.closed {
		return nil, ErrClosed
	}
	n := 1
	for _, s := range shape {
		if s < 0 {
			return nil, shapeError("NewTensor", "negative dimension in %v", shape)
		}
		n *= s
	}
	bytes := uint64(max(n, 1)) * 4
	ptr, err := d.allocate(bytes)
	if err != nil {
		return nil, fmt.Errorf("gpu: allocating %v (%d bytes): %w", shape, bytes, err)
	}
	return &Tensor{dev: d, ptr: ptr, shape: slices.Clone(shape), strides: contiguousStrides(shape), bytes: bytes}, nil
}

// FromHost allocates a tensor of the given shape and copies data into it.
func (d *Device) FromHost(data []float32, shape ...int) (*Tensor, error) {
	t, err := d.NewTensor(shape...)
	if err != nil {
		return nil, err
	}
	if len(data) != t.Len() {
		t.Free()
		return nil, shapeError("FromHost", "%d values for shape %v", len(data), shape)
	}
	if err := t.CopyFrom(data); err != nil {
		t.Free()
		return nil, err
	}
	return t, nil
}

func contiguousStrides(shape []int) []int {
	st := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= shape[i]
	}
	return st
}

// Free returns an owning tensor's memory to the allocator; on a view it does nothing.
func (t *Tensor) Free() error {
	if t.bytes == 0 || t.ptr == 0 {
		return nil
	}
	err := t.dev.release(t.ptr, t.bytes)
	t.ptr, t.bytes = 0, 0
	return err
}

// Ptr is the device address of element 0.
func (t *Tensor) Ptr() uintptr { return t.ptr }

// Shape is the tensor's shape (do not modify).
func (t *Tensor) Shape() []int { return t.shape }

// Strides are the tensor's strides in elements (do not modify).
func (t *Tensor) Strides() []int { return t.strides }

// Len is the number of elements.
func (t *Tensor) Len() int {
	n := 1
	for _, s := range t.shape {
		n *= s
	}
	return n
}

// Contiguous reports whether the elements are laid out row-major without gaps.
func (t *Tensor) Contiguous() bool { return slices.Equal(t.strides, contiguousStrides(t.shape)) }

// Reshape is a view of a contiguous tensor with another shape of as many elements.
func (t *Tensor) Reshape(shape ...int) (*Tensor, error) {
	if !t.Contiguous() {
		return nil, shapeError("Reshape", "tensor with strides %v is not contiguous", t.strides)
	}
	v := &Tensor{dev: t.dev, ptr: t.ptr, shape: slices.Clone(shape), strides: contiguousStrides(shape)}
	if v.Len() != t.Len() {
		return nil, shapeError("Reshape", "%v to %v", t.shape, shape)
	}
	return v, nil
}

// Permute is a view with the axes reordered: axis i of the view is axis perm[i] of t.
func (t *Tensor) Permute(perm ...int) (*Tensor, error) {
	if len(perm) != len(t.shape) {
		return nil, shapeError("Permute", "permutation %v of rank %d", perm, len(t.shape))
	}
	v := &Tensor{dev: t.dev, ptr: t.ptr, shape: make([]int, len(perm)), strides: make([]int, len(perm))}
	seen := make([]bool, len(perm))
	for i, p := range perm {
		if p < 0 || p >= len(perm) || seen[p] {
			return nil, shapeError("Permute", "invalid permutation %v", perm)
		}
		seen[p] = true
		v.shape[i], v.strides[i] = t.shape[p], t.strides[p]
	}
	return v, nil
}

// Slice is a view of rows [from, to) along axis 0.
func (t *Tensor) Slice(from, to int) (*Tensor, error) {
	if len(t.shape) == 0 || from < 0 || to > t.shape[0] || from > to {
		return nil, shapeError("Slice", "[%d:%d] of %v", from, to, t.shape)
	}
	shape := slices.Clone(t.shape)
	shape[0] = to - from
	return &Tensor{dev: t.dev, ptr: t.ptr + uintptr(from*t.strides[0]*4), shape: shape,
		strides: slices.Clone(t.strides)}, nil
}

// BroadcastTo is a view of t with the given shape under numpy's rules (t's shape aligned to the
// right; each of its dimensions is 1 or equal), reading broadcast dimensions at stride 0.
func (t *Tensor) BroadcastTo(shape ...int) (*Tensor, error) {
	st, err := broadcastStrides(t, shape)
	if err != nil {
		return nil, err
	}
	return &Tensor{dev: t.dev, ptr: t.ptr, shape: slices.Clone(shape), strides: st}, nil
}

func broadcastStrides(t *Tensor, shape []int) ([]int, error) {
	off := len(shape) - len(t.shape)
	if off < 0 {
		return nil, shapeError("broadcast", "%v to %v", t.shape, shape)
	}
	st := make([]int, len(shape))
	for i := range t.shape {
		switch {
		case t.shape[i] == shape[off+i]:
			st[off+i] = t.strides[i]
		case t.shape[i] == 1:
			st[off+i] = 0
		default:
			return nil, shapeError("broadcast", "%v to %v", t.shape, shape)
		}
	}
	return st, nil
}

// CopyFrom copies host data into the contiguous tensor (the copy is complete when it returns).
func (t *Tensor) CopyFrom(data []float32) error {
	if !t.Contiguous() || len(data) != t.Len() {
		return shapeError("CopyFrom", "%d values into %v (contiguous %v)", len(data), t.shape, t.Contiguous())
	}
	if len(data) == 0 {
		return nil
	}
	d := t.dev
	err := check("cuMemcpyHtoDAsync", d.in(func() libcuda.Result {
		return libcuda.MemcpyHtoDAsync(uint64(t.ptr), uintptr(unsafe.Pointer(&data[0])), uint64(len(data)*4), d.stream)
	}))
	if err != nil {
		return err
	}
	err = d.Synchronize() // pageable source: make the copy's completion explicit
	runtime.KeepAlive(data)
	return err
}

// ToHost waits for the queued work and returns the tensor's elements in row-major order (a strided
// view is materialised on the device first).
func (t *Tensor) ToHost() ([]float32, error) {
	src := t
	if !t.Contiguous() {
		c, err := t.dev.NewTensor(t.shape...)
		if err != nil {
			return nil, err
		}
		defer c.Free()
		if err := t.dev.Copy(c, t); err != nil {
			return nil, err
		}
		src = c
	}
	out := make([]float32, t.Len())
	if len(out) == 0 {
		return out, nil
	}
	d := t.dev
	err := check("cuMemcpyDtoHAsync", d.in(func() libcuda.Result {
		return libcuda.MemcpyDtoHAsync(uintptr(unsafe.Pointer(&out[0])), uint64(src.ptr), uint64(len(out)*4), d.stream)
	}))
	if err != nil {
		return nil, err
	}
	return out, d.Synchronize()
}

// CopyDevice queues a device-to-device copy of a contiguous tensor into another of as many elements.
func (d *Device) CopyDevice(dst, src *Tensor) error {
	if !dst.Contiguous() || !src.Contiguous() || dst.Len() != src.Len() {
		return shapeError("CopyDevice", "%v into %v", src.shape, dst.shape)
	}
	return check("cuMemcpyDtoDAsync", d.in(func() libcuda.Result {
		return libcuda.MemcpyDtoDAsync(uint64(dst.ptr), uint64(src.ptr), uint64(dst.Len()*4), d.stream)
	}))
}

// Zero queues setting a contiguous tensor to 0.
func (d *Device) Zero(t *Tensor) error {
	if !t.Contiguous() {
		return shapeError("Zero", "strided tensor %v", t.strides)
	}
	return check("cuMemsetD32Async", d.in(func() libcuda.Result {
		return libcuda.MemsetD32Async(uint64(t.ptr), 0, uint64(t.Len()), d.stream)
	}))
}
