// Package zero partitions a data-parallel optimizer across ranks the way ZeRO (Rajbhandari et
// al., SC'20; DeepSpeed stages 1 and 2) does, and runs the data-parallel step with N in-process
// ranks whose collectives are done in Go, so the sharded arithmetic is tested on a CPU.
//
// # Layout: one flat buffer, cut into equal shards
//
// As DeepSpeed does, the trainable parameters are laid end to end in one flat buffer, in a fixed
// order every rank agrees on; the buffer is padded with zeros to a multiple of ranks × Align
// elements and cut into ranks equal, contiguous shards. Rank r owns shard r: the optimizer state
// (AdamW's two moments) of exactly those elements lives on rank r only, so optimizer memory per
// rank is 1/N of the whole. A parameter may straddle a shard boundary; ownership is per element,
// not per parameter (Layout.Pieces says which parts of which parameters a rank owns). Per-element
// ownership keeps shards equal whatever the parameter sizes, which per-parameter ownership cannot
// (one embedding matrix can be most of a model), and it is what makes reduce-scatter and
// all-gather apply: both need equal blocks at rank offsets.
//
// # Stage 3: units
//
// Stage 3 partitions the parameters too. Units lays them out per unit (a transformer block's
// parameters, and the rest), each unit padded and cut into equal shards of its own, so that a unit
// can be all-gathered from the ranks' shards for the part of a pass that reads it and its gradient
// reduce-scattered back; a rank's shards of all units lie end to end in one buffer. Group runs
// stages 1 and 2 in process; dist/gpudp runs stages 2 and 3 on GPUs over NCCL.
//
// # The step
//
// Every rank computes gradients on its own micro-batch into a flat gradient buffer with the same
// layout. Then (Group.Step):
//
//   - Stage 1 (optimizer state sharded): the full gradient is all-reduced (sum) on every rank and
//     each rank reads its shard of it.
//   - Stage 2 (gradients sharded too): the gradient is reduce-scattered, so each rank receives
//     only the summed shard it owns; a rank never holds the whole reduced gradient.
//
// Both divide by N (the mean over ranks, as data parallelism with a mean loss needs). Gradient
// clipping needs the global norm: each rank sums the squares of its shard in float64 and those
// partial sums are all-reduced. Each rank then runs AdamW on its shard of the parameters and the
// updated shards are all-gathered so that every rank again holds all parameters for the next
// forward pass.
//
// The in-process collectives (HostCollectives) add contributions in rank order, element by
// element, so every rank gets bit-identical sums, as NCCL guarantees for its results, and stages
// 1 and 2 produce identical parameters. On GPUs the same calls map one to one onto dataparallel/nccl
// (AllReduce, ReduceScatter, AllGather on the flat buffers).
//
// The optimizer is train's AdamW (decoupled weight decay, clipping of the global norm), rewritten
// over float32 slices with the same operations in the same order: with one rank it reproduces
// package train's updates bit for bit (see the tests, which also check N ranks on micro-batches
// against one trainer on the whole batch of a tiny GPT-2).
package zero
