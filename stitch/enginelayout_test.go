package stitch

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEngineHotFieldsTogether: in an engine New made, the fields every request and every free
// touches (the first group of Engine), with the mutex and the options the exact path reads, lie
// on at most nine cache lines of the engine's thirty-five (left in their groups they would lie on
// twelve), and those written on every call on at most two.
func TestEngineHotFieldsTogether(t *testing.T) {
	e, err := New(&nullDriver{})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	lines := func(fields map[string][2]uintptr) map[uintptr]bool { // name: address, size
		out := map[uintptr]bool{}
		for _, f := range fields {
			for l := f[0] / 64; l <= (f[0]+f[1]-1)/64; l++ {
				out[l] = true
			}
		}
		return out
	}
	at := func(p unsafe.Pointer, size uintptr) [2]uintptr { return [2]uintptr{uintptr(p), size} }
	written := map[string][2]uintptr{
		"mu":         at(unsafe.Pointer(&e.mu), unsafe.Sizeof(e.mu)),
		"iterOrd":    at(unsafe.Pointer(&e.iterOrd), unsafe.Sizeof(e.iterOrd)),
		"ctxNext":    at(unsafe.Pointer(&e.ctxNext), unsafe.Sizeof(e.ctxNext)),
		"ctxRing":    at(unsafe.Pointer(&e.ctxRing), unsafe.Sizeof(e.ctxRing)),
		"live":       at(unsafe.Pointer(&e.live), unsafe.Sizeof(e.live)),
		"peakLive":   at(unsafe.Pointer(&e.peakLive), unsafe.Sizeof(e.peakLive)),
		"liveBlocks": at(unsafe.Pointer(&e.liveBlocks), unsafe.Sizeof(e.liveBlocks)),
		"outcomes":   at(unsafe.Pointer(&e.outcomes), unsafe.Sizeof(e.outcomes)),
	}
	assert.LessOrEqual(t, len(lines(written)), 2, "the fields written on every call")
	hot := map[string][2]uintptr{
		"smallThreshold": at(unsafe.Pointer(&e.cfg.smallThreshold), unsafe.Sizeof(e.cfg.smallThreshold)),
		"closed":         at(unsafe.Pointer(&e.closed), unsafe.Sizeof(e.closed)),
		"afterFree":      at(unsafe.Pointer(&e.afterFree), unsafe.Sizeof(e.afterFree)),
		"callerMarks":    at(unsafe.Pointer(&e.callerMarks), unsafe.Sizeof(e.callerMarks)),
		"multiStream":    at(unsafe.Pointer(&e.multiStream), unsafe.Sizeof(e.multiStream)),
		"epoch":          at(unsafe.Pointer(&e.epoch), unsafe.Sizeof(e.epoch)),
		"hotStream":      at(unsafe.Pointer(&e.hotStream), unsafe.Sizeof(e.hotStream)),
		"hotLists":       at(unsafe.Pointer(&e.hotLists), unsafe.Sizeof(e.hotLists)),
		"capacity":       at(unsafe.Pointer(&e.capacity), unsafe.Sizeof(e.capacity)),
		"blocks":         at(unsafe.Pointer(&e.blocks), unsafe.Sizeof(e.blocks)),
		"largeAge":       at(unsafe.Pointer(&e.largeAge), unsafe.Sizeof(e.largeAge)),
		"smallAge":       at(unsafe.Pointer(&e.smallAge), unsafe.Sizeof(e.smallAge)),
		"roomQueue":      at(unsafe.Pointer(&e.roomQueue), unsafe.Sizeof(e.roomQueue)),
		"memoCur":        at(unsafe.Pointer(&e.memoCur), unsafe.Sizeof(e.memoCur)),
		"iter":           at(unsafe.Pointer(&e.iter), unsafe.Sizeof(e.iter)),
	}
	for name, f := range written {
		hot[name] = f
	}
	assert.LessOrEqual(t, len(lines(hot)), 9, "the fields every request and free touches")
}
