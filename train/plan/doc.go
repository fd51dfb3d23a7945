// Package plan compiles the Gorgonia graph of one training step into the program both executors
// run: train/vm on the CPU and gpu/graphexec on the GPU. It decides the order of the steps, when
// each value dies, which activations are computed twice and which travel to host memory and back;
// it knows nothing about how a step is carried out (tensor engine, kernels, copies), and the
// executors know nothing about how the program was made.
//
// # Analysis
//
// Analyse sorts the graph (every node after its inputs) and records, per node index: its inputs in
// argument order, whether it is a leaf (an input, a parameter or a constant: memory the caller
// owns, never freed), whether it is a requested output, whether it belongs to the forward pass (an
// ancestor of a forward root; every node when there are no roots) and which transformer block it
// lies in. Only forward op nodes lie in blocks: a leaf is never dropped, so it can neither be
// recomputed nor make a block recompute.
//
// # Program
//
// Compile turns a topological order of nodes into a program of Load (bring a leaf's value in),
// Exec (run a node's op), Offload (copy a value to host memory and drop it) and Restore (copy it
// back into a fresh buffer) steps. The forward part (leaves and forward nodes) runs first, the
// backward part (gradients) after. Two rewrites, per block:
//
//   - Recompute: a block's forward values, except its input and outputs, are dropped after their
//     last forward read; right before the first backward step that reads one of them the block's
//     forward steps that produce them (closed over their block-internal inputs) run again.
//   - Offload: every forward value of a block that backward reads (with Recompute: only the block
//     input, the rest being recomputed) is offloaded after the block's forward, and the block's
//     whole group is restored before backward first reads one of them.
//
// CompileGathered adds a third: leaves grouped in units (ZeRO-3's sharded parameters) are loaded,
// a unit's members together, once before the forward steps that read them and once more before
// the backward steps (recomputations included), so that an executor gathers each unit for the part
// of the pass that reads it and frees it after.
//
// They only repeat or move deterministic computations, so the results are those of the plain
// program. With Prune, steps whose values nobody reads (and that are not kept outputs) are removed,
// repeatedly, since removing one may leave its inputs unread.
//
// # Release points
//
// A node's value may be produced more than once (a forward exec, then a restore or a recompute), so
// liveness is per value instance, not per node: a use analysis pairs every instance with the steps
// that read it, and each step's Release lists the nodes whose current instance dies right after it
// (after its last read, or right after production when nothing reads it). The last instances of
// outputs are never released. Executors count references per buffer on top of this, because a view
// (a reshape) shares its input's buffer: a buffer is freed when its last instance is released.
// Simulate replays a program the way an executor does and reports the peak of live bytes, or
// ErrNotLive when a step would read a value that is not live.
package plan
