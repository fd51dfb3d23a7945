// Package stitch is the GMLake engine: a caching allocator of device memory that defragments by
// virtual-memory stitching (GMLake, ASPLOS'24). It knows nothing of CUDA, cgo or Gorgonia; a Driver
// (driver.go) gives it physical memory, virtual ranges and mappings.
//
// # Physical memory: the arena
//
// Physical memory comes from the driver in chunks of Granularity bytes (G, 2 MiB on CUDA). At New
// the engine reserves one virtual range as large as the device (the arena) and maps every chunk it
// creates at a fixed slot of it, for as long as the chunk lives. So an arena offset names a
// physical byte: a free byte range, a block's bytes and a stitched block's pieces are all ranges of
// arena offsets, and "no byte is used by two live blocks" is a statement about disjoint ranges.
// Slots freed by EmptyCache are filled again first, so the arena never needs to grow.
//
// # Blocks and the three places a free byte can be
//
// A block is what Alloc returns: a pointer, a rounded size (multiple of 512 bytes) and the
// physical bytes behind it. A primitive block is a range of the arena (pointer = arena address).
// A stitched block is the prefix of a view: a freshly reserved virtual range that maps whole chunks
// holding a list of pieces (arena ranges) one after another; only the first piece may start
// mid-chunk and only the last may end mid-chunk, so the view is contiguous from the first piece's
// first byte (pointer = view base + offset of that byte in its chunk). A chunk may be mapped under
// the arena and several views; only the bytes that blocks own must be disjoint.
//
// Every physical byte is, at any moment, in exactly one of:
//
//   - a live block (primitive or stitched; small blocks live inside pages, which are blocks);
//   - a cached block: freed, kept whole, waiting for a request of exactly its size on its stream;
//   - the loose free set: address-ordered, coalesced ranges, indexed by size for best fit.
//
// # Allocation: outcomes
//
// Each request ends in one outcome, counted in Stats.Outcomes:
//
//   - Exact: a cached block of exactly the rounded size on the same stream. A map lookup, a list
//     pop and a flag flip: no driver call, no Go allocation. Training repeats its allocation script
//     every iteration, so this is the steady state.
//   - Split: a best-fit carve from one loose range, or the prefix of a cached view whose pieces are
//     all loose. Before giving up on this, cached blocks are flushed to the loose set oldest first
//     (they coalesce with their neighbours) until one range fits; small pages that become empty go
//     back the same way. No driver call.
//   - Stitch: loose ranges whose whole-chunk parts (plus the unaligned head of the first and tail of
//     the last) add up to the request are mapped one after another under a new view: Reserve, one
//     Map per run of chunks contiguous in one physical allocation, one SetAccess.
//   - NewChunks: free memory cannot cover the request. Only the deficit is created (in free arena
//     slots, one Create per run), becomes loose, and the request is carved or stitched as above: new
//     memory is always combined with free memory, so reserved memory stays near peak live bytes
//     even with no capacity limit. Out of memory only when the driver (or WithCapacity) refuses
//     the deficit; the *OutOfMemoryError says what was asked, what is free, in how many pieces, the
//     largest piece and what stitching could reach.
//
// Requests below the small threshold (1 MiB) are served from pages (2 MiB blocks, obtained through
// the same path, so a page may itself be stitched) by best fit with coalescing inside each page;
// small blocks are never stitched. A page whose bytes are all free again is freed as a block, so its
// memory is not stranded. Loose ranges that cannot reach a chunk boundary, or pieces below the
// minimum stitch size (fragLimit), are never stitched: they serve small pages and carves.
//
// Views outlive their blocks: when a stitched block is flushed its pieces go loose but its view
// stays mapped in an LRU cache, and a later request that fits a view whose pieces are loose again
// reuses it with no driver call. Views beyond the budget (count or virtual bytes) are released
// least recently used first: Unmap and Free of the virtual range only; physical memory stays.
//
// # Streams
//
// A cached block is found only by requests on its own stream, where reuse is safe at once. Loose
// bytes serve every stream, so once a second stream has been seen, Free records an event on the
// block's stream and the block is flushed only after the event has completed (or after
// Synchronize, when memory runs out). With one stream no event is ever recorded.
//
// # Releasing memory
//
// EmptyCache synchronizes, flushes every cache, releases every view that holds no block, and then
// unmaps and releases each physical allocation whose bytes are all loose and which no view maps.
// Reset frees every live block and then does the same.
//
// # Why the steady state makes no driver call
//
// After warm-up, a repeating iteration frees and requests the same sizes in the same order. A freed
// block is cached under its size and stream; the next request of that size takes it back (Exact),
// wherever it was and however it was stitched. Requests whose size was not seen recently carve
// from loose memory or from a cached view (Split) when a fitting range exists; driver calls happen
// only for a request no mapped range can hold, and its view then stays cached (the default budget
// holds thousands of views) so the next iteration finds it again. Memory grows only when the live
// set itself grows past what was created. When sequence lengths change from step to step (as in
// fine-tuning with dynamic padding) new sizes appear; they are served by Split where the mapped
// ranges allow, by Stitch otherwise.
//
// # Invariants (Check verifies them all)
//
//   - Loose ranges, primitive blocks and stitched pieces are disjoint and together cover exactly the
//     arena slots holding chunks; loose ranges are coalesced and both indexes agree.
//   - Every block in the pointer index is live or cached, exactly once in its cache list if cached;
//     pages are blocks held by the small pool and are not in the pointer index.
//   - Inside each page, small blocks and the page's loose ranges cover the page exactly.
//   - Every view maps whole chunks that exist, its pieces lie in them in order, each chunk's count
//     of views is right, and its block (if any) is a prefix of it.
//   - Live bytes, reserved bytes and virtual bytes in Stats equal what the structures hold.
//
// The engine is safe for concurrent use: one mutex guards everything, and the exact-match path
// holds it for a few dozen nanoseconds.
package stitch
