package gmlake

import (
	"io"

	"github.com/gmlake/gmlake/snapshot"
)

// WriteSnapshot writes what an engine over the recorder r did as a PyTorch memory snapshot
// (torch.cuda.memory._dump_snapshot()'s pickle: segments with their blocks, and the device
// trace), which torch.cuda._memory_viz and pytorch.org/memory_viz open. Give r to the allocator as
// its driver (WithDriver(snapshot.NewRecorder(d))); allocations and frees reach the trace through
// r.RecordAlloc and r.RecordFree (snapshot.Recorded does it for a replay). See package snapshot
// for how stitched views become segments.
func WriteSnapshot(w io.Writer, r *snapshot.Recorder) error { return snapshot.Write(w, r.Snapshot()) }
