// Package gpu runs the project's training math on an NVIDIA GPU, on device memory from a gmlake
// allocator: float32 tensors, the project's own CUDA kernels (elementwise ops with broadcasting and
// comparisons, strided assign/accumulate between views, reductions, softmax along any axis, causal
// softmax, LayerNorm/RMSNorm, GELU/SiLU/SwiGLU, RoPE, embedding gather/scatter-add, fused softmax
// cross-entropy, dropout, AdamW with gradient-norm clipping), and matrix
// products through cuBLAS. It is part of every build (no build tag, no cgo, no CUDA headers): on a
// machine without a GPU, New returns an error wrapping ErrUnavailable.
//
// # Libraries, all opened at run time
//
// The driver (libcuda.so.1, override GMLAKE_LIBCUDA) is the one internal/libcuda opens for
// driver/cuda too, and gorgonia.org/cu is not imported: cu calls cuInit in its package init and
// exits the process when that fails, so no binary importing it can start on a machine without a
// GPU, and its Function.Launch copies every kernel argument as 8 bytes. cuBLAS (package
// gpu/cublas, GMLAKE_CUBLAS) and NVRTC (package gpu/nvrtc, GMLAKE_NVRTC) are opened by a list of
// sonames (CUDA 11 to 13), so one binary runs with whatever CUDA libraries the GPU machine has.
// All are called without cgo, through internal/dl.
//
// # Kernels
//
// The CUDA C++ sources live in package gpu/kernels. A Device compiles a source with NVRTC for its
// own architecture (compute_XY of the device) the first time one of its kernels is used, loads the
// PTX as a module and caches the functions; the PTX is also cached per process, keyed by source and
// architecture, so several Devices (or a reopened one) compile each source once.
//
// # Execution model
//
// A Device owns one CUDA stream: every kernel, cuBLAS call and asynchronous copy is queued on it in
// program order, so operations need no synchronisation among themselves; reading results on the
// host (ToHost) or Synchronize waits for the stream. Device memory comes from an Allocator (the
// stitch.Engine over driver/cuda in production, plain cuMemAlloc by default) and is allocated with
// the Device's stream, so the engine may reuse a freed block for later work on the same stream
// without waiting. Package gpu/pool builds the three allocators the project compares on a GPU
// (gmlake, the Gorgonia pool algorithm over one cuMemAlloc arena, direct cuMemAlloc) under one
// capacity; gpu/cmd/gpu-train compares them on fine-tuning runs (results/gpu-train/RESULTS.md).
//
// Tensors are row-major float32 arrays with explicit strides (in elements). Operations write into
// a caller-provided output tensor, as Gorgonia's UsePreallocDo does, so the executor decides where
// every buffer comes from and when it dies; most kernels want contiguous operands (Contiguous says
// which) and Copy materialises any strided view (transposes, permutations, broadcasts).
//
// Contexts: the Device uses the device's primary context, the one driver/cuda and the CUDA runtime
// (hence cuBLAS) use, so pointers from an engine over driver/cuda are valid here. Each driver call
// makes that context current on its OS thread for its duration; cuBLAS calls run with the goroutine
// locked to its thread and the context current.
package gpu
