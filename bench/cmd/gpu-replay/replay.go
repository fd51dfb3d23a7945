package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/gmlake/gmlake/baseline"
	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/trace"
)

// prepared is a trace compiled for replay (bench.Prepare), with its phases.
type prepared struct {
	name     string // file name, the label in reports
	workload string
	bench    *bench.Prepared // the compiled events, also for the bench package's simulated replays
	phases   phaser
}

func prepare(name string, t *trace.Trace) (*prepared, error) {
	bp, err := bench.Prepare(name, t)
	if err != nil {
		return nil, err
	}
	return &prepared{name: name, workload: t.Name, bench: bp}, nil
}

// prepareRepeated compiles t with its iterations played times times in a row (the setup once).
func prepareRepeated(name string, t *trace.Trace, times int) (*prepared, error) {
	rep, err := trace.RepeatIterations(t, times)
	if err != nil {
		return nil, err
	}
	p, err := prepare(name, rep.Trace)
	if err != nil {
		return nil, err
	}
	p.phases = phaser{stride: rep.IterStride, times: rep.Times}
	return p, nil
}

// result is one replay of a trace through one allocator, split by phase.
type result struct {
	events       int // events replayed
	oom          *bench.OOMEvent
	partial      bool // stopped by the time limit
	peakActive   uint64
	peakReserved uint64 // only with trackReserved
	iters        [numPhases]int
	pairs        [numPhases]int           // allocations made in each phase
	wall         [numPhases]time.Duration // wall time of each phase's events
	// Iteration numbers in marker order, and each one's allocations and wall time.
	iterOrder []int
	iterPairs map[int]int
	iterWall  map[int]time.Duration
}

// replay runs p through a, moving clock from phase to phase at iteration markers. Out of memory
// ends the replay (result.oom says where); any other error fails it. With trackReserved the
// allocator's Reserved is read after every allocation (cheap for the baselines; the engine reports
// its own peak). limit > 0 stops the replay after about that long (result.partial).
func replay(p *prepared, a baseline.Allocator, clock *callClock, st *streams, trackReserved bool, limit time.Duration) (*result, error) {
	begin := time.Now()
	start := begin
	r := &result{iterPairs: make(map[int]int), iterWall: make(map[int]time.Duration)}
	ops := p.bench.Ops()
	ptrs := make([]uintptr, p.bench.Slots())
	var active uint64
	iter, cur := -1, setup
	clock.now, clock.iter, clock.phases = cur, iter, p.phases
	// closePart books the wall time since start to the phase and the iteration in progress.
	closePart := func(now time.Time) {
		d := now.Sub(start)
		r.wall[cur] += d
		if iter >= 0 {
			r.iterWall[iter] += d
		}
	}
	for i, o := range ops {
		switch o.Kind {
		case trace.Alloc:
			s, err := st.get(uint64(o.Stream))
			if err != nil {
				return r, err
			}
			ptr, err := a.Alloc(o.Size, s)
			if err != nil {
				closePart(time.Now())
				r.events = i
				if errors.Is(err, baseline.ErrOutOfMemory) {
					r.oom = &bench.OOMEvent{Event: i, Iteration: iter, Requested: o.Size, Active: active,
						Reserved: a.Reserved(), Message: err.Error()}
					return r, nil
				}
				return r, fmt.Errorf("%s: %s: event %d: alloc %d bytes: %w", p.name, a.Name(), i, o.Size, err)
			}
			ptrs[o.Slot] = ptr
			active += o.Size
			r.peakActive = max(r.peakActive, active)
			if trackReserved {
				r.peakReserved = max(r.peakReserved, a.Reserved())
			}
			r.pairs[cur]++
			if iter >= 0 {
				r.iterPairs[iter]++
			}
		case trace.Free:
			if err := a.Free(ptrs[o.Slot], o.Size); err != nil {
				closePart(time.Now())
				r.events = i
				return r, fmt.Errorf("%s: %s: event %d: free %d bytes: %w", p.name, a.Name(), i, o.Size, err)
			}
			active -= o.Size
		case trace.Iter:
			now := time.Now()
			closePart(now)
			start = now
			iter = int(o.Slot)
			cur = p.phases.of(iter)
			clock.now, clock.iter = cur, iter
			r.iterOrder = append(r.iterOrder, iter)
			r.iters[cur]++
			if m, ok := a.(baseline.IterationMarker); ok {
				m.MarkIteration() // as gmlake-bench does: gmlake replays a recurring shape's placements
			}
		}
		if limit > 0 && i%256 == 255 && time.Since(begin) > limit {
			closePart(time.Now())
			r.events = i + 1
			r.partial = true
			return r, nil
		}
	}
	closePart(time.Now())
	r.events = len(ops)
	return r, nil
}
