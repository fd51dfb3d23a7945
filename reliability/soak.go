package reliability

import (
	"errors"
	"fmt"

	"github.com/gmlake/gmlake/trace"
)

// ErrShortTrace: the trace has too few iteration markers to soak from the one asked for.
var ErrShortTrace = errors.New("reliability: trace too short to soak")

// Soak is a long periodic trace built from a real one.
type Soak struct {
	Trace         *trace.Trace
	PrefixIters   int // iteration markers before the repeated part (the original's first ones)
	SegmentIters  int // iteration markers in one repetition
	Repetitions   int
	SegmentEvents int // events in one repetition, carried blocks included
}

// NewSoak builds a soak of at least iterations training iterations from tr: the events before
// marker `i from` once, then the iterations from it up to the last marker (exclusive: the last
// iteration of a recording ends with its teardown) repeated with fresh IDs until iterations
// markers have been replayed after the prefix. So that every repetition starts from the same live
// set, the blocks a repetition frees but did not allocate (live before the segment) are allocated
// afresh at the start of each later repetition, and the blocks it allocates but does not free are
// freed at its end.
func NewSoak(tr *trace.Trace, from, iterations int) (*Soak, error) {
	idx := tr.Iterations()
	if from < 0 || from+1 >= len(idx) {
		return nil, fmt.Errorf("%w: %d iteration markers, soaking from %d", ErrShortTrace, len(idx), from)
	}
	start, end := idx[from], idx[len(idx)-1]
	segment := tr.Events[start:end]
	size := map[int64]uint64{}
	stream := map[int64]uint64{}
	live := map[int64]bool{}
	var maxID int64
	for _, ev := range tr.Events {
		maxID = max(maxID, ev.ID)
	}
	for _, ev := range tr.Events[:start] {
		switch ev.Kind {
		case trace.Alloc:
			size[ev.ID], stream[ev.ID], live[ev.ID] = ev.Size, ev.Stream, true
		case trace.Free:
			delete(live, ev.ID)
		}
	}
	var carriedIn []int64 // live before the segment, freed in it
	inSegment := map[int64]bool{}
	var carriedOut []int64 // allocated in the segment, not freed in it
	segIters := 0
	for _, ev := range segment {
		switch ev.Kind {
		case trace.Alloc:
			size[ev.ID], stream[ev.ID], inSegment[ev.ID] = ev.Size, ev.Stream, true
		case trace.Free:
			if inSegment[ev.ID] {
				delete(inSegment, ev.ID)
			} else if live[ev.ID] {
				carriedIn = append(carriedIn, ev.ID)
			}
		case trace.Iter:
			segIters++
		}
	}
	for _, ev := range segment {
		if ev.Kind == trace.Alloc && inSegment[ev.ID] {
			carriedOut = append(carriedOut, ev.ID)
		}
	}
	reps := (iterations + segIters - 1) / segIters
	s := &Soak{PrefixIters: from, SegmentIters: segIters, Repetitions: reps}
	out := &trace.Trace{Name: fmt.Sprintf("%s-soak-%dx%d", tr.Name, reps, segIters), Header: tr.Header}
	out.Events = append(out.Events, tr.Events[:start]...)
	next := maxID
	iter := int64(from)
	for r := range reps {
		fresh := map[int64]int64{}
		rename := func(id int64) int64 {
			if r == 0 {
				return id
			}
			if f, ok := fresh[id]; ok {
				return f
			}
			next++
			fresh[id] = next
			return next
		}
		before := len(out.Events)
		for _, ev := range segment {
			if ev.Kind == trace.Iter {
				out.Events = append(out.Events, trace.Event{Kind: trace.Iter, ID: iter})
				iter++
				if r > 0 && len(out.Events) == before+1 {
					for _, id := range carriedIn {
						out.Events = append(out.Events, trace.Event{Kind: trace.Alloc, ID: rename(id), Size: size[id], Stream: stream[id]})
					}
				}
				continue
			}
			ev.ID = rename(ev.ID)
			out.Events = append(out.Events, ev)
		}
		for _, id := range carriedOut {
			out.Events = append(out.Events, trace.Event{Kind: trace.Free, ID: rename(id)})
		}
		s.SegmentEvents = len(out.Events) - before
	}
	s.Trace = out
	return s, nil
}
