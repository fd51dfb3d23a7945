// Package vm executes Gorgonia expression graphs with every tensor buffer taken from, and returned to,
// a caller-supplied allocator, so that the allocator sees the true allocation pattern of training.
//
// Gorgonia's own machines cannot do that (../../shared/GORGONIA.md): the TapeMachine sends only a fraction
// of its buffers through a custom engine, never frees, and discards everything on Reset. A Machine
// instead compiles the graph once into a program of instructions and runs it each step:
//
//   - Exec(n) runs n's op. Where the op implements gorgonia.UsePreallocDoer the output is written into a
//     zeroed buffer from the allocator; otherwise op.Do runs and its (Go heap) result is copied into an
//     allocator buffer. A result that points into one of its inputs (Reshape, a slice view, Iop) is an
//     alias: it shares the input's buffer instead of getting one.
//   - Offload(n) copies n's value to host memory and drops the device instance; Restore(n) copies it back
//     into a fresh buffer before its next use.
//
// The program comes from package plan, which the GPU executor (gpu/graphexec) shares: the forward
// part (ancestors of the forward roots, in topological order) followed by the rest (the backward
// part, gradients), with steps whose results nobody reads pruned, every value instance
// released right after the last step that reads it, and, per transformer block as described by
// Blocks, the two memory techniques:
//
//   - Recompute: a block's forward values, except its input, are dropped after their last forward use;
//     before the first backward instruction that needs any of them the block's forward is run again.
//   - Offload: the block's forward values that backward needs (with Recompute: only the block input)
//     are offloaded after the block's forward and restored before backward first needs them.
//
// Both techniques only move or repeat deterministic computations, so losses and gradients are
// bit-identical to the plain program's. Leaves are not in the program: the Machine reads them in
// place. Buffers are reference counted per buffer, not per node, because aliases share one buffer:
// a buffer returns to the allocator when its last instance is released. Values of the requested
// outputs stay live until the next RunAll, Reset or Close.
//
// # A graph of one's own
//
// A graph differentiated with gorgonia.Grad trains as it is: the gradient of every leaf Grad
// differentiated is an output (WithGradients), the forward pass is found (the differentiated nodes
// nothing differentiated reads: the loss), and without WithOutputs the loss and the graph's roots
// are outputs. Machine.Grad reads a learnable's gradient, and Gorgonia's solvers take the
// learnables through Machine.ValueGrads (gorgonia.NodesToValueGrads needs dual values, which only
// Gorgonia's own machines bind):
//
//	m, _ := vm.New(g, alloc, vm.WithBlockBoundaries(x, h1, h2), vm.WithRecompute(true))
//	for range steps {
//		m.RunAll()
//		solver.Step(m.ValueGrads(learnables...))
//	}
//
// WithBlockBoundaries divides the forward pass into blocks by naming each block's input (the
// activation between layers); WithBlocks does it node by node. Recompute or Offload without
// blocks, or without a forward pass, fails New with ErrBlocks rather than doing nothing. An
// Allocator of device memory fails New with ErrDeviceMemory: the Machine computes on the CPU.
// examples/quickstart is a complete program.
//
// Scalars (shape ()) are small Go values and take no buffer. Leaves (inputs, parameters, constants)
// belong to the caller and are never freed.
package vm
