package stitch

import (
	"errors"
	"fmt"
)

// Errors the engine returns, testable with errors.Is. A rejected call changes nothing.
var (
	ErrInvalidSize    = errors.New("stitch: invalid size")                 // size 0
	ErrTooLarge       = errors.New("stitch: size beyond capacity")         // more than the device can ever hold
	ErrUnknownPointer = errors.New("stitch: pointer not from this engine") // free of a pointer never returned, or long freed
	ErrDoubleFree     = errors.New("stitch: double free")                  // free of a block already freed
	ErrSizeMismatch   = errors.New("stitch: free with a size other than allocated")
	ErrClosed         = errors.New("stitch: engine closed")
	ErrBadOption      = errors.New("stitch: bad option")
)

// OutOfMemoryError is returned when neither free memory nor the driver can cover a request.
// It wraps ErrOutOfMemory and, when the driver refused, the driver's error.
type OutOfMemoryError struct {
	Requested    uint64 // bytes asked for
	Rounded      uint64 // bytes the block would take
	FreeBytes    uint64 // physical bytes held by the engine and not in live blocks
	FreePieces   int    // number of separate free ranges they form
	LargestPiece uint64 // the largest of them
	Stitchable   uint64 // the largest block stitching the free ranges could build
	Reserved     uint64 // physical bytes held by the engine
	Capacity     uint64 // physical bytes the engine may hold
	Err          error  // the driver's error, if it refused memory
}

func (e *OutOfMemoryError) Error() string {
	s := fmt.Sprintf("stitch: out of memory: asked %d bytes (%d rounded); %d bytes free in %d pieces, largest %d, stitching reaches %d; %d of %d bytes reserved",
		e.Requested, e.Rounded, e.FreeBytes, e.FreePieces, e.LargestPiece, e.Stitchable, e.Reserved, e.Capacity)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is makes errors.Is(err, ErrOutOfMemory) true.
func (e *OutOfMemoryError) Is(target error) bool { return target == ErrOutOfMemory }

// Unwrap returns the driver's error.
func (e *OutOfMemoryError) Unwrap() error { return e.Err }
