// Package intmap is the hash map that the stitching engine keeps on its allocation path: from
// uint64 keys (pointers, sizes, arena offsets) to values, in one slice of key-value slots with
// linear probing.
//
// Why not Go's map: a lookup in a Go map reads the map's header, its table, a group's control
// word and a slot, and hashes the key with a seeded function; on the engine's steady path, where
// the executor's work between two requests has evicted the engine's data from the caches, those
// reads are a large share of the cache lines a request touches. Here a lookup multiplies the key
// by a constant, reads the slice's header (inside the Map value, which sits in its owner) and
// usually one slot, whose key and value lie together. Deletion shifts the following slots back
// (no tombstones), so a table that churns stays as short to probe as a fresh one.
//
// The key 0 is held beside the slots, so that a slot whose key is 0 is empty. Iteration (All)
// runs in slot order: the same keys put in the same order give the same order, run after run.
package intmap
