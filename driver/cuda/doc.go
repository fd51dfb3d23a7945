// Package cuda is a stitch.Driver over the CUDA driver API's virtual memory management (VMM):
// cuMemCreate/cuMemRelease for physical handles, cuMemAddressReserve/cuMemAddressFree for virtual
// ranges, cuMemMap/cuMemUnmap to put handles under ranges (one handle under several ranges at once
// is what stitching is), cuMemSetAccess to make a mapping usable, events and synchronisation for
// stream order, and cuMemGetInfo. It is part of every build: no build tag, no cgo, no CUDA
// headers (the driver is bound at run time, see internal/libcuda).
//
// # Loading the driver at run time
//
// The package opens the driver library at run time ("libcuda.so.1"; override: WithLibrary or
// $GMLAKE_LIBCUDA) through internal/libcuda, instead of linking -lcuda, and it does not import
// gorgonia.org/cu. Both choices serve one requirement: every binary must start on a machine
// without a GPU and say so with an error wrapping ErrUnavailable, so that callers fall back to
// another driver and tests skip. A binary linked with -lcuda does not even load where
// libcuda.so.1 is missing, and gorgonia.org/cu calls cuInit in its package init and exits the
// process (os.Exit(1)) when that fails. cu's types need no import to interoperate: cu.DevicePtr
// is a uintptr, so an address from the engine converts with cu.DevicePtr(addr), and
// Driver.Context returns the raw CUcontext (the device's primary context, the one the CUDA
// runtime and most libraries use).
//
// # Contexts and threads
//
// The CUDA driver keeps a current context per OS thread, and Go moves goroutines between threads.
// Rather than funnel every call through one locked goroutine (cu.Ctx.Do: two channel operations
// and a thread hand-off, microseconds per call) or make callers lock their threads, every method
// locks its goroutine to the thread for the duration of its driver calls, makes the Driver's
// context current if it is not already, makes the calls and restores whatever was current before
// (libcuda.In). The extra cost is a thread-local read (and two writes when the thread had another
// context), nanoseconds next to the calls themselves. Code on the same thread that uses its own
// context (a Gorgonia cu.Ctx, say) is left undisturbed.
//
// # One CUDA handle per physical allocation
//
// Every VMM call costs per physical handle it touches (../shared/GPU.md, measured on an H200,
// 2026-12-01: set access about 30 µs, an unmap about 21 µs, a create about 12 µs per handle, of
// 2 MiB as of 1 GiB), so Create makes one CUDA allocation of the size asked and its PhysHandle
// names it: a 1 GiB handle is made accessible in 71 µs where 512 of 2 MiB take 16 ms. cuMemMap
// maps a physical allocation only whole and from its start (a nonzero offset or a prefix returns
// CUDA_ERROR_NOT_SUPPORTED on the H200, driver 580, CUDA 13.0; the documentation says "currently
// must be zero"), so Map takes offset 0 and the handle's size, and the engine sizes handles to
// what it maps. cuMemSetAccess and cuMemUnmap accept a range over many mappings: one call each.
//
// # Cost
//
// The engine is what keeps these calls rare (none when every request is an exact fit) and few
// handles per call. RecordEvent reuses completed events handed back through DestroyEvent, so a
// steady stream of frees does not pay cuEventCreate each time.
//
// # Testing
//
// The tests named TestGPU* need a device; they skip without one (GMLAKE_REQUIRE_GPU=1 makes that a
// failure, as scripts/gpu-run.sh does on the GPU machine). `make cuda-fake-test` also runs them
// against testdata/fakecuda.c, a libcuda.so.1 over host memory that keeps the real driver's rules
// that matter here (a current context for every call, cuMemMap only from offset 0, no access
// before cuMemSetAccess, memory shared by every range that maps it, struct arguments checked field
// by field), so CI exercises this package, its binding of the driver and the engine on it without
// a GPU.
//
// # Safety of unmapping
//
// cuMemUnmap does not wait for kernels still queued on the range. Unmap therefore synchronises the
// context first (WithUnmapSync(false) turns that off for callers that synchronise themselves).
// Unmapping is rare by design (cache trimming, out-of-memory recovery), so the wait costs little.
package cuda
