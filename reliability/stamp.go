package reliability

import "unsafe"

// StampStride is the engine's block alignment: blocks start at multiples of it, so two blocks that
// share any byte share one of the words Stamp writes at these offsets.
const StampStride = 512

// Stamp writes id and each word's index at every StampStride bytes of the memory [p, p+size),
// which must be host-accessible and writable: a block marked as its own, so that another live block
// on the same bytes overwrites the mark.
func Stamp(p uintptr, size uint64, id uint64) {
	for off := uint64(0); off < size; off += StampStride {
		*(*uint64)(unsafe.Add(unsafe.Pointer(nil), p+uintptr(off))) = id<<32 | off/StampStride
	}
}

// Stamped reports whether [p, p+size) still holds what Stamp(p, size, id) wrote.
func Stamped(p uintptr, size uint64, id uint64) bool {
	for off := uint64(0); off < size; off += StampStride {
		if *(*uint64)(unsafe.Add(unsafe.Pointer(nil), p+uintptr(off))) != id<<32|off/StampStride {
			return false
		}
	}
	return true
}
