// Package memory adapts the stitching engine (package stitch) to Gorgonia.
//
// # Allocator
//
// An Allocator owns a stitch.Engine and the stitch.Driver under it (closed with the Allocator when it
// is an io.Closer). Its Get, Put and ResetAllocator methods are exactly Gorgonia's cuda.Arena method
// set, checked at compile time against a local copy of that interface (Arena), because Gorgonia's cuda
// package cannot be built without cuDNN 8 headers. Around them:
//
//   - Free is the error-returning twin of Put. Put has no error result in Gorgonia's interface, so a
//     rejected Put (unknown pointer, double free, wrong size, after Close) is logged at warn level,
//     counted in Stats().PutRejections, and kept: LastPutError returns the most recent one. Calling
//     Free with the same arguments returns the same typed error directly.
//   - ResetAllocator frees nothing. Gorgonia's cuda.Arena contract has it free everything at a VM's
//     Reset, but a tensor.Dense keeps only the address of its memory, so no allocator can know
//     whether a block is still read; freeing it would corrupt training silently. It marks an
//     iteration boundary (MarkIteration) and physical memory stays cached. What Gorgonia's
//     TapeMachine and solvers drop without freeing comes back through a Reclaimer (below);
//     train/vm frees every buffer at its last use.
//   - Stats, Check, EmptyCache and Close pass through to the engine. Every error wraps one of the
//     stitch sentinel errors (stitch.ErrInvalidSize, ErrUnknownPointer, ErrDoubleFree,
//     ErrSizeMismatch, ErrClosed, ErrOutOfMemory, ...) and is testable with errors.Is. A Close the
//     driver fails returns its error and may be called again to give back the rest.
//
// # Handles
//
// Memory handed out is a *Block: its Uintptr is the block's address (device or host, depending on
// the driver) and its MemSize the size asked for. All blocks come from the engine's default stream.
// A Block is a handle good for one Free: the Free marks it, so a second Free of it is always
// stitch.ErrDoubleFree (whether the engine still caches the block or has given its memory back),
// and a stale handle cannot free the block a later Get placed at the same address. A nil or typed
// nil Memory, and another Allocator's handle, are stitch.ErrUnknownPointer. The check is one
// compare-and-swap on the handle, and the handle stays the exact path's only allocation
// (BenchmarkExactPath).
//
// # TensorEngine
//
// TensorEngine is a gorgonia.org/tensor Engine over an Allocator whose driver gives host-accessible memory
// (driver/host; the simulated driver has no memory behind its addresses and device memory is not
// readable by Go, so NewTensorEngine refuses both with ErrNotHostAccessible). It embeds tensor.StdEng for
// arithmetic, so operations on its tensors compute as usual and their results are allocated through
// the same TensorEngine; it adds NonStdAlloc, without which package tensor would bypass Alloc and allocate
// on the Go heap.
//
// What goes through gmlake and what does not: tensor.New(tensor.WithEngine(e), ...) and the results
// of element-wise and linear-algebra operations on such tensors (they follow the engine of the
// first operand) are allocated by Alloc. Reductions along an axis, comparisons, Repeat and Concat,
// and Transpose's scratch copy are allocated on the Go heap by package tensor whatever the engine.
// Gorgonia's TapeMachine with gorgonia.WithEngine(e) routes only part of its buffers through Alloc
// (see the package tests, which measure it); neither tensor nor gorgonia ever calls Engine.Free.
// Alloc returns zeroed memory, as the Go heap does. Memclr (and its error-returning twin Clear),
// Memcpy and Memset refuse nil memory and blocks that are not live blocks of the Allocator with
// ErrForeignMemory instead of writing through a stale or foreign address.
//
// # Reclaimer
//
// Gorgonia's TapeMachine allocates a fresh result for most ops on every run and rebinds it to the
// node; its solvers replace their moment tensors each step. Nobody frees the old ones: on a small
// MLP with Adam that is 20 blocks (3,520 B) a step, on a small transformer block 64 blocks (22,208
// B), for ever. A Reclaimer is a TensorEngine for gorgonia.WithEngine that remembers what it
// allocated; Reclaim(graph, machine, solver) after each step walks those roots (node values and
// gradients, the machine's registers, the solver's moments, through unexported fields) and frees
// every block of its own that no tensor, tensor.Memory or slice found points into. Live bytes then
// stay flat (2,740 B and 20,096 B on those two nets over 200 steps, losses bit-identical to the Go
// heap: TestTapeMachineOnReclaimer). The rule it asks of the caller: a tensor the Reclaimer's
// engine made is valid until the next Reclaim unless that Reclaim's roots reach it.
package memory
