package host

import (
	"errors"
	"fmt"

	"github.com/gmlake/gmlake/stitch"
)

// Errors returned by the Driver, wrapped with the call and its arguments; test them with errors.Is.
// Out-of-memory errors wrap stitch.ErrOutOfMemory instead (ErrMappingLimit among them).
var (
	// ErrClosed: the Driver has been closed.
	ErrClosed = errors.New("host driver: closed")
	// ErrInvalidSize: a size of zero, or not a multiple of the granularity.
	ErrInvalidSize = errors.New("host driver: invalid size")
	// ErrMisaligned: an address or offset that is not a multiple of the granularity.
	ErrMisaligned = errors.New("host driver: misaligned address or offset")
	// ErrUnknownHandle: a physical handle that Create did not return, or that was released.
	ErrUnknownHandle = errors.New("host driver: unknown physical handle")
	// ErrUnknownRange: an address outside every reserved range, or Free of an address that is not the
	// start of one, or of the wrong size.
	ErrUnknownRange = errors.New("host driver: address not in a reserved range")
	// ErrOutOfBounds: a mapping that runs past the end of its physical region or its virtual range.
	ErrOutOfBounds = errors.New("host driver: out of bounds")
	// ErrOverlap: a mapping over part of a range that is already mapped.
	ErrOverlap = errors.New("host driver: range already mapped")
	// ErrNotMapped: Unmap or SetAccess of addresses that are not (wholly) mapped, or an Unmap that
	// would cut an earlier mapping in two.
	ErrNotMapped = errors.New("host driver: not mapped")
	// ErrStillMapped: Release of a region, or Free of a range, that is still mapped.
	ErrStillMapped = errors.New("host driver: still mapped")
	// ErrUnknownEvent: an event that RecordEvent did not return, or that was destroyed.
	ErrUnknownEvent = errors.New("host driver: unknown event")
	// ErrBadOption: an option with an impossible value (see New).
	ErrBadOption = errors.New("host driver: bad option")
	// ErrMappingLimit: the kernel refused a mapping or a reservation with ENOMEM: the process's
	// mapping count (vm.max_map_count) or its address space is spent. It wraps
	// stitch.ErrOutOfMemory: the engine treats it as memory it cannot have, and nothing changed.
	ErrMappingLimit = fmt.Errorf("host driver: mapping limit (vm.max_map_count or address space): %w", stitch.ErrOutOfMemory)
)
