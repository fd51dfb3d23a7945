package bench

import (
	"errors"
	"fmt"
	"math"

	"github.com/gmlake/gmlake/trace"
)

// Repetition is a trace's iterations played several times in a row, as a long training run plays
// the same shapes again and again. See RepeatIterations.
type Repetition struct {
	Trace      *trace.Trace
	Times      int   // repetitions of the iterations
	Iterations int   // iteration markers in each repetition
	IterStride int64 // iteration N of the trace is numbered N + r*IterStride in repetition r (0-based)
}

// Errors of RepeatIterations.
var (
	ErrNoIterations = errors.New("bench: the trace has no iteration marker to repeat from")
	ErrRepeatCount  = errors.New("bench: bad repetition count")
)

// RepeatIterations returns t with its iterations (the events from the first iteration marker to the
// end) played times times in a row after the setup (the events before the first marker), which is
// played once.
//
// Every allocation gets a new id, numbered in order, so ids stay unique; iteration markers are
// renumbered so that each repetition has its own (Repetition.IterStride). An allocation live at the
// end of an iteration stays live into the next exactly as in t, since the events are t's. Two kinds
// of allocation are not repeated, or memory would grow with every repetition:
//   - allocations t never frees (weights, gradients, optimizer state, made lazily in iteration 0):
//     made in the first repetition only, they stay resident through the later ones, as in a long
//     run;
//   - allocations of the setup that an iteration frees: freed in the first repetition only.
//
// So the same allocations are live at the end of every repetition, those live at the end of t.
func RepeatIterations(t *trace.Trace, times int) (*Repetition, error) {
	if times < 1 {
		return nil, fmt.Errorf("%w: %d", ErrRepeatCount, times)
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	first := -1
	freed := make(map[int64]bool)
	var maxIter int64
	iters := 0
	for i, ev := range t.Events {
		switch ev.Kind {
		case trace.Free:
			freed[ev.ID] = true
		case trace.Iter:
			if ev.ID < 0 {
				return nil, fmt.Errorf("%w: event %d: negative iteration %d", trace.ErrFormat, i, ev.ID)
			}
			if first < 0 {
				first = i
			}
			maxIter = max(maxIter, ev.ID)
			iters++
		}
	}
	if first < 0 {
		return nil, ErrNoIterations
	}
	stride := maxIter + 1
	if stride > math.MaxInt64/int64(times) {
		return nil, fmt.Errorf("%w: %d repetitions of iterations numbered up to %d", ErrRepeatCount, times, maxIter)
	}
	out := &trace.Trace{Name: t.Name, Header: append(append([]string(nil), t.Header...),
		fmt.Sprintf("iterations repeated %d times by bench.RepeatIterations", times))}
	out.Events = make([]trace.Event, 0, first+times*(len(t.Events)-first))
	r := renamer{ids: make(map[int64]int64)}
	setup := make(map[int64]bool)
	for _, ev := range t.Events[:first] {
		if ev.Kind == trace.Alloc {
			setup[ev.ID] = true
		}
		out.Events = append(out.Events, r.rename(ev))
	}
	for rep := range times {
		for _, ev := range t.Events[first:] {
			switch {
			case rep > 0 && ev.Kind == trace.Alloc && !freed[ev.ID]:
				continue // resident since the first repetition
			case rep > 0 && ev.Kind == trace.Free && setup[ev.ID]:
				continue // freed in the first repetition
			case ev.Kind == trace.Iter:
				ev.ID += int64(rep) * stride
				out.Events = append(out.Events, ev)
			default:
				out.Events = append(out.Events, r.rename(ev))
			}
		}
	}
	return &Repetition{Trace: out, Times: times, Iterations: iters, IterStride: stride}, nil
}

// renamer gives allocations new ids 0, 1, 2, ... in order; a free takes the id of the latest
// allocation of its old id.
type renamer struct {
	ids  map[int64]int64
	next int64
}

func (r *renamer) rename(ev trace.Event) trace.Event {
	switch ev.Kind {
	case trace.Alloc:
		r.ids[ev.ID] = r.next
		ev.ID = r.next
		r.next++
	case trace.Free:
		ev.ID = r.ids[ev.ID]
	}
	return ev
}

// RepetitionOf returns the repetition (0-based) that iteration number it belongs to.
func (rp *Repetition) RepetitionOf(it int) int { return int(int64(it) / rp.IterStride) }
