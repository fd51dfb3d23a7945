package snapshot

import (
	"github.com/gmlake/gmlake/baseline"
	"github.com/gmlake/gmlake/stitch"
)

// Recorded is the engine's adapter (baseline.GMLake) telling a Recorder of every allocation and
// free that succeeds, so a replay through it can be written as a snapshot. The adapter's other
// methods (MarkIteration, Check, CallsByKind, Engine) are its own.
type Recorded struct {
	*baseline.GMLake
	rec *Recorder
}

// Record returns g recording into r; g's engine must run over r.
func (r *Recorder) Record(g *baseline.GMLake) *Recorded { return &Recorded{GMLake: g, rec: r} }

// Alloc implements baseline.Allocator.
func (a *Recorded) Alloc(size uint64, s stitch.Stream) (uintptr, error) {
	p, err := a.GMLake.Alloc(size, s)
	if err == nil {
		a.rec.RecordAlloc(p, size, s)
	}
	return p, err
}

// Free implements baseline.Allocator.
func (a *Recorded) Free(ptr uintptr, size uint64) error {
	err := a.GMLake.Free(ptr, size)
	if err == nil {
		a.rec.RecordFree(ptr, size)
	}
	return err
}
