// Package gpudp trains a transformer data-parallel on several GPUs of one host: one rank per GPU,
// each with its own gmlake pool (dataparallel.Pools over driver/cuda), its own copy of the graph
// executed by gpu/graphexec on its micro-batch, and ZeRO sharding over NCCL (dataparallel/nccl): stage 2
// (optimizer state and reduced gradients sharded) or stage 3 (parameters sharded too,
// Options.Stage). The GPU tests skip on machines with fewer GPUs than they need.
//
// # Memory layout per rank
//
// The trainable parameters live in one flat device buffer laid out by dataparallel/zero (padded to
// N × 128 elements, N equal shards); each parameter node of every graph is bound to a view of it,
// so the executor reads and the optimizer writes the same memory. Gradients are copied, after the
// backward pass, into a flat gradient buffer with the same layout. Each rank keeps only its
// shard's AdamW moments and reduced gradient. Frozen weights (LoRA) are resident per rank.
//
// # ZeRO-3
//
// At stage 3 no rank holds all parameters. They are grouped into units (zero.Units): one per
// transformer block, holding the parameters its forward reads, and one for the rest (embeddings,
// final norm, head). Each unit is laid out and padded on its own and every rank keeps only its
// shard of each, the shards end to end in one buffer with the gradient shard and AdamW moments of
// the same length. The parameter nodes are not bound: the rank is the graph's graphexec.Gatherer
// (WithGather, one group per unit), so the compiled program (package plan's CompileGathered) loads
// a unit once before the first forward step that reads it and again before its backward (its
// recomputation included). The first load all-gathers the unit from every rank's shard into a
// buffer from the rank's own pool; the buffer goes back to the pool when the last of the unit's
// parameters is released, after the pass's last read: each unit is gathered twice per step, and
// at most the unit outside blocks and one block are gathered at once. After backward the rank
// reduce-scatters its gradients unit by unit through a unit-sized staging buffer from its pool
// into its gradient shard; the norm and AdamW then run on the shards as at stage 2, and no
// all-gather of parameters follows (the next step gathers what it reads). The gradients
// themselves are the executor's outputs, so they stay live to the end of backward, as at stage 2.
//
// # A step
//
// Ranks run forward and backward on their own micro-batches concurrently, one goroutine per
// device (at stage 3 each rank's goroutine issues its own gathers and reduce-scatters, in the
// same order on every rank). Then, at stage 2, each collective issued for all ranks inside one
// NCCL group (from one goroutine, locked to its thread) on the devices' compute streams:
//
//   - reduce-scatter (sum) of the flat gradient into the rank's gradient shard, scaled by 1/N on
//     the device;
//   - the squared norm of each shard (SumSquares), all-reduced, so AdamW clips by the global norm;
//   - AdamW (gpu's kernel) on the rank's shard of the flat parameters;
//   - all-gather of the updated shards, in place, into every rank's flat parameters.
//
// The arithmetic is dataparallel/zero's, which the CPU tests prove equal to the unsharded optimizer; the
// GPU tests compare N ranks against gpu/graphexec's single-GPU Trainer on the whole batch.
package gpudp
