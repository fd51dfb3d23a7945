// Package graphexec runs Gorgonia graphs on a GPU through package gpu, with every buffer from the
// Device's allocator (gmlake's engine over driver/cuda). It runs two kinds of graph:
//
//   - the project's transformer graphs (package models: the ops in models/ops, plus Gorgonia's
//     gradient sums, the loss seed and a reshape);
//   - a user's own graph of Gorgonia's standard ops and the gradients gorgonia.Grad builds for
//     them;
//   - the project's convolutional networks (models.BuildResNet): Conv2d and its backward-data and
//     backward-filter, batch norm, pooling, ReLU, the global average pool and the classification
//     loss run through cuDNN (package gpu/cudnn, loaded at run time) on the Device's stream
//     (describe_cnn.go, lower_cnn.go). Each convolution takes the workspace its algorithm needs
//     from the Device's allocator for the call and returns it right after (Machine.Workspaces
//     counts them), so the allocator, and a trace recorded there, sees every workspace. Batch
//     norm's backward pass runs on package gpu's kernels, the loss on its fused cross-entropy.
//     WithCuDNN shares one handle between Machines; WithConvMath picks exact float32 (the
//     default) or TF32 convolutions.
//
// The standard ops are matmul, batched matmul, matrix-vector, dot and outer products; elementwise
// Add, Sub, HadamardProd, HadamardDiv and Pow with a scalar on either side; the broadcasting forms
// (Reshape plus Repeat, which Broadcast* build); comparisons with retSame; every elementwise
// function (Rectify is a comparison and a product, Sigmoid, Tanh, Exp, Log, Neg, Square, Sqrt,
// Inverse, Softplus, ...); Sum, Max and Mean over any axes; SoftMax and LogSoftMax and their
// gradient op; Reshape, Transpose, Slice and its gradient (sliceIncr), Concat, SizeOf, Dropout and
// its gradient, and constant scalars and tensors. MLPs, classifiers and transformer blocks are
// built from these (results/gpu-graphs: trained on an H200, they match Gorgonia's TapeMachine
// within float32 rounding).
//
// # Lowering
//
// Describe maps each node's op to a Desc: what it computes, with its parameters. The models/ops
// kernels are unexported types, so Desc is read from each op's String(), which prints every
// parameter because Gorgonia hashes ops by it (models/ops documents that contract); a test pins
// every form the models produce. Gorgonia's own ops are read the same way, from their String()
// and Go type; only the dropout probability, which String() omits, is read from the op's field.
// CheckGraph describes every node and checks that it computes float32. Compile runs it first: an op
// it does not know, a comparison with a boolean result or a float64 graph is an
// *UnsupportedOpError naming the node and the op (errors.Is ErrUnsupported), before anything
// runs. There is never a silent CPU fallback, because device memory is not host-readable. All of
// this is pure Go and needs no GPU.
//
// The standard ops are lowered once, generically, onto a small set of array primitives: views
// (reshape, permute, narrow, broadcast), strided assign and accumulate, elementwise kernels,
// one-axis reductions, softmax along an axis, GEMM and dropout. The Machine runs the primitives
// on the Device. The tests run the same lowering on host slices against Gorgonia's own ops. They
// check views, axes and broadcasting on any machine, and they train both user graphs step for
// step against the TapeMachine. Softmax along an axis uses one thread per line, in the CPU
// engine's order, so it agrees with the CPU to the rounding of expf. Dropout's mask is drawn on
// the host by the graph's own op (its random source, run on ones), so the GPU draws what the CPU
// would. Its gradient is Gorgonia's dropoutDiffOp, which divides by the drop probability.
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
