package dataparallel

import "unsafe"

// bytesAt views n bytes of host-driver memory at addr.
func bytesAt(addr uintptr, n uint64) []byte {
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&addr))), n)
}
