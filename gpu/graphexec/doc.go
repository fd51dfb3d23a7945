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
// This is the GPU twin of train/vm's plain program; recomputation and offload (train/vm's program
// rewrites) are not applied here yet.
package graphexec
