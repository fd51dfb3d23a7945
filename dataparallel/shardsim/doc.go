// Package shardsim generates, by simulation, the allocation trace one rank of a data-parallel
// ZeRO fine-tuning job sends to its device's allocator, so that allocators can be compared as the
// world size N grows without N GPUs. It is a model of the step, not a recording: the traces in
// ../shared/traces were recorded from PyTorch on one GPU; these are derived from first principles
// (the tensors a step must hold, and when they die) for the same model shapes (models.Preset).
//
// # What one rank allocates
//
// Mixed precision as DeepSpeed's bf16 mode runs it: bf16 working parameters, gradients and
// activations; an fp32 master copy and fp32 AdamW moments of the rank's shard. The trainable
// parameters are laid out as package dataparallel/zero does (one flat buffer, padded to N × 128
// elements, cut into N equal shards); with LoRA only the adapters (rank 16 on the attention
// projections: GPT-2's c_attn, Llama's q and v) are trainable and the base stays frozen in bf16.
//
// Setup, before the first iteration marker: stages 1 and 2 build the model parameter by
// parameter, flatten the trainable ones into one buffer and free the originals; stage 3 holds only
// its shard of every parameter (as deepspeed.zero.Init builds it). Then the fp32 master shard.
//
// Each step draws a padded sequence length (a multiple of 8 in [SeqMin, SeqMax], per rank, seeded)
// and runs:
//
//   - forward over segments — embedding, each transformer block, head — as op lists whose
//     outputs are allocated and freed at their last use; an op keeps for backward what PyTorch's
//     autograd keeps (a matmul its input only when its weight is trained, norms their input and
//     fp32 statistics, flash attention its inputs, output and log-sum-exp, GELU/SiLU their
//     inputs, log-softmax its fp32 output). The head computes bf16 logits, upcasts them to fp32
//     and keeps the log-softmax for the loss's backward. With Recompute, blocks run without
//     keeping anything but their input (the checkpoint) and are run again, keeping, just before
//     their backward;
//   - backward in reverse: input gradients allocated at their first contribution (later ones
//     accumulate in place) and freed after the producing op's backward; flash attention's fp32 dQ
//     workspace; bf16 parameter gradients allocated when first produced;
//   - gradient reduction: stage 1 keeps every parameter gradient to the end of backward,
//     all-reduces them through a bucket, copies the rank's shard to an fp32 gradient shard and
//     frees them; stages 2 and 3 copy each gradient, as soon as its last use has run, into a
//     contiguous bucket (DeepSpeed's contiguous_gradients buffer, reduce_bucket_size elements,
//     default 5e8, capped at the model's trainable size) and free it; a full bucket is
//     reduce-scattered: the rank receives the part of its shard the bucket holds in a bf16 staging
//     buffer and adds it into its fp32 gradient shard, allocated at the first reduction;
//   - stage 3 only: before each segment's forward, and again before its backward (with its
//     recomputation), the segment's parameters are all-gathered into a bf16 staging buffer,
//     freed after;
//   - the optimizer step on the shard: AdamW's moments allocated at the first step (PyTorch creates
//     optimizer state lazily), a shard-sized temporary for the update's denominator, then the
//     gradient shard is freed. The updated shard is cast into the bf16 parameters and
//     all-gathered in place (no allocation) at stages 1 and 2.
//
// # What is left out
//
// Offload, dropout masks, the pinned host side, CUDA graph pools, NCCL's own buffers (NCCL
// allocates its channels' memory itself, outside the caching allocator) and the small allocations
// of PyTorch's bookkeeping. Everything is on stream 0 unless OverlapComm puts the communication
// buffers (stage-3 gathers, reduce-scatter staging) on stream 1, as DeepSpeed's overlap_comm does;
// the cross-stream waits themselves are not modelled (a buffer is freed when its last use is
// issued). Ranks differ only by their sequence lengths (each draws
// its own) and, at stages 2 and 3, by how much of each bucket falls into their shard.
//
// # Studies
//
// Study generates the trace of every rank (or an even sample, MaxRanks) for each world size and
// replays it through package bench's simulated allocators, reporting per (workload, N, allocator)
// the worst rank's peak active, peak reserved, fragmentation and minimum capacity. The command
// bench/cmd/shard-sim (make shard-sim) prints those rows and writes results/bench/SHARDING.md.
package shardsim
