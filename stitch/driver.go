package stitch

import "errors"

// PhysHandle names one physical allocation made by a Driver (a CUmemGenericAllocationHandle on CUDA,
// an offset into a memfd on the host, a counter in the simulator).
type PhysHandle uint64

// Stream names an ordered queue of device work. 0 is the default stream.
type Stream uintptr

// Event marks a point in a stream's work; it completes when the device has done everything queued
// on that stream before it was recorded.
type Event uintptr

// Driver is everything the engine needs from a device: physical memory in units of Granularity,
// virtual address ranges, mappings between them, and stream ordering. Implementations live in
// driver/sim (accounting only), driver/host (real memory: memfd + mmap) and driver/cuda (CUDA VMM).
//
// Sizes and offsets passed to Create, Reserve, Map, Unmap, SetAccess and Free are multiples of
// Granularity; addresses are those returned by Reserve plus such offsets. A Driver need not be safe
// for concurrent use: the engine serialises its calls.
type Driver interface {
	// Granularity is the unit of physical allocation and of mapping, a power of two (2 MiB on CUDA).
	Granularity() uint64
	// Create allocates size bytes of physical memory as one handle (size any multiple of
	// Granularity). Every VMM call costs per handle it touches, not per byte (cuMemCreate,
	// cuMemMap, cuMemSetAccess, cuMemUnmap), so the engine sizes handles to its requests. It
	// returns an error wrapping ErrOutOfMemory when the device has no more.
	Create(size uint64) (PhysHandle, error)
	// Release returns physical memory. It must not be mapped anywhere.
	Release(h PhysHandle) error
	// Reserve reserves size bytes of virtual address space, mapped to nothing.
	Reserve(size uint64) (uintptr, error)
	// Free returns a virtual range obtained from Reserve. Nothing may be mapped in it.
	Free(addr uintptr, size uint64) error
	// Map maps physical allocation h whole at addr, inside a reserved range: the engine always
	// passes offset 0 and the handle's size, as cuMemMap requires. One physical byte may be
	// mapped at several virtual addresses at once.
	Map(addr uintptr, size uint64, h PhysHandle, offset uint64) error
	// Unmap undoes Map over [addr, addr+size), which must cover whole earlier mappings (one call
	// may cover several).
	Unmap(addr uintptr, size uint64) error
	// SetAccess makes [addr, addr+size) readable and writable by the device; needed once after Map.
	SetAccess(addr uintptr, size uint64) error
	// RecordEvent records an event on stream s.
	RecordEvent(s Stream) (Event, error)
	// EventDone reports whether the work before e has completed, without blocking.
	EventDone(e Event) (bool, error)
	// DestroyEvent releases e.
	DestroyEvent(e Event) error
	// Synchronize blocks until all device work queued so far has completed.
	Synchronize() error
	// MemInfo reports the device's free and total physical memory in bytes.
	MemInfo() (free, total uint64, err error)
}

// CallKind names a Driver method, for counting calls.
type CallKind int

// The driver calls, in the order of the Driver interface.
const (
	CallCreate CallKind = iota
	CallRelease
	CallReserve
	CallFree
	CallMap
	CallUnmap
	CallSetAccess
	CallRecordEvent
	CallEventDone
	CallDestroyEvent
	CallSynchronize
	CallMemInfo
	NumCallKinds
)

var callNames = [NumCallKinds]string{"create", "release", "reserve", "free", "map", "unmap",
	"set_access", "record_event", "event_done", "destroy_event", "synchronize", "mem_info"}

func (k CallKind) String() string {
	if k < 0 || k >= NumCallKinds {
		return "unknown"
	}
	return callNames[k]
}

// ErrOutOfMemory is wrapped by every out-of-memory error, from a Driver or from the engine.
var ErrOutOfMemory = errors.New("out of memory")
