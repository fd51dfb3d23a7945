package snapshot

import (
	"bufio"
	"fmt"
	"io"

	ogorek "github.com/kisielk/og-rek"
)

// Write encodes s as torch.cuda.memory._dump_snapshot() does: a pickled dict with "segments"
// (each with its "blocks") and "device_traces" (one list for device 0).
func Write(w io.Writer, s Snapshot) error {
	bw := bufio.NewWriter(w)
	enc := ogorek.NewEncoderWithConfig(bw, &ogorek.EncoderConfig{Protocol: 4, StrictUnicode: true})
	if err := enc.Encode(pickled(s)); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	return bw.Flush()
}

func pickled(s Snapshot) map[any]any {
	segs := make([]any, 0, len(s.Segments))
	for _, seg := range s.Segments {
		blocks := make([]any, 0, len(seg.Blocks))
		var allocated, requested uint64
		for _, b := range seg.Blocks {
			frames := []any{}
			if b.Frame != "" {
				frames = append(frames, map[any]any{"filename": "gmlake", "line": int64(0), "name": b.Frame})
			}
			if b.State == StateActive {
				allocated += b.Size
				requested += b.Requested
			}
			blocks = append(blocks, map[any]any{"address": uint64(b.Address), "size": b.Size,
				"requested_size": b.Requested, "state": b.State, "frames": frames})
		}
		segs = append(segs, map[any]any{
			"device": int64(0), "address": uint64(seg.Address), "total_size": seg.Size,
			"allocated_size": allocated, "active_size": allocated, "requested_size": requested,
			"stream": uint64(seg.Stream), "segment_type": seg.Type, "segment_pool_id": ogorek.Tuple{int64(0), int64(0)},
			"is_expandable": true, "frames": []any{}, "blocks": blocks,
		})
	}
	trace := make([]any, 0, len(s.Trace))
	for _, e := range s.Trace {
		trace = append(trace, map[any]any{"action": e.Action, "addr": uint64(e.Addr), "size": e.Size,
			"stream": uint64(e.Stream), "time_us": e.TimeUS, "frames": []any{}})
	}
	return map[any]any{
		"segments":             segs,
		"device_traces":        []any{trace},
		"allocator_settings":   map[any]any{},
		"external_annotations": []any{},
	}
}
