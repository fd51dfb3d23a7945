// Package dataparallel is the multi-device side of gmlake: one stitching allocator per device, for
// data-parallel training where every rank (one per GPU) draws its activations, gradients,
// optimizer shards and communication buffers from its own device's pool.
//
// # Pools
//
// Pools holds one *stitch.Engine over its own stitch.Driver per device ordinal. A
// DriverFactory makes the driver of each ordinal: on a GPU machine cuda.New(cuda.WithDevice(i)),
// on the CPU several driver/host or driver/sim drivers, so that everything above the pools is
// tested without GPUs. Devices never share memory: a pool's engine only ever maps its own
// driver's chunks, which is what a CUDA device requires (physical memory of one GPU cannot back
// virtual addresses accessed as another's local memory). Each engine is safe for concurrent use,
// so one goroutine per rank may use its pool while others use theirs.
//
// Pools holds engines, not memory.Allocators (the Gorgonia adapter), so that the package does not
// depend on Gorgonia. A Gorgonia executor wraps an engine with vm-style Get/Free where it needs
// one (see dataparallel/zero).
//
// Per-device statistics (Stats) are the engines' own; Summary aggregates them the way a
// data-parallel job is judged: the largest per-device peak, since the fullest device decides
// whether the job fits.
//
// # Related packages
//
//   - dataparallel/zero: ZeRO-style partitioning of optimizer state (and gradients) across ranks, with a
//     data-parallel step over N in-process ranks whose collectives are done in Go;
//   - dataparallel/nccl: NCCL bindings (library opened at run time) for the same collectives on GPUs;
//   - dataparallel/gpudp: the data-parallel ZeRO-2 and ZeRO-3 trainer on several GPUs: one rank
//     per GPU, each on its own pool, gradients reduce-scattered over NCCL, at stage 3 the
//     parameters sharded and all-gathered per block into the rank's pool; dataparallel/cmd/dp-bench
//     measures it under gmlake, the Gorgonia pool and plain cuMemAlloc;
//   - dataparallel/shardsim: per-rank allocation traces of a ZeRO data-parallel fine-tuning step, by
//     simulation, for the allocator benchmarks (bench/cmd/shard-sim, make shard-sim).
package dataparallel
