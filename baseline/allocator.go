package baseline

import (
	"errors"
	"fmt"

	"github.com/gmlake/gmlake/internal/units"
	"github.com/gmlake/gmlake/stitch"
)

// Allocator is one memory allocator under comparison: what the replays of package bench drive and
// what the GPU tools (gpu/pool, the data-parallel trainer, gpu-train) allocate tensors from.
// Implementations need not be safe for concurrent use.
type Allocator interface {
	// Name is the allocator's short name, as given to --allocators.
	Name() string
	// Alloc returns the address of a block of at least size bytes for use on stream s.
	Alloc(size uint64, s stitch.Stream) (uintptr, error)
	// Free returns a block; size is the size given to Alloc.
	Free(ptr uintptr, size uint64) error
	// Reserved is the device memory the allocator holds now, in bytes, whether in use or cached.
	Reserved() uint64
	// DriverCalls is the number of device (driver) calls the allocator has made so far.
	DriverCalls() uint64
	// Close returns everything to the device.
	Close() error
}

// Checker is implemented by allocators that can verify their own invariants; Replay calls it at the
// end of a replay and reports what it finds.
type Checker interface {
	Check() error
}

// CallCounter is implemented by allocators that count their driver calls by kind (names such as
// "map", "create"); the replay reports the steady-state calls per iteration of each kind.
type CallCounter interface {
	CallsByKind() map[string]uint64
}

// IterationMarker is implemented by allocators that take a hint where training iterations begin:
// the replay calls MarkIteration at each of the trace's `i N` markers, before the iteration's first
// request. The calls it makes to the driver, if any, count in the iteration that begins.
type IterationMarker interface {
	MarkIteration()
}

// Device is the memory a baseline allocator draws from: cudaMalloc/cudaFree on a GPU, SimDevice in
// the simulation. Allocators count their own Device calls, so an implementation need not.
type Device interface {
	// Malloc returns size bytes of device memory, or an error wrapping ErrOutOfMemory.
	Malloc(size uint64) (uintptr, error)
	// Free returns memory obtained from Malloc.
	Free(ptr uintptr) error
}

// ErrOutOfMemory is stitch.ErrOutOfMemory, so one errors.Is test covers every allocator.
var ErrOutOfMemory = stitch.ErrOutOfMemory

// Errors an allocator returns for a bad Free.
var (
	ErrUnknownPointer = errors.New("baseline: free of a pointer that is not allocated")
	ErrSizeMismatch   = errors.New("baseline: free with a size other than the allocated one")
	ErrUnknown        = errors.New("baseline: unknown allocator")
	ErrMissingMemory  = errors.New("baseline: no memory to allocate from")
	ErrInvalidSize    = errors.New("baseline: invalid size")
)

// OutOfMemoryError says why an allocator could not satisfy a request.
type OutOfMemoryError struct {
	Allocator string
	Requested uint64 // bytes asked for
	Reserved  uint64 // bytes the allocator held at the time
	Capacity  uint64 // the limit in force, 0 for none
	Largest   uint64 // the largest free piece the allocator could have used, 0 if unknown
	Pieces    int    // how many free pieces it held
}

func (e *OutOfMemoryError) Error() string {
	return fmt.Sprintf("%s: out of memory: asked %s with %s reserved of capacity %s; %d free pieces, largest %s",
		e.Allocator, units.FormatBytes(e.Requested), units.FormatBytes(e.Reserved), units.FormatBytes(e.Capacity), e.Pieces, units.FormatBytes(e.Largest))
}

// Is makes errors.Is(err, ErrOutOfMemory) true.
func (e *OutOfMemoryError) Is(target error) bool { return target == ErrOutOfMemory }

func errorsIsOOM(err error) bool { return errors.Is(err, ErrOutOfMemory) }
