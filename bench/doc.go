// Package bench answers "how much device memory does this training job need under allocator X?"
// by replaying real allocation traces through allocators on simulated devices.
//
// # Traces
//
// Load reads the text format of package trace or a PyTorch snapshot pickle
// (torch.cuda.memory._dump_snapshot), gzip'd or not, telling them apart by content; ReadSnapshot
// documents how snapshot events and iteration markers are recovered. Prepare compiles a trace
// (allocation ids to dense slots) so that a replay costs little beyond the allocator itself.
//
// # Allocators
//
// Everything replayed implements baseline.Allocator: the stitching engine (gmlake, over driver/sim
// here; gmlake-unmarked is the same engine not told where iterations begin) and the baselines of
// package baseline (gorgonia, caching, direct) over a baseline.SimDevice. SimSpec makes any of them,
// by its name in baseline.Names, fresh for a given capacity, with the cost of its driver calls
// metered (DriverLedger).
//
// # Figures
//
// Replay runs a prepared trace through one allocator; Measure runs it as often as the figures need
// and fills a Report:
//
//   - peak active: the peak of requested live bytes. It depends on the trace only, so it is the
//     one denominator for every allocator;
//   - peak reserved and fragmentation = 1 - peak active / peak reserved, with no capacity limit;
//   - minimum capacity: the smallest capacity, a multiple of the step (2 MiB), under which the
//     trace replays without out-of-memory, found by bisection between peak active (never enough)
//     and the uncapped peak reserved (always enough for an allocator that behaves the same until
//     it meets its limit), and above which the capacities of a scan over the next 2% of peak
//     active replay too (fitting is not monotone in capacity for every allocator: MinCapacity);
//     MeasureOptions.MaxProbes may stop a bisection early, and then it is an upper bound. A count
//     of replays, not a time, so the figure does not depend on the machine's load;
//   - driver calls: before the first iteration marker, per warm-up iteration (0 to SteadyFrom-1)
//     and per steady iteration (SteadyFrom on), and per kind for a CallCounter;
//   - novelty (Prepared.Needs, from the trace alone): an iteration is novel when its peak of live
//     requested bytes exceeds that of everything before it (the setup included) or it asks for a
//     block larger than any earlier request. Any allocator at near-zero fragmentation must call
//     the driver in a novel iteration; in the others (repeat iterations) a call is its own doing.
//     Steady calls per iteration are reported over each kind separately;
//   - forcing (IterationNeeds.Forced, ForcedPeak; from the trace alone): a lower bound that holds
//     for every allocator, whatever its policy. Issue 3's target is an uncapped fragmentation of at
//     most FragmentationTarget (0.02). An allocator that makes no driver call in steady iteration k
//     holds, when k begins, at least k's peak of live requested bytes P_k; on the trace cut just
//     before k its fragmentation is then at least 1 - P_prev/P_k, P_prev being the highest peak
//     before k (setup and earlier iterations). An online allocator cannot know whether the trace
//     ends there, so when P_k > P_prev/(1 - 0.02) every one that meets the target on every trace
//     must call the driver in k: k is forced. Forced iterations are novel (by a new peak), not the
//     reverse. Steady calls (and driver time) per iteration are reported over the forced
//     iterations and the others, where no allocator is bound to call;
//   - driver time (CostModel, DriverLedger): the simulated devices take no time, so each
//     allocator's successful driver calls are recorded with the bytes they cover and the physical
//     handles they touch (gmlake through a metering wrapper of its stitch.Driver that knows which
//     handle is mapped where, the baselines through a metering wrapper of their Device) and priced at the costs
//     measured on the project's H200 (H200: VMM calls per handle plus a part per byte, fitted to
//     the per-handle table of ../shared/GPU.md; cuMemAlloc/cuMemFree per call): estimated
//     milliseconds before the first iteration, in every iteration, the mean and the largest per
//     warm-up and per steady iteration, split as the calls are, and by call kind. It is an
//     estimate of what the same calls would cost on that GPU, not a measurement: cmd/gpu-replay
//     measures;
//   - the allocator's own time (Run.IterCPU): the replaying thread's CPU time in each iteration,
//     less the time inside metered driver calls, and per alloc+free pair over the steady
//     iterations (Report.SteadyNsPerPair), the figure set beside the Gorgonia pool's;
//   - convergence (MeasureConvergence): the trace's iterations replayed several times in a row
//     (trace.RepeatIterations; resident allocations made once), as the same shapes recur in a long
//     run: driver calls per iteration in the last repetition, and after how many repetitions one
//     made no driver call at all;
//   - ns per pair: wall time of the uncapped replay over the number of allocations;
//   - out-of-memory under a given capacity, and the event where it happened.
//
// Anchors (ReadAnchors) are PyTorch's own figures on the same traces, measured on a GPU, for the
// reports of cmd/gmlake-bench.
package bench
