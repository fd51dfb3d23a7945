// Package gpudp trains a transformer data-parallel on several GPUs of one host: one rank per GPU,
// each with its own gmlake pool (dataparallel.Pools over driver/cuda), its own copy of the graph
// executed by gpu/graphexec on its micro-batch, and ZeRO stage-2 sharding of the optimizer over
// NCCL (dataparallel/nccl). The GPU tests skip on machines with fewer GPUs than they need.
//
// # Memory layout per rank
//
// The trainable parameters live in one flat device buffer laid out by dataparallel/zero (padded to
// N × 128 elements, N equal shards); each parameter node of every graph is bound to a view of it,
// so the executor reads and the optimizer writes the same memory. Gradients are copied, after the
// backward pass, into a flat gradient buffer with the same layout. Each rank keeps only its
// shard's AdamW moments and reduced gradient. Frozen weights (LoRA) are resident per rank.
//
// # A step
//
// Ranks run forward and backward on their own micro-batches concurrently, one goroutine per
// device. Then, each collective issued for all ranks inside one NCCL group (from one goroutine,
// locked to its thread) on the devices' compute streams:
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
