// Package reliability proves that the stitching allocator never corrupts or leaks, whatever the
// driver does and however it is called. It holds the shared machinery of the reliability suites
// (its tests): fault injection at every driver call, concurrency, soak and fuzzing.
//
// # Seeing physical bytes
//
// A stitched block reaches its physical bytes through a virtual range of its own, so two live
// blocks can share a byte while their addresses differ. Tracker wraps any stitch.Driver and records
// every reserved range and every mapping that succeeded; Resolve turns a block's address range into
// the physical ranges (handle, offset, length) behind it. Shadow holds the physical ranges of every
// live block: Claim fails with ErrOverlap when a new block touches a byte another live block holds,
// which is exactly the allocator's first promise ("no byte is handed out twice"). Claim after Alloc
// and Release before Free keep the shadow a subset of the engine's live set even when many
// goroutines allocate at once. Over host-accessible memory, Stamp and Stamped check the same promise
// on the bytes themselves: each live block holds its own marks until it is freed.
//
// # Stream order
//
// A block freed on a stream may still be used by work queued on that stream. StreamGuard holds the
// physical bytes of every freed block until the driver says the stream is past the free (an event
// recorded after it reads as done, or a Synchronize returns): until then they may be handed out
// again on their own stream only (ErrEarlyReuse) and their physical memory must not be released
// (ErrEarlyRelease). The Tracker tells it what the driver says; it knows nothing of the engine. The
// simulated and host drivers can hold events back (WithManualEvents: complete only when the test
// says so; WithEventLatency), so the engine meets streams that really run behind.
//
// # Driving an engine
//
// Harness owns an engine over the simulated driver (with a Tracker in between) and applies
// operations (Op: alloc, free, empty cache, reset, mark: the engine's MarkIteration hint) by ID.
// After every operation Verify runs the engine's own Check and cross-checks its accounting against
// the driver's: reserved and virtual bytes in Stats must equal what the driver holds, live bytes
// and blocks must equal what the harness holds, and the stream guard must have seen no early
// reuse or release. The driver is the ground truth, so a chunk, range or mapping the engine forgot
// shows up at the very operation that lost it, and Close must leave the driver holding nothing at
// all (Leaks).
//
// Program decodes a byte string into operations (sizes drawn to hit the small pool, splits,
// stitches, new chunks and out of memory; frees; bad frees; streams and events, completed all at
// once or one at a time; injected faults of every driver call kind, two at once too, so that a
// rollback meets one; iteration marks, and marks that replay the last iteration's allocs and frees so that
// shapes recur and the engine's iteration memos are followed, left and outlived by their places)
// and runs them on a Harness: the fuzz target and the seeded simulation share it, so a failing seed
// and a failing fuzz input replay the same way.
//
// # Iteration marks
//
// MarkIteration is a hint: it may change where a block goes, never whether a request is served or
// whether the engine is consistent. So marks are interleaved everywhere the suites drive an engine:
// in programs (at random, right after a fault, a Reset or an EmptyCache), in the fault sweep
// (marked workloads, and a mark right after the request that met the fault), from several
// goroutines at once (TestConcurrentMarkedIterations), and in the soak, which runs every trace
// unmarked and marked (a mark at each iteration marker), asserts that after the warm-up
// repetitions no driver call is made and reserved bytes stay flat, and reports for each the
// repetition after which driver calls stay at zero (settled-after-rep), views and reserved bytes
// at the end, and total driver calls; TestSoakMarksNeedNoMoreMemory runs the marked soak with the capacity set to
// the unmarked run's peak, where it must serve every request.
//
// NewSoak builds long periodic traces from the shared training traces: the prefix up to an
// iteration marker once, then the iterations after it repeated with fresh IDs.
//
// # The suites (the package's tests)
//
//   - faults_test.go: for every driver call kind and every position N over a workload (a synthetic
//     stitch-heavy one in four variants, one marked; marked iterations of two shapes; and a prefix
//     of a real trace, marked too with GMLAKE_LONG=1), the N-th call fails; every operation after
//     the fault is verified (in marked workloads a mark comes right after the request that met the
//     fault), the failed request is retried and must succeed, and Close (twice if the first
//     reports the fault) must leave the driver holding nothing. A failed stitch must roll back
//     whole (TestStitchFailureRollsBackWhole).
//   - concurrency_test.go: goroutines on three streams with the shadow map, Check and EmptyCache
//     running beside them; and memory.Allocator over the host driver with a byte pattern per block
//     (both marking iterations now and then). marks_test.go: goroutines repeating iterations of two
//     shapes, each marking its own.
//   - soak_test.go: every trace repeated (NewSoak), unmarked and marked (GMLAKE_SOAK_MARKS=0 or 1
//     for one mode only): stitched blocks within the budget, shadow map throughout, no leak at
//     Close, and after warm-up no driver call and flat reserved bytes; each run prints its
//     steady-state figures.
//   - streams_test.go: programs whose events complete only when the program says so
//     (TestStreamOrdering), and the engine over host memory whose streams run behind, every block's
//     bytes stamped (TestHostStreamOrdering), both under the stream guard.
//   - fuzz_test.go: FuzzProgram and TestSimulation over RunProgram (TestProgramReplaysConverge: a
//     replayed shape makes no driver call); minimize_test.go shrinks a failing seed and replays a
//     program given in hex.
//   - badinput_test.go: each misuse of the core issue on every kind of block, and the memory/ gaps.
//   - bugs_test.go: the engine bugs this suite found, one test each; all are fixed, and a test fails
//     if its bug comes back. Nothing in the suite skips or logs a known defect.
//
// Tests that need the shared traces skip without them, except in CI (CI=true), where they fail.
// With -short (make test's -race run) the long sequential parts are left out: the fault sweeps
// over shaped iterations and the trace prefix, and TestMarkedRunOfManyShapes. They run in one goroutine, where the race detector
// finds nothing and costs ~10x; make test runs the package again without -race at full size.
// The mutation check (cmd/mutants, `make mutants`) proves the suites can fail: each of its listed
// bugs, applied alone, must make its named tests fail.
//
// TestMain prints one summary line: faults met, operations verified, operations checked by the
// shadow map only, leaks, violations. Environment: GMLAKE_LONG=1 (long versions), GMLAKE_TRACES
// (default ../../shared/traces), GMLAKE_SEED, GMLAKE_SIM_DURATION, GMLAKE_MINIMIZE,
// GMLAKE_PROGRAM, GMLAKE_SOAK_ITERS, GMLAKE_SOAK_MARKS, GMLAKE_FAULT_PREFIX,
// GMLAKE_CONCURRENCY_OPS.
package reliability
