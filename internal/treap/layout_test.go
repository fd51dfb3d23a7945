package treap

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// span40 is a 40-byte value, the size of the stitching engine's tree values.
type span40 struct{ a, b, c, d, e uint64 }

// TestNodeHotFieldsFirst: the fields a descent reads, the key's first part, the priority and the
// links, are a node's first 32 bytes, and Value follows them; a node of a 40-byte value is 96
// bytes, a size whose objects begin at a multiple of 32, so those fields lie in one cache line.
func TestNodeHotFieldsFirst(t *testing.T) {
	var n Node[span40]
	for name, end := range map[string]uintptr{
		"hi":    unsafe.Offsetof(n.hi) + unsafe.Sizeof(n.hi),
		"prio":  unsafe.Offsetof(n.prio) + unsafe.Sizeof(n.prio),
		"left":  unsafe.Offsetof(n.left) + unsafe.Sizeof(n.left),
		"right": unsafe.Offsetof(n.right) + unsafe.Sizeof(n.right),
	} {
		assert.LessOrEqual(t, end, uintptr(32), "Node.%s ends past the first 32 bytes", name)
	}
	assert.EqualValues(t, 32, unsafe.Offsetof(n.Value))
	assert.EqualValues(t, 96, unsafe.Sizeof(n))
	var tr Tree[span40]
	for i := range uint64(256) {
		p := uintptr(unsafe.Pointer(tr.Insert(i, 0, 0, span40{})))
		assert.Zero(t, p%32, "a node at %#x does not begin at a multiple of 32", p)
	}
}
