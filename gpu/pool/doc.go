// Package pool gives the GPU executor (package gpu, gpu/graphexec) its device memory from one of
// the three allocators the project compares on a GPU, all over the real CUDA driver (driver/cuda):
//
//   - "gmlake": the stitching engine (stitch.Engine) over driver/cuda's virtual memory calls;
//   - "gorgonia": the algorithm of Gorgonia's default GPU pool (baseline.FirstFit: one arena taken up
//     front with a single cuMemAlloc, address-ordered first fit, split and coalesce), the arena being
//     the capacity;
//   - "direct": cuMemAlloc/cuMemFree per tensor (baseline.Direct), no pooling.
//
// Each is a Pool: a gpu.Allocator that also reports what the comparison needs (reserved bytes and
// their peak, driver calls) under one capacity, so "the largest batch under 40 GiB" means the same
// for all three.
package pool
