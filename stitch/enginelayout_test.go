package stitch

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestEngineHotFieldsTogether: the fields every request and every free touches (the first group
// of Engine) lie, with the mutex and the options the exact path reads, in the engine's first
// nine cache lines, of its thirty-one; left in their groups they would lie on twelve.
func TestEngineHotFieldsTogether(t *testing.T) {
	var e Engine
	end := func(off, size uintptr) uintptr { return off + size }
	for name, at := range map[string]uintptr{
		"mu":             end(unsafe.Offsetof(e.mu), unsafe.Sizeof(e.mu)),
		"smallThreshold": end(unsafe.Offsetof(e.cfg)+unsafe.Offsetof(e.cfg.smallThreshold), unsafe.Sizeof(e.cfg.smallThreshold)),
		"closed":         end(unsafe.Offsetof(e.closed), unsafe.Sizeof(e.closed)),
		"multiStream":    end(unsafe.Offsetof(e.multiStream), unsafe.Sizeof(e.multiStream)),
		"unsynced":       end(unsafe.Offsetof(e.unsynced), unsafe.Sizeof(e.unsynced)),
		"hotStream":      end(unsafe.Offsetof(e.hotStream), unsafe.Sizeof(e.hotStream)),
		"hotLists":       end(unsafe.Offsetof(e.hotLists), unsafe.Sizeof(e.hotLists)),
		"capacity":       end(unsafe.Offsetof(e.capacity), unsafe.Sizeof(e.capacity)),
		"epoch":          end(unsafe.Offsetof(e.epoch), unsafe.Sizeof(e.epoch)),
		"blocks":         end(unsafe.Offsetof(e.blocks), unsafe.Sizeof(e.blocks)),
		"largeAge":       end(unsafe.Offsetof(e.largeAge), unsafe.Sizeof(e.largeAge)),
		"smallAge":       end(unsafe.Offsetof(e.smallAge), unsafe.Sizeof(e.smallAge)),
		"roomQueue":      end(unsafe.Offsetof(e.roomQueue), unsafe.Sizeof(e.roomQueue)),
		"iterOrd":        end(unsafe.Offsetof(e.iterOrd), unsafe.Sizeof(e.iterOrd)),
		"memoCur":        end(unsafe.Offsetof(e.memoCur), unsafe.Sizeof(e.memoCur)),
		"iter":           end(unsafe.Offsetof(e.iter), unsafe.Sizeof(e.iter)),
		"ctxRing":        end(unsafe.Offsetof(e.ctxRing), unsafe.Sizeof(e.ctxRing)),
		"ctxNext":        end(unsafe.Offsetof(e.ctxNext), unsafe.Sizeof(e.ctxNext)),
		"live":           end(unsafe.Offsetof(e.live), unsafe.Sizeof(e.live)),
		"peakLive":       end(unsafe.Offsetof(e.peakLive), unsafe.Sizeof(e.peakLive)),
		"liveBlocks":     end(unsafe.Offsetof(e.liveBlocks), unsafe.Sizeof(e.liveBlocks)),
		"outcomes":       end(unsafe.Offsetof(e.outcomes), unsafe.Sizeof(e.outcomes)),
	} {
		assert.LessOrEqual(t, at, uintptr(9*64), "Engine.%s ends at byte %d", name, at)
	}
}
