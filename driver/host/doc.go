// Package host is a stitch.Driver backed by real memory on Linux, so that the stitching engine can be
// run, and its data integrity tested, on any machine without a GPU.
//
// # Model
//
// The host driver mirrors CUDA's virtual memory management with the kernel's own primitives:
//
//   - Physical memory is one memfd (an anonymous in-memory file). Create hands out a region of the
//     file, a multiple of the granularity, reusing regions released earlier (best fit) and growing the
//     file with ftruncate only when none fits. Release punches the region out of the file with
//     fallocate(FALLOC_FL_PUNCH_HOLE|FALLOC_FL_KEEP_SIZE), or shrinks the file when the region is at
//     its end, so released memory really goes back to the kernel.
//   - A virtual range is an anonymous PROT_NONE reservation (mmap), aligned to the granularity like a
//     CUDA reservation: touching it faults until something is mapped there.
//   - Map is mmap(addr, size, PROT_READ|PROT_WRITE, MAP_FIXED|MAP_SHARED, memfd, offset): the same
//     file bytes may be mapped at several addresses at once, and a write through one mapping is
//     visible through every other, which is exactly what stitching relies on.
//   - Unmap re-reserves the range with an anonymous PROT_NONE MAP_FIXED mapping, so the address space
//     stays reserved until Free (munmap).
//   - Host work is synchronous: an event is complete as soon as it is recorded and Synchronize has
//     nothing to wait for. For tests of stream ordering the driver can stand for a device whose
//     streams run behind: events then complete only when the test says so (WithManualEvents,
//     CompleteEvent) or once a latency has passed (WithEventLatency); either way an event
//     completes every earlier event of its stream, and Synchronize completes them all.
//
// # Bookkeeping and validation
//
// The driver keeps its own record of every region (its file offset, size and how many mappings use
// it), every reserved range and every mapping inside it. Each call is checked against that record
// before any system call is made: sizes and offsets must be positive multiples of the granularity,
// handles and addresses must be known, a mapping must fit its region and its range and must not
// overlap another, Unmap must cover whole mappings, and Release and Free refuse memory that is still
// mapped. A violation returns an error wrapping one of the package's sentinel errors (ErrInvalidSize,
// ErrMisaligned, ErrUnknownHandle, ...), testable with errors.Is, and changes nothing; a request beyond
// the capacity returns an error wrapping stitch.ErrOutOfMemory.
//
// Close unmaps every range and closes the memfd; every later call returns ErrClosed. A Driver is safe
// for concurrent use, although the engine serialises its calls anyway.
package host
