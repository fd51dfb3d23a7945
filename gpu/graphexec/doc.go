// Package graphexec runs the project's transformer graphs (package models: Gorgonia graphs of the
// ops in models/ops, plus Gorgonia's gradient sums, the loss seed and a reshape) on a GPU through
// package gpu, every buffer from the Device's allocator (gmlake's engine over driver/cuda).
//
// # Lowering
//
// Describe maps each node's op to a Desc: what it computes, with its parameters. The models/ops
// kernels are unexported types, so Desc is read from each op's String(), which prints every
// parameter because Gorgonia hashes ops by it (models/ops documents that contract); a test pins
// every form the models produce. Describe is pure Go and needs no GPU. An op it does not know is an
// error at New, never a silent CPU fallback: device memory is not host-readable.
//
// # Execution
//
// A Machine compiles the graph once (topological order, inputs of each node, the last instruction
// that reads each buffer) and runs it each step on the Device's one stream: inputs are uploaded (or
// bound to resident device tensors with Bind, as trained parameters should be), each op writes a
// fresh tensor from the allocator, and every buffer returns to the allocator right after its last
// reader; a reshape is a view sharing its input's buffer. Requested outputs stay live until the
// next Run or Close. Temporaries an op needs (row statistics, per-row losses, index vectors) come
// from the same allocator and die within the op, as they would in an eager framework.
//
// The run is a program of load, exec, offload and restore steps compiled by package train/plan,
// which train/vm shares (this package adds only the device work of each step): with forward roots
// and the models' blocks (NewTrainer sets both), WithRecompute drops each block's inner forward
// values after their last forward use and runs the block's forward again right before backward
// first needs them; WithOffload copies each block's saved values to pinned host memory
// (asynchronously, on the one stream) after the block's forward, frees them, and restores them into
// fresh buffers before backward first reads them. Both only move or repeat deterministic
// computations, so losses match the plain program's. Values are released per instance, and a
// buffer (shared by a node and its reshapes) returns to the allocator with its last value.
//
// # Building
//
// The package builds with a plain `go build`: the project's CUDA code uses no build tag and no
// cgo, so it never sets gorgonia.org/gorgonia's own `cuda` tag (Gorgonia's CUDA engine, which
// needs cuDNN 8 headers), and Gorgonia's CPU engine is the one compiled in beside it.
package graphexec
