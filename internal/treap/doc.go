// Package treap is the ordered set that the allocators keep their blocks in: a treap (a binary
// search tree whose nodes also form a heap on random priorities, so it stays balanced in
// expectation) keyed by a pair of integers (hi, lo), compared hi first.
//
// Keys are plain integers rather than a comparison function so that every comparison on the
// search paths is inlined: the stitching engine orders free ranges by (size, start) (its address
// orders are a B+ tree, internal/btree), the caching allocator by (size, address), the first-fit
// arena by (offset, 0).
//
// Each node also carries a weight, and every subtree knows its largest weight, so "the first node
// in key order whose weight is at least w" takes O(log n): a first-fit search by address for a
// block of a size; and a walk in key order can pass over every subtree whose weights are all below
// a bound (AscendHeavy): the stitching engine's rooms, weighted by how cheap a place in them can be,
// searched best fit first for the cheapest. Trees that do not search by weight leave it 0.
//
// Priorities come from a fixed-seed generator, so every run builds the same shapes. Removed nodes
// are kept for reuse, so steady churn allocates nothing.
package treap
