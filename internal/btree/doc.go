// Package btree is an ordered map from uint64 keys to values, kept in a B+ tree of wide nodes: the
// stitching engine's address indexes (which block owns each arena byte, which arena bytes are
// loose), read a few times by every request that re-carves a cached place.
//
// Why not the treap (package treap): on a GPU host the executor's work between two requests
// evicts the allocator's data from the caches, and what a request costs is then, to first order,
// the cache lines it misses one after the other. A treap descent misses one line per level, each
// load depending on the one before (17 levels at 5,000 spans). A node here holds its keys in one
// array of fanout words, four adjacent lines that a linear scan reads with loads the processor
// issues together, so a lookup costs about one miss latency per level: three levels up to ten
// thousand spans or more (nodes are a quarter to wholly full).
//
// Why not github.com/google/btree (a dependency of the bench's metered driver): its nodes keep
// their items in slices, one more dependent load per level, and compare through a function value,
// and it hands out copies of items rather than places that a caller may change in place (a free
// range whose start moves within the range it covers: Rekey).
//
// Values live in the leaves, which are linked in key order, so a walk from a place is a cursor
// step. A Cursor is valid until the next Insert, Delete, Rekey or Clear; its Value may be changed
// in place. Nodes removed by a merge are kept for reuse, so steady churn allocates nothing.
package btree
