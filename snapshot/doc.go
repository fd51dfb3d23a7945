// Package snapshot writes what an engine did in the format of PyTorch's memory snapshots
// (torch.cuda.memory._dump_snapshot()), so that PyTorch's own viewers (torch.cuda._memory_viz:
// trace_plot, segment_plot, segsum; pytorch.org/memory_viz) open a gmlake run as they open a
// PyTorch one.
//
// A Recorder sits between the engine and its driver (it is a stitch.Driver) and learns the physical
// memory and every mapping from the calls it passes on; the code that drives the engine tells it of
// each allocation and free (RecordAlloc, RecordFree). Snapshot then lays out:
//
//   - segments: each run of mapped memory in the engine's arena is a segment of type "large" (the
//     physical memory, once: their sizes add up to stitch.Stats.ReservedBytes), and each stitched
//     view is a segment of type "stitched" (the same memory, mapped again at the view's addresses);
//   - blocks: a live block lies in the segment its address falls in, "active_allocated" with its
//     requested size; the arena pieces mapped under a live view are "active_allocated" too, with a
//     requested size of 0 and a frame naming the view, so the requested sizes of the active blocks
//     add up to stitch.Stats.LiveBytes; the rest of each segment is "inactive";
//   - device_traces: every allocation ("alloc"), free ("free_requested" then "free_completed") and
//     arena mapping ("segment_map", "segment_unmap"), in order, with its stream and time.
//
// PyTorch's segsum adds up every segment, views included, so its "reserved" figure is the physical
// memory plus the view bytes mapped; the "large" segments alone are the physical memory.
//
// Write encodes a Snapshot as a pickle with github.com/kisielk/og-rek, a maintained Go encoder of
// Python's pickle format (protocol 4, Python 3 strings).
package snapshot
