// Package baseline holds the allocators gmlake is measured against, behind the one interface every
// comparison in this module uses (Allocator), with the one table of their names (Names, New):
//
//   - gorgonia (FirstFit): the algorithm of Gorgonia's default GPU pool, a fixed arena with
//     address-ordered first fit, reimplemented without its bugs;
//   - caching (Caching): PyTorch's native caching allocator in its default mode;
//   - direct (Direct): one device allocation per request, the floor for fragmentation and the
//     ceiling for device calls;
//   - gmlake and gmlake-unmarked (GMLake): the stitching engine of package stitch adapted to the same
//     interface, with and without being told where training iterations begin.
//
// The baselines draw memory from a Device: SimDevice (addresses only, for simulation) here,
// cuMemAlloc/cuMemFree in the GPU tools. They count their own Device calls, so a Device need not.
// FirstFit and Caching keep their free blocks in a treap (internal/treap) ordered by address or by
// (size, address), so first fit and best fit both take O(log n).
//
// Package bench replays allocation traces through these allocators on simulated devices and adds
// the estimated cost of their device calls; gpu/pool and the data-parallel trainer run them on GPUs.
package baseline
