// Package stitch is the GMLake engine: a caching allocator of device memory that defragments by
// virtual-memory stitching (GMLake, ASPLOS'24). It knows nothing of CUDA, cgo or Gorgonia; a Driver
// (driver.go) gives it physical memory, virtual ranges and mappings.
//
// # Physical memory: the arena
//
// Physical memory comes from the driver as handles (one Create each), multiples of Granularity
// bytes (G, 2 MiB on CUDA). A growth's handles are sized to the headroom: the largest power-of-two
// multiple of G within 1/8192 of the bytes the capacity still allows, at most 1 GiB (handleUnit,
// tunables.go), so 8 or 16 MiB for a job far from the capacity of an H200 and one chunk near it.
// Once the engine has seen a whole iteration (a memo remembered: at the caller's second mark, or
// never marked at the second beginning the finder finds), what a growth lacks is a new
// peak's excess and is made as one handle, within 1/1024 of that headroom (deficitUnit), so that
// a new peak costs a few VMM calls; such a growth also makes, ahead of the iteration's next
// requests, as much as the iteration has grown so far, within the same bound (peakAhead, growth.go),
// so that a new peak of many requests grows in a few ever larger handles rather than one per
// request. Once a whole iteration is known (the caller has marked one; never marked, the
// iteration finder has found one beginning where the live bytes lie a quarter or more below their
// peak, a step's activations freed: wholeIterationKnown) the bound follows how scarce memory is:
// the headroom times its share of the capacity over 256 (deficitBytes), larger far from the
// capacity and smaller near it. Until an iteration is seen (the job's setup and first iteration,
// marked or not), far from the capacity a growth makes at least 1/128 of the headroom but no more
// than the memory held (firstAhead, growth.go), so that the job's memory is built in a few growths
// rather than one per request (WithExactGrowth turns it off), and a handle may hold the headroom
// times its own share of 128 TiB where that is more and no more than the memory held
// (firstHandleBytes: 128 MiB handles on an H200, the headroom share under a 16 GiB room), so that
// a large device builds a job far below it in few handles. Each run of handles of one size ends
// short, and a short end under a quarter of the size joins the handle before it (cutRun,
// shortTailShare: a new peak makes one handle per growth instead of two; the largest steady
// iterations summed 26.1 -> 23.6 ms marked on the 46 trace files, the same targets met).
// WithHandleSize fixes one size instead.
// At New the engine reserves one virtual range as large as the capacity (the arena) and maps every handle it
// creates, whole, at fixed slots of it (one slot per chunk of G bytes), for as long as the handle
// lives. So an arena offset names a physical byte: a free range, a block's bytes and a stitched
// block's pieces are all ranges of arena offsets, and "no byte is used by two live blocks" is a
// statement about disjoint ranges. Slots emptied by EmptyCache are filled first, so the arena never
// grows. Creating memory is one Create and one Map per handle and one SetAccess per run of
// consecutive slots (arena.go). Every VMM call costs per handle it touches (../GPU.md), so what an
// iteration costs in the driver is the number of handles it creates, maps, makes accessible and
// unmaps.
//
// # Handles are never re-cut
//
// A handle keeps the size it was made with until it is released. Re-creating handles around the
// blocks carved from them, so that free memory would stay whole handles and a stitch would map one
// handle per block, costs a Create per part, an Unmap, a Release (per byte: 0.57 ms per GiB on an
// H200) and a Map per part at every carve, and measured on the 39 traces it costs far more driver
// time than the cheaper stitches save (tunables.go, "Handles re-cut to the blocks"); the engine
// sizes handles when it grows instead (growth.go).
//
// # Blocks, views, and the three places a free byte can be
//
// A block is what Alloc returns: a pointer, a size rounded to 512 bytes, and physical bytes.
//
//   - A primitive block is a range of the arena; its pointer is an arena address, so it costs no
//     driver call however it was carved.
//   - A stitched block is a window of a view. A view (view.go) is a freshly reserved virtual range
//     mapping whole handles one after another, each from its offset 0 (cuMemMap maps nothing
//     else), so that its pieces, arena ranges of which only the first may start inside a handle
//     and only the last may end inside one, read as one contiguous range. Because whole handles
//     are mapped, a block can start in the unused tail of another block's last handle: the
//     rounding of every block to whole chunks (up to 2.3% on real traces) is not paid; but free
//     bytes in the middle of a handle cannot join a view. A handle may be mapped under the arena
//     and under several views at once (twice in one view when its tail is the first piece and its
//     head the last); only the bytes blocks own must be disjoint. Several blocks may use disjoint
//     windows of one view.
//   - Small blocks (below the small threshold, 256 KiB) are carved from pages (eight times the
//     threshold rounded up to G: 2 MiB by default, one 64 KiB chunk for an 8 KiB threshold over
//     64 KiB chunks; WithSmallPageSize sets it), large blocks that the small pool takes where the
//     followed memo had a page; once large requests' places are remembered (the recent memos,
//     or unmarked every context), outside all of them, else in new memory grown 16 pages at a
//     time, all 16 joining the small pool (pageaway.go); else
//     where a page lay before, else from the lowest free range that holds one (the highest once
//     iterations are marked, away from the large blocks of new shapes), else from the large pool
//     like any request (so a page may itself be stitched); small blocks are never stitched. A small
//     request that no page's free range holds first flushes every cached small block, so that
//     best fit sees the pool coalesced (flushSmallPool, flush.go). A page whose
//     blocks are all free is given back only when a large request lacks memory that the capacity
//     does not allow to create: pages given back and made again land elsewhere, and their cached
//     small blocks are lost.
//
// Every physical byte is, at any moment, in exactly one of: a live block (a page counts as live
// while the small pool holds it); a cached block, freed and kept whole for a request of its exact
// size on its stream; the loose set, coalesced free ranges indexed by address and by size. An
// owner index maps arena ranges to the large blocks holding them. The address indexes are B+ trees
// of wide nodes and the size indexes treaps (tree.go says why).
//
// # Three layers: the layout core, the block cache and the policy
//
// The Engine embeds the block cache (cache.go), which embeds the layout core (layout.go); each
// layer's methods reach the layers below it and nothing above, which the compiler holds them to:
// a method of a lower layer has no way to name a field of a higher one.
//
//   - The layout core (78 methods): the handles and the arena, the free set, the block and owner
//     indexes, the room index, views and pages. Only its methods carve a block (carve.go), grow
//     or release a handle (arena.go), map or unmap a view (view.go), lend a page (small.go) or
//     give a driver object back (orphans.go); its rules of Check are in layoutcheck.go.
//   - The block cache (27 methods): the free lists of freed blocks by size and stream, the age
//     lists flushing walks (flush.go), streams and events (streams.go), EmptyCache's release.
//   - The policy, the Engine's own (103 methods): Alloc and Free, the growth rules (growth.go),
//     the memos, homes, contexts and the iteration finder, and the placement chain (chain.go) that
//     reads them to choose which place the layout takes.
//
// Who owns each byte, and who may change it, is written where the data is, field by field
// (layout.go, cache.go, engine.go, block.go, view.go), each with the functions that write it and
// the rule of Check that covers it. Every constant that steers the policy is in tunables.go, with
// what it steers and what it was measured to win.
//
// # Allocation: the placement chain
//
// A request that misses the exact path is placed by a chain (chain.go): an ordered list of
// sources, each of which only proposes a place (a home: bytes of the arena or a window of a view;
// or free pieces to stitch under a new view) and changes no memory, and one take that makes the
// first proposal a block. A step that must change something before its source can propose says
// so: it makes room (flushing cached blocks), and its source proposes from what is left. The order,
// as largeChain lists it:
//
//  1. the place the followed memo gives this request (memo.go); then the flush a new shape owes
//     after a dominating iteration, paid here rather than inside the lookup that found it
//     (dominate.go);
//  2. unmarked, a home (homes.go); marked, the memos place what repeats, and the rest goes on to
//     the best-fitting loose range;
//  3. the best-fitting loose range;
//  4. a run of loose bytes in a view;
//  5. in a new shape, room made by flushing every cached large block, then the lowest loose range
//     that fits (shape.go);
//  6. the idle window that flushes the fewest cached bytes (idle.go): in the arena, and in the
//     views only where the arena holds none;
//  7. loose pieces stitched under a new view, else idle pieces (flushing only what they cover);
//  8. room made by flushing cached large blocks until a loose range fits, then that range;
//  9. new memory (placeInNewMemory): empty pages given back where the capacity leaves no room for
//     the deficit, else the deficit grown, with several streams a wait for the device once where
//     the driver has no more; after each, loose memory proposes again.
//
// What each step wins, measured by taking it out alone (gmlake-bench replay --min-capacity
// --repeat 4, the H200's costs, the 46 trace files of ../shared/traces and testdata/heldout*, on
// 2026-12-07; the targets of the bench: capacity within min(1.01, expandable segments' figure),
// the largest steady iteration's driver time within 1% of PyTorch's step, the largest warm-up
// one's within 10%, 0 calls in the fourth repetition). With every step, marked 41, 43, 43 and 46
// targets (mean capacity 1.00538 × peak active, steady driver time summed 25.9 ms); never marked
// 42, 42, 39 and 46 (1.00599, 42.2 ms). Without:
//
//   - the memo's place: marked 34 capacity targets and 22 trace files at 0 calls in the fourth
//     repetition; never marked (the finder's memos) 34, 33 steady, 16 at 0 calls;
//   - the new shape's flush after a dominating iteration: never marked 39 capacity and 39 steady
//     targets (marked, mean capacity 1.00553);
//   - homes: never marked 37 steady targets (49.3 ms summed);
//   - the view runs of step 4: never marked 41 steady targets, marked mean capacity 1.00543;
//   - the new shape's first fit (step 5): 34 capacity targets marked and never marked;
//   - the idle window: marked 40 capacity and 40 steady targets, never marked 41, 37 and 37 warm-up;
//   - loose pieces stitched: never marked 40 capacity and 41 steady targets (marked the same: the
//     idle pieces take their place);
//   - idle pieces stitched: never marked 41 capacity targets;
//   - flushing until a loose range fits: marked 40 capacity targets (mean 1.00772), never marked
//     36 (1.01083).
//
// Three mechanisms outside the chain, taken out the same way: following a dominating memo
// (dominate.go): marked 42 steady targets (31.7 ms summed), never marked 40 capacity and 38 steady
// (60.6 ms); pages kept away from remembered places (pageaway.go): marked 42 steady (28.3 ms),
// never marked 41 capacity and 40 steady (50.4 ms); growing instead of stitching over many handles
// (growsCheaper, chain.go; marked only): the same targets, the steady driver time summed 38.6 ms
// instead of 25.9.
//
// Taken out because they won nothing: a view of about the request's size kept from an earlier
// stitch (GMLake's exact match of a stitched block, never marked only: homes find the same views'
// places): targets the same, mean capacity 1.00588 with it and 1.00599 without, four traces
// better and four worse; and a second look for a run of loose bytes in a view after the flush of
// step 8: no figure of any trace moved.
//
// Measured again once the setup grew ahead never marked too (growth.go, firstAhead; the same
// command and files, 2026-12-07): with everything, marked 41, 43, 43 and 46 targets (mean capacity
// 1.00523), never marked 41, 42, 43 and 46 (1.00591). Taken out because it won nothing: the rule
// that took an iteration as seen at a repeated request's context (repeat.go says what it did and
// what its removal measured). The guards of dominating memos (dominate.go), each taken out alone:
// without alignment, one steady target fewer marked and never marked; without the occupied-place
// guard, marked 40 capacity targets and never marked 40 steady; without the hand-over, never
// marked 41 steady; without the bound near the capacity, marked 42 capacity targets on these files
// (mean 1.00497), but the H200 ResNet-18 and ResNet-50 training loops (results/cnn) need 1.0187
// and 1.0166 x peak active instead of 1.0009 and 1.0024: all four kept.
//
// A memo lookup advances the memo state (memostate.go: which memo the iteration follows, and how
// far it has gone with dominating ones), which is the iteration's bookkeeping, not a place; an
// idle lookup with several streams polls their events. Otherwise a source reads only.
//
// # Allocation: outcomes
//
// Each request ends in one outcome, counted in Stats.Outcomes:
//
//   - Exact: a cached block of exactly the rounded size on the same stream: a table lookup, a list pop
//     and a flag flip; no driver call, no Go allocation. While an iteration memo is followed, the
//     cached block at the memo's place (a lookup by the pointer a block there has) rather than the
//     lowest.
//   - Split: no driver call, the block is carved from free memory by the chain's steps 1-6 and
//     8. A home (homes.go) is a place, in the arena or in a view, where a block of this size lay
//     before and that no live block uses now, the one whose taking flushes the fewest cached bytes,
//     the most recently used of those (kept for large blocks only unmarked: marked, no request
//     takes one); an idle window (idle.go) is the r bytes of the arena (else of
//     any view) that no live block uses and whose taking flushes the fewest cached bytes. Only the
//     cached blocks under the chosen window are flushed;
//     the rest of the cache stays for exact matches. These searches walk the homes of the size
//     (at most 1024), the arena's indexes and the views, but only the 256 most recently used
//     views (maxViewScan), and of those only the ones whose own blocks leave room: a view counts
//     the bytes of the blocks using it and of its live ones, so one whose own blocks leave fewer
//     than r loose (or idle) bytes is skipped without a look at its pieces. So the per-miss cost
//     does not grow with the number of cached views (BenchmarkMissManyViews: 0.05 ms per miss
//     at 100 views and 0.5 ms at 5000, against 4.7 ms without the bound). Nor with the blocks
//     of the arena: the idle-window search looks only at the arena ranges no live block owns
//     (the room index, room.go), and of those at the maxRoomScan (256) smallest that hold the
//     request, O(256 log n) for n blocks; each room carries a lower bound on what a window there
//     flushes, and rooms whose bound is above the best window found are passed over in whole
//     subtrees, so a split of one of many equal cached holes looks at a few rooms, and rooms
//     with too few loose bytes to hold a better window (lossBound) are passed over unwalked. On the
//     largest shared traces a miss costs up to tens of microseconds (an alloc+free pair 1-12 µs
//     on average), still far below a driver call; the exact path does none of it.
//   - Stitch: loose ranges whose whole handles, plus the head of the first and the tail of the
//     last, add up to the request are mapped under a new view: Reserve, one Map per handle, one
//     SetAccess. Loose ranges alone first, so that no cached block is flushed; else idle runs
//     (loose ranges joined with the cached blocks between them), flushing only the cached blocks
//     the view covers; else every cached block is flushed. Ranges are taken largest first until
//     they reach the request. The stitch index (stitchable.go) sums up every loose range's
//     whole handles, heads and tails, so a request the loose ranges cannot reach is told so in
//     O(log n), and one they can takes O(k log n) for the k ranges looked at; the index is kept
//     lazily, dropped once the loose set has changed more often than it has ranges since it was
//     last read and rebuilt at the next read, so the steady iterations' misses, which change the
//     loose set but do not stitch, do not pay for it; idle runs come from
//     the rooms, largest first, and the search stops once the runs seen make the plan every run
//     would. With several streams, the streams that have a cached block not yet settled are
//     polled first (each stream keeps its recent frees of large blocks), the ones a walk over
//     every block would poll, and the rooms are searched as with one. Still linear in the
//     blocks: a plan over idle runs that cached blocks are there for but that falls short of
//     the request.
//   - NewChunks: free memory cannot cover the request, even with the empty small pages given back.
//     Only the deficit is created, with the bytes ahead of a new peak once an iteration has been
//     seen or the first iteration's bytes ahead (in the holes releases left, lowest first,
//     then past the end;
//     the search starts at the lowest hole not yet filled), becomes loose,
//     and the request is carved or stitched from it and the free memory: new memory is always
//     combined with free memory, so reserved memory stays near peak live with no capacity limit
//     but for the bytes grown ahead and in a stitch's stead (tunables.go). Out of memory only when the capacity (WithCapacity or the driver) refuses the deficit
//     (the driver refusing the bytes ahead within the capacity, the deficit is grown alone);
//     the *OutOfMemoryError says what was asked, what is free, in how many pieces, the largest piece
//     and what stitching could reach.
//
// A carve goes at the start or the end of its range, whichever leaves more whole handles free: a
// stitch can use a free range in the middle of a view only by its whole handles.
//
// Views outlive their blocks and are released (Unmap and Free of the virtual range only; physical
// memory stays) least recently used first when the count or the virtual bytes pass the budget
// (WithStitchBudget), and by EmptyCache.
//
// # Streams
//
// A cached block is found only by requests on its own stream, where reuse is safe at once. Loose
// bytes serve every stream, so once a second stream has been seen a cached block is flushed only
// when its stream is done with it (streams.go): frees are numbered per stream, and an event covers
// every free before it. A free records one only when none is pending on its stream (so most frees
// make no driver call); a slow path that wants a block of a stream polls that stream's pending
// events (once per slow path, newest first, since a stream completes in order) and records one
// more if frees since the newest are not covered. A completed event settles every free before it, at once and without
// waiting for memory pressure. A Synchronize (which the engine does before reporting
// out-of-memory) settles everything. With one stream no event is ever recorded.
//
// # Releasing memory
//
// EmptyCache synchronizes, flushes every cache, releases every view no block uses, and then unmaps
// and releases each physical allocation whose bytes are all loose and which no view maps. Reset
// frees every live block and then does the same. Close gives everything back; what the driver
// refuses after an error is kept and given back by the next EmptyCache or Close.
//
// # Errors
//
// Bad input returns a typed error and changes nothing. A driver error in the middle of an operation
// (the fifth of eight Maps of a stitch) is rolled back: what was mapped is unmapped, what was
// reserved or created is given back, and Check is clean.
//
// # The steady state
//
// Training repeats its allocation script every iteration. A freed block is cached under its size
// and stream, and the next request of that size takes it back (Exact), however it was stitched.
// When memory is tight, cached blocks must be repurposed (flushed and carved again), and whether the
// next iteration finds the same free ranges then depends on every earlier choice. Two rules make
// the layout repeat. Every choice is canonical, a function of where free memory is rather than of
// the order things happened in (free lists hand out their lowest block first, flushing starts from
// the highest blocks, ties go to the lowest address). And a miss goes home: a request that finds
// no cached block of its size first tries the places where blocks of its size lay before, so the
// memory a size gave up in one iteration is where that size looks in the next, and the views made
// in the first iterations keep fitting; misses that do repurpose memory flush only what their
// window needs. Without marks from the caller the engine finds where iterations begin (below) and
// follows memos from there, so every trace repeated four times makes no driver call in its fourth
// repetition never marked too. Before the first iteration is found, what it remembers of its
// requests (their contexts: size and live bytes, repeat.go) keeps new pages away from the places
// large requests took (pageaway.go).
//
// # Iterations found without marks (iterfinder.go)
//
// A caller that never calls MarkIteration gets the marks from the live bytes: an iteration begins
// where the previous one freed everything but the weights and the optimizer's state, so its first
// request finds the live bytes as low as at every request of the iteration, and at the same level
// as the iteration before. The engine takes a request that follows a free for a beginning when its
// live bytes are no more (within 4 KiB) than at every such request of a window at least two
// iterations long, and
// the job has risen and fallen since the last one; from the first beginning found it runs as if
// marked (memos, below). "Unmarked" in this comment means before the first mark, the caller's or
// the finder's. On the 27 traces of make bench every beginning from the fourth iteration on is
// found and none inside an iteration from the second on. Measured with gmlake-bench replay
// --min-capacity --repeat 4 (H200 cost model), never marked, against the engine without the
// finder replayed beside it: capacity / peak active within 1.01 on 31 of the 32 traces of make
// bench instead of 23 (mean 1.0044 instead of 1.0072); on the 27 with a PyTorch step
// (results/bench/RESULTS*.md) the largest steady iteration's driver time within 1% of the step on
// 18 instead of 11, the largest warm-up one's within 10% on 13 instead of 7, capacity within its
// target on 26 instead of 18 (marked: 16, 8 and 27); 0 calls in the fourth repetition either way. The caller's first mark turns the finder off and drops the
// memos of what it found (a marking caller's setup).
//
// # Iteration memos (memo.go)
//
// When iterations are marked (by the caller: MarkIteration, as memory.Allocator, train,
// gpu/graphexec and dataparallel/gpudp do; or found, above), the engine records, per iteration, where each large request went, by its
// ordinal in the iteration and its size, and where the small pool's pages went. A later iteration
// follows the most recent memo that agrees with all its large requests so far, chosen at its first
// large request: its requests go to that memo's places (an exact match takes the cached block at the
// memo's place, or the place itself with what is cached there flushed), so an iteration of a shape
// seen before replays the last one's placements, views included, and calls no driver. A request
// whose size differs from the memo's hands over to another agreeing memo; when none agrees, the
// iteration follows the most recent memo that dominates it, one of a longer shape, whose place at
// every ordinal is at least as large as the request (dominate.go): the first iteration of a
// shorter length then calls no driver either. When none dominates it, the iteration is a new shape
// and is placed by the rules above, laid out from coalesced free memory once a request fits
// nowhere without flushing (shape.go). Measured:
// every shared trace repeated four times makes zero driver calls in its fourth repetition
// (TestMemoConvergesOnTraces), and a trace gpu-train recorded on an H200 with four lengths in random
// order makes none from its fourth (TestMemoConvergesOnGPUTrainTraces; without marks it makes
// hundreds per repetition). Where the iteration stands against the memos is one value (memoState,
// memostate.go): a phase (unmarked, choosing, following an agreeing memo, following a dominating
// one, new shape) and a dominance stage (none, one, one whose script ended, handed over), moved
// only by the functions each phase names; Check reports every combination they cannot make.
// What memos cannot remove: an iteration that needs more memory than any before it, or a block
// larger than any free window, must call the driver the first time its shape is seen.
// WithGrowthSlack trades a little memory for fewer of those calls; WithWarmupGrowth makes each of
// the stitches cheaper in calls (fewer, larger physical allocations to map).
// Both are off by default; memory.WithEngineOptions passes them to an allocator.
//
// # Invariants (Check verifies them all)
//
//   - Loose ranges, primitive blocks and stitched pieces are disjoint and cover exactly the arena
//     slots holding chunks; loose ranges are coalesced; the address and size indexes agree; the
//     owner index names exactly the large blocks' ranges.
//   - Every block in the pointer index is live or cached, in exactly one free list and the age list
//     if cached; pages are held by the small pool and are not in the pointer index.
//   - Inside each page, small blocks and the page's free ranges cover the page exactly.
//   - Every view maps whole handles that exist, its pieces lie in them in order and meet at handle
//     boundaries, each chunk's count of views is right, and every block using it lies within it.
//   - Live, reserved and virtual bytes in Stats equal what the structures hold.
//   - The memos' entries are in ordinal order and their counts within the bounds; the memo state
//     is one of its phases with the parts that phase allows (a followed memo exactly while
//     following, a dominating memo only at its dominance stages, no flush owed between calls).
//
// The engine is safe for concurrent use: one mutex guards everything; the exact-match path holds it
// for a few dozen nanoseconds.
package stitch
