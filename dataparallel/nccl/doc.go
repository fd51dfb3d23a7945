// Package nccl binds the NCCL calls a data-parallel trainer needs: unique ids and communicator
// setup (ncclGetUniqueId, ncclCommInitRank, ncclCommInitAll, ncclCommDestroy), the collectives of
// ZeRO-style training (ncclAllReduce, ncclReduceScatter, ncclAllGather), group calls and error
// strings. It is part of every build: no build tag, no cgo, no NCCL or CUDA header.
//
// # Loading
//
// NCCL is opened at run time, never linked: its soname (libnccl.so.2) and location differ between
// machines, and a binary linked against it would not even start where it is missing. Open tries
// $GMLAKE_NCCL when set, else Candidates (libnccl.so.2 and libnccl.so on the default path and
// under the usual CUDA folders). The driver library (libcuda.so.1, or $GMLAKE_LIBCUDA) is opened
// too, through internal/libcuda, for the two context calls that InitRank needs. Failing to open
// either is an *OpenError wrapping ErrUnavailable, so callers fall back and tests skip on machines
// without NCCL. The few types used (ncclResult_t, ncclComm_t, ncclUniqueId, the data type and
// reduction enums) are declared here with NCCL's ABI, which has been stable across NCCL 2.x.
//
// The loading and calling is the project's shared loader (internal/dl, no cgo); this package
// wraps the loader's *OpenError or *SymbolError with ErrUnavailable. ncclCommInitRank takes the
// 128-byte ncclUniqueId by value, so it is called through a typed function (dl.Library.Func) that
// passes the struct as the platform's C ABI does.
//
// # NVLink multicast
//
// Open sets NCCL_NVLS_ENABLE=0 in the process environment before NCCL reads it, turning NVLink
// SHARP / multicast off (it reserves large multicast buffers and needs fabric-manager support that
// shared machines often lack). WithNVLS(true) leaves the variable alone.
//
// # Devices, threads and groups
//
// Addresses are device pointers as uintptrs (from a gmlake engine over driver/cuda, or from
// cuMemAlloc) and streams are CUstreams as uintptrs; 0 is the default stream. InitAll creates one
// communicator per listed device in one call (one process driving several GPUs, the natural shape
// of a Go trainer). InitRank joins a communicator of nranks ranks as one of them, on the device
// whose CUcontext is given (driver/cuda's Driver.Context), which it makes current for the call:
// NCCL picks the device from the calling thread's current context. Without a group, InitRank
// blocks until every rank has joined, so ranks call it from their own goroutines.
//
// NCCL's group state is per OS thread, and Go moves goroutines between threads: Group runs a
// function between ncclGroupStart and ncclGroupEnd with the goroutine locked to its thread. Use it
// to issue one collective per communicator from a single goroutine, as NCCL requires when one
// thread drives several devices.
//
// # Testing without GPUs
//
// testdata/fakenccl.c implements NCCL's API over host memory (ranks in one process, float32
// collectives matched by issue order, groups issued at ncclGroupEnd, InitRank rendezvous) and the
// two driver context calls. The tests compile it with the machine's C compiler ($CC, else cc) and
// open it as NCCL and as the source of those two calls, so argument passing, data types, reductions, groups, InitRank from goroutines and the
// error path run in CI; the GPU tests (two or more GPUs) run the same calls on gmlake memory.
//
// # Errors
//
// A failed call is an *Error carrying the call's name, the ncclResult_t and NCCL's own message
// (ncclGetErrorString); it wraps ErrNCCL and the sentinel of its result (ErrInvalidArgument,
// ErrInvalidUsage, ErrSystem, ...), so errors.Is tests either.
package nccl
