package trace

import (
	"errors"
	"fmt"
	"math"
)

// Repetition is a trace's iterations played several times in a row, as a long training run plays
// the same shapes again and again. See RepeatIterations.
type Repetition struct {
	Trace      *Trace
	Times      int   // repetitions of the iterations
	Iterations int   // iteration markers in each repetition
	IterStride int64 // iteration N of the trace is numbered N + r*IterStride in repetition r (0-based)
}

// Errors of RepeatIterations.
var (
	ErrNoIterations = errors.New("trace: the trace has no iteration marker to repeat from")
	ErrRepeatCount  = errors.New("trace: bad repetition count")
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
func RepeatIterations(t *Trace, times int) (*Repetition, error) {
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
		case Free:
			freed[ev.ID] = true
		case Iter:
			if ev.ID < 0 {
				return nil, fmt.Errorf("%w: event %d: negative iteration %d", ErrFormat, i, ev.ID)
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
	out := &Trace{Name: t.Name, Header: append(append([]string(nil), t.Header...),
		fmt.Sprintf("iterations repeated %d times by trace.RepeatIterations", times))}
	out.Events = make([]Event, 0, first+times*(len(t.Events)-first))
	r := renamer{ids: make(map[int64]int64)}
	setup := make(map[int64]bool)
	for _, ev := range t.Events[:first] {
		if ev.Kind == Alloc {
			setup[ev.ID] = true
		}
		out.Events = append(out.Events, r.rename(ev))
	}
	for rep := range times {
		for _, ev := range t.Events[first:] {
			switch {
			case rep > 0 && ev.Kind == Alloc && !freed[ev.ID]:
				continue // resident since the first repetition
			case rep > 0 && ev.Kind == Free && setup[ev.ID]:
				continue // freed in the first repetition
			case ev.Kind == Iter:
				ev.ID += int64(rep) * stride
				out.Events = append(out.Events, ev)
			default:
				out.Events = append(out.Events, r.rename(ev))
			}
		}
	}
	return &Repetition{Trace: out, Times: times, Iterations: iters, IterStride: stride}, nil
}

// RepetitionOf returns the repetition (0-based) that iteration number it belongs to.
func (rp *Repetition) RepetitionOf(it int) int { return int(int64(it) / rp.IterStride) }
