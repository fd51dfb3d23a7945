// Package gmlake is a GPU memory allocator that fights fragmentation by virtual memory stitching
// (GMLake, ASPLOS'24), for Gorgonia workloads.
//
// A caching allocator keeps freed blocks for reuse, and fragments: after a while no single free
// block is large enough for a request although together they would be. GMLake keeps physical memory
// in granularity-sized chunks and, when no free block fits, maps the chunks of several free blocks
// back to back under a fresh virtual address range: a stitched block, contiguous to the program,
// built without copying or allocating memory. The algorithm lives in package stitch; the device in a
// stitch.Driver (driver/cuda for CUDA's virtual memory management, driver/host for real host memory
// through memfd and mmap, driver/sim for accounting only); package memory adapts the engine to
// Gorgonia.
//
// This package is the entry point: NewAllocator builds a driver and an engine from functional
// options and returns a *memory.Allocator, which has Gorgonia's cuda.Arena method set (Get, Put,
// ResetAllocator) plus an error-returning Free, Stats, Check, EmptyCache and Close. NewTensorEngine
// returns a gorgonia.org/tensor Engine over host memory, for tensor.WithEngine and
// gorgonia.WithEngine. ResetAllocator frees nothing (no allocator can tell whether a tensor still
// reads a block); with Gorgonia's TapeMachine, wrap the engine in memory.NewReclaimer and call its
// Reclaim(graph, machine, solver) after each step, or train with train/vm, which frees every buffer
// at its last use.
//
// Without WithDriver the default driver is used: the CUDA driver on a machine with a GPU,
// otherwise the host driver. Every build has both (no build tag, no cgo: the CUDA driver library
// is opened at run time), so one binary picks the GPU wherever there is one. WithHostMemory asks for
// the host driver whatever the machine, for memory the CPU computes on (train/vm).
//
// The defaults suit GPU-sized jobs (2 MiB chunks); for a small job on host memory, WithJobSize(peak
// bytes) scales the granularity and the small threshold to it (a 49 KB MLP: fragmentation 0.977 ->
// 0.077).
package gmlake
