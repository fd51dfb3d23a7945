// Package reliability proves that the stitching allocator never corrupts or leaks, whatever the
// driver does and however it is called. It holds the shared machinery of the reliability suites
// (its tests): fault injection at every driver call, concurrency, soak and fuzzing.
//
// # Seeing physical bytes
//
// A stitched block reaches its physical bytes through a virtual range of its own, so two live blocks
// can share a byte while their addresses differ. Tracker wraps any stitch.Driver and records every
// reserved range and every mapping that succeeded; Resolve turns a block's address range into the
// physical ranges (handle, offset, length) behind it. Shadow holds the physical ranges of every live
// block: Claim fails with ErrOverlap when a new block touches a byte another live block holds, which
// is exactly the allocator's first promise ("no byte is handed out twice"). Claim after Alloc and
// Release before Free keep the shadow a subset of the engine's live set even when many goroutines
// allocate at once.
//
// # Driving an engine
//
// Harness owns an engine over the simulated driver (with a Tracker in between) and applies operations
// (Op: alloc, free, empty cache, reset) by ID. After every operation Verify runs the engine's own
// Check and cross-checks its accounting against the driver's: reserved and virtual bytes in Stats
// must equal what the driver holds, live bytes and blocks must equal what the harness holds. The
// driver is the ground truth, so a chunk, range or mapping the engine forgot shows up at the very
// operation that lost it, and Close must leave the driver holding nothing at all (Leaks).
//
// Program decodes a byte string into operations (sizes drawn to hit the small pool, splits,
// stitches, new chunks and out of memory; frees; bad frees; streams and events; injected driver
// faults) and runs them on a Harness: the fuzz target and the seeded simulation share it, so a
// failing seed and a failing fuzz input replay the same way.
//
// Soak builds long periodic traces from the shared training traces: the prefix up to an iteration
// marker once, then the iterations after it repeated with fresh IDs.
package reliability
