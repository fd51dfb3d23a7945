package stitch

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestBlockLayout: a block is 192 bytes, a size class whose objects begin on a 64-byte cache
// line, and the fields a free, an exact match and a free list's walk touch lie in its first line.
func TestBlockLayout(t *testing.T) {
	var b block
	assert.EqualValues(t, 192, unsafe.Sizeof(b))
	for name, end := range map[string]uintptr{
		"first": unsafe.Offsetof(b.first) + unsafe.Sizeof(b.first),
		"next":  unsafe.Offsetof(b.next) + unsafe.Sizeof(b.next),
		"prev":  unsafe.Offsetof(b.prev) + unsafe.Sizeof(b.prev),
		"list":  unsafe.Offsetof(b.list) + unsafe.Sizeof(b.list),
		"size":  unsafe.Offsetof(b.size) + unsafe.Sizeof(b.size),
		"req":   unsafe.Offsetof(b.req) + unsafe.Sizeof(b.req),
		"live":  unsafe.Offsetof(b.live) + unsafe.Sizeof(b.live),
		"older": unsafe.Offsetof(b.older) + unsafe.Sizeof(b.older),
	} {
		assert.LessOrEqual(t, end, uintptr(64), "block.%s ends past the first cache line", name)
	}
	for range 64 {
		blockSink = append(blockSink, new(block)) // on the heap, as the engine's blocks are
		p := uintptr(unsafe.Pointer(blockSink[len(blockSink)-1]))
		assert.Zero(t, p%64, "a block at %#x does not begin a cache line", p)
	}
	blockSink = nil
}

var blockSink []*block
