package gpu

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/gmlake/gmlake/internal/libcuda"
)

// ErrIndex is wrapped by errors about token ids or targets out of range.
var ErrIndex = errors.New("gpu: index out of range")

// Ids is a vector of int32 token ids or class targets in device memory.
type Ids struct {
	dev   *Device
	ptr   uintptr
	n     int
	bytes uint64
}

// NewIds copies ids to the device. Every id must lie in [0, limit) or equal one of allowed (such as
// an ignore index): kernels cannot report a bad id, so it is caught here.
func (d *Device) NewIds(ids []int32, limit int32, allowed ...int32) (*Ids, error) {
	for i, id := range ids {
		if (id < 0 || id >= limit) && !contains(allowed, id) {
			return nil, fmt.Errorf("%w: id %d at %d, limit %d", ErrIndex, id, i, limit)
		}
	}
	bytes := uint64(max(len(ids), 1)) * 4
	ptr, err := d.allocate(bytes)
	if err != nil {
		return nil, err
	}
	v := &Ids{dev: d, ptr: ptr, n: len(ids), bytes: bytes}
	if len(ids) > 0 {
		// The source is Go memory: the copy is waited for before ids can move or go.
		err = check("cuMemcpyHtoDAsync", d.in(func() libcuda.Result {
			return libcuda.MemcpyHtoDAsync(uint64(ptr), uintptr(unsafe.Pointer(&ids[0])), uint64(len(ids)*4), d.stream)
		}))
		if err == nil {
			err = d.Synchronize()
		}
	}
	if err != nil {
		v.Free()
		return nil, err
	}
	return v, nil
}

func contains(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Len is the number of ids.
func (v *Ids) Len() int { return v.n }

// Free returns the ids' memory to the allocator.
func (v *Ids) Free() error {
	if v.ptr == 0 {
		return nil
	}
	err := v.dev.release(v.ptr, v.bytes)
	v.ptr = 0
	return err
}
