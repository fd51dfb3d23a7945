//go:build cuda || gmlakegpu

// Package cuda is a stitch.Driver over the CUDA driver API's virtual memory management (VMM):
// cuMemCreate/cuMemRelease for physical chunks, cuMemAddressReserve/cuMemAddressFree for virtual
// ranges, cuMemMap/cuMemUnmap to put chunks under ranges (one chunk under several ranges at once is
// what stitching is), cuMemSetAccess to make a mapping usable, events and synchronisation for
// stream order, and cuMemGetInfo. It is compiled only with the `cuda` or `gmlakegpu` build tag
// (gmlakegpu: for programs that import Gorgonia, whose own `cuda` tag needs cuDNN 8).
//
// # Loading the driver at run time
//
// The package binds the driver library with dlopen("libcuda.so.1") (override: WithLibrary or
// $GMLAKE_LIBCUDA) instead of linking -lcuda, and it does not import gorgonia.org/cu. Both choices
// serve one requirement: a cuda-tagged binary must start on a machine without a GPU and say so with
// an error wrapping ErrUnavailable, so that callers fall back to another driver and tests skip.
// A binary linked with -lcuda does not even load where libcuda.so.1 is missing, and gorgonia.org/cu
// calls cuInit in its package init and exits the process (os.Exit(1)) when that fails. cu's types
// need no import to interoperate: cu.DevicePtr is a uintptr, so an address from the engine converts
// with cu.DevicePtr(addr), and Driver.Context returns the raw CUcontext (the device's primary
// context, the one the CUDA runtime and most libraries use).
//
// Symbols are looked up by the versioned names the CUDA 11.8 headers select (cuMemAlloc_v2, ...),
// with their signatures from cudaTypedefs.h, so the binary asks the driver for exactly the ABI it
// was compiled for; newer drivers keep those symbols (checked on CUDA 13.0).
//
// # Contexts and threads
//
// The CUDA driver keeps a current context per OS thread, and Go moves goroutines between threads.
// Rather than funnel every call through one locked goroutine (cu.Ctx.Do: two channel operations
// and a thread hand-off, microseconds per call) or make callers lock their threads, every C wrapper
// takes the context as an argument, makes it current if it is not already, makes the call and
// restores whatever was current before. A cgo call runs start to finish on one OS thread, so the
// goroutine cannot move in between; the extra cost is a thread-local read (and two writes when the
// thread had another context), nanoseconds next to the call itself. Code on the same thread that
// uses its own context (a Gorgonia cu.Ctx, say) is left undisturbed.
//
// # Physical memory in chunks
//
// cuMemMap maps a physical allocation only from its start: a nonzero offset returns
// CUDA_ERROR_NOT_SUPPORTED (measured on an H200, driver 580, CUDA 13.0; the documentation says
// "currently must be zero"). Stitching needs parts of allocations, so Create makes one CUDA
// allocation per granularity-sized chunk and its PhysHandle names the list; Map, Unmap and Release
// loop over chunks inside one cgo call. cuMemSetAccess accepts a range over many allocations, so
// access is still set once per mapped range.
//
// # Cost
//
// On an H200 (../shared/GPU.md) cuMemSetAccess costs ~27 µs per 2 MiB chunk it covers, cuMemCreate
// ~9 µs, cuMemMap ~1.3 µs. The engine is what keeps these calls rare (none when every request is
// an exact fit) and sets access once per mapped range, never per chunk.
// RecordEvent reuses completed events handed back through DestroyEvent, so a steady stream of
// frees does not pay cuEventCreate each time.
//
// # Testing
//
// The tests named TestGPU* need a device; they skip without one (GMLAKE_REQUIRE_GPU=1 makes that a
// failure, as scripts/gpu-run.sh does on the GPU machine). `make build-cuda` also runs them against
// testdata/fakecuda.c, a libcuda.so.1 over host memory that keeps the real driver's rules that
// matter here (a current context for every call, cuMemMap only from offset 0, no access before
// cuMemSetAccess, memory shared by every range that maps it), so CI exercises this package, its C
// layer and the engine on it without a GPU.
//
// # Safety of unmapping
//
// cuMemUnmap does not wait for kernels still queued on the range. Unmap therefore synchronises the
// context first (WithUnmapSync(false) turns that off for callers that synchronise themselves).
// Unmapping is rare by design (cache trimming, out-of-memory recovery), so the wait costs little.
package cuda
