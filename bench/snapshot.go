package bench

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strings"

	"github.com/gmlake/gmlake/trace"
	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"
)

// DefaultMarkerSize is the size of the sentinel allocation that marks an iteration start.
const DefaultMarkerSize = 123457

// SnapshotOption configures ReadSnapshot.
type SnapshotOption func(*snapshotConfig)

type snapshotConfig struct {
	device     int    // device trace to read; -1 = the only non-empty one
	markerSize uint64 // sentinel size; 0 = no sentinels
}

// WithSnapshotDevice selects which device's trace to read (default: the only one with events).
func WithSnapshotDevice(n int) SnapshotOption { return func(c *snapshotConfig) { c.device = n } }

// WithMarkerSize sets the sentinel allocation size that marks iterations; 0 turns sentinels off.
func WithMarkerSize(bytes uint64) SnapshotOption {
	return func(c *snapshotConfig) { c.markerSize = bytes }
}

// Load reads a trace in either format, gzip'd or not, telling them apart by content: a pickle
// starts with the PROTO opcode 0x80, a text trace with '#' or an event letter.
func Load(path string, opts ...SnapshotOption) (*trace.Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := maybeGunzip(bufio.NewReaderSize(f, 1<<16))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var t *trace.Trace
	if head, _ := r.Peek(1); len(head) == 1 && head[0] == 0x80 {
		t, err = ReadSnapshot(r, opts...)
	} else {
		t, err = trace.Read(r)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if t.Name == "" {
		t.Name = filepath.Base(path)
	}
	return t, nil
}

func maybeGunzip(br *bufio.Reader) (*bufio.Reader, error) {
	if magic, _ := br.Peek(2); !bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		return br, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, err
	}
	return bufio.NewReaderSize(zr, 1<<16), nil
}

// ReadSnapshot converts a PyTorch memory snapshot (plain or gzip'd pickle) to a trace.
//
// A PyTorch snapshot (torch.cuda.memory._dump_snapshot) is a pickled dict; its "device_traces" holds
// one list of events per device, each a dict with "action", "addr", "size", "stream", "time_us".
// ReadSnapshot keeps "alloc" and "free_completed" (the moment the memory is really reusable), names
// allocations by a counter in allocation order, and turns frees of an address into frees of the
// allocation live there. Frees of addresses it never saw allocated (a history ring buffer that
// overflowed) are dropped.
//
// Snapshots have no iteration markers. ReadSnapshot recovers them two ways, in this order:
//   - sentinel allocations: an alloc of exactly the marker size (DefaultMarkerSize unless
//     WithMarkerSize says otherwise) freed before any other allocation or free is a marker its
//     recorder placed at the start of each step, as in the snapshot in ../shared/traces. The
//     sentinel becomes "i N" and is not replayed, which is how the text traces were converted.
//   - failing that, the END of each "Optimizer.step" record_function annotation in
//     "external_annotations" (written by every torch.optim optimizer): "i 0" starts the trace and
//     "i N" follows the N-th optimizer step, so an iteration is counted from one step to the next.
//
// Without either, the trace has no markers and per-iteration figures are unavailable.
func ReadSnapshot(r io.Reader, opts ...SnapshotOption) (*trace.Trace, error) {
	cfg := snapshotConfig{device: -1, markerSize: DefaultMarkerSize}
	for _, o := range opts {
		o(&cfg)
	}
	br, err := maybeGunzip(bufio.NewReaderSize(r, 1<<16))
	if err != nil {
		return nil, err
	}
	u := pickle.NewUnpickler(br)
	root, err := u.Load()
	if err != nil {
		return nil, fmt.Errorf("%w: snapshot pickle: %w", trace.ErrFormat, err)
	}
	top, ok := root.(*types.Dict)
	if !ok {
		return nil, fmt.Errorf("%w: snapshot is a %T, not a dict", trace.ErrFormat, root)
	}
	entries, err := deviceTrace(top, cfg.device)
	if err != nil {
		return nil, err
	}
	raw, err := rawEvents(entries)
	if err != nil {
		return nil, err
	}
	t := &trace.Trace{Header: []string{"converted from a torch.cuda.memory._dump_snapshot pickle"}}
	events, times := convertEvents(raw, cfg.markerSize)
	t.Events = events
	if !hasIterations(events) {
		t.Events = insertStepMarkers(events, times, optimizerStepEnds(top))
	}
	return t, t.Validate()
}

// rawEvent is one alloc or free_completed entry.
type rawEvent struct {
	alloc  bool
	addr   uint64
	size   uint64
	stream uint64
	timeUS int64
}

func deviceTrace(top *types.Dict, device int) (*types.List, error) {
	v, ok := top.Get("device_traces")
	lists, isList := v.(*types.List)
	if !ok || !isList {
		return nil, fmt.Errorf("%w: snapshot has no device_traces list", trace.ErrFormat)
	}
	if device >= 0 {
		if device >= lists.Len() {
			return nil, fmt.Errorf("%w: snapshot has %d devices, asked for %d", trace.ErrFormat, lists.Len(), device)
		}
		l, ok := lists.Get(device).(*types.List)
		if !ok {
			return nil, fmt.Errorf("%w: device_traces[%d] is not a list", trace.ErrFormat, device)
		}
		return l, nil
	}
	var found *types.List
	for i := range lists.Len() {
		l, ok := lists.Get(i).(*types.List)
		if !ok || l.Len() == 0 {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("%w: snapshot has events on several devices; choose one", trace.ErrFormat)
		}
		found = l
	}
	if found == nil {
		return nil, fmt.Errorf("%w: snapshot has no device events (was _record_memory_history on?)", trace.ErrFormat)
	}
	return found, nil
}

func rawEvents(entries *types.List) ([]rawEvent, error) {
	out := make([]rawEvent, 0, entries.Len())
	for i := range entries.Len() {
		d, ok := entries.Get(i).(*types.Dict)
		if !ok {
			return nil, fmt.Errorf("%w: trace entry %d is not a dict", trace.ErrFormat, i)
		}
		var ev rawEvent
		var action string
		for _, kv := range *d {
			k, _ := kv.Key.(string)
			switch k {
			case "action":
				action, _ = kv.Value.(string)
			case "addr":
				ev.addr = uint64(pyInt(kv.Value))
			case "size":
				ev.size = uint64(pyInt(kv.Value))
			case "stream":
				ev.stream = uint64(pyInt(kv.Value))
			case "time_us":
				ev.timeUS = pyInt(kv.Value)
			}
		}
		switch action {
		case "alloc":
			ev.alloc = true
		case "free_completed":
		default:
			continue
		}
		out = append(out, ev)
	}
	return out, nil
}

// pyInt reads a Python int as unpickled (int, or *big.Int past 64 bits); anything else reads as 0.
func pyInt(v any) int64 {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int64:
		return x
	case *big.Int:
		return x.Int64()
	case bool:
		if x {
			return 1
		}
	}
	return 0
}

// convertEvents names allocations, resolves frees by address and turns sentinels into markers. It
// returns the events and, for each, the time it happened.
func convertEvents(raw []rawEvent, markerSize uint64) ([]trace.Event, []int64) {
	events := make([]trace.Event, 0, len(raw))
	times := make([]int64, 0, len(raw))
	live := make(map[uint64]int64) // address -> allocation id
	var nextID, iter int64
	for i := 0; i < len(raw); i++ {
		ev := raw[i]
		if ev.alloc && markerSize != 0 && ev.size == markerSize && i+1 < len(raw) &&
			!raw[i+1].alloc && raw[i+1].addr == ev.addr {
			events = append(events, trace.Event{Kind: trace.Iter, ID: iter})
			times = append(times, ev.timeUS)
			iter++
			nextID++ // the sentinel keeps its id, as in the text traces converted from snapshots
			i++      // its free
			continue
		}
		if ev.alloc {
			live[ev.addr] = nextID
			events = append(events, trace.Event{Kind: trace.Alloc, ID: nextID, Size: ev.size, Stream: ev.stream})
			times = append(times, ev.timeUS)
			nextID++
			continue
		}
		if id, ok := live[ev.addr]; ok {
			delete(live, ev.addr)
			events = append(events, trace.Event{Kind: trace.Free, ID: id})
			times = append(times, ev.timeUS)
		}
	}
	return events, times
}

func hasIterations(events []trace.Event) bool {
	for _, ev := range events {
		if ev.Kind == trace.Iter {
			return true
		}
	}
	return false
}

// optimizerStepEnds returns the time_us of the END of each Optimizer.step annotation, in order.
func optimizerStepEnds(top *types.Dict) []int64 {
	v, _ := top.Get("external_annotations")
	list, ok := v.(*types.List)
	if !ok {
		return nil
	}
	var ends []int64
	for i := range list.Len() {
		d, ok := list.Get(i).(*types.Dict)
		if !ok {
			continue
		}
		stage, _ := d.Get("stage")
		name, _ := d.Get("name")
		when, _ := d.Get("time_us")
		if s, _ := name.(string); stage == "END" && strings.HasPrefix(s, "Optimizer.step") {
			ends = append(ends, pyInt(when))
		}
	}
	return ends
}

// insertStepMarkers puts "i 0" first and "i N" before the first event after the N-th step's end;
// times[k] is when events[k] happened.
func insertStepMarkers(events []trace.Event, times []int64, stepEnds []int64) []trace.Event {
	if len(stepEnds) == 0 {
		return events
	}
	out := make([]trace.Event, 0, len(events)+len(stepEnds)+1)
	out = append(out, trace.Event{Kind: trace.Iter, ID: 0})
	next := 0
	for k, ev := range events {
		for next < len(stepEnds) && times[k] > stepEnds[next] {
			next++
			out = append(out, trace.Event{Kind: trace.Iter, ID: int64(next)})
		}
		out = append(out, ev)
	}
	return out
}
