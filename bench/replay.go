package bench

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/gmlake/gmlake/baseline"
	"github.com/gmlake/gmlake/stitch"
	"github.com/gmlake/gmlake/trace"
)

// Prepared is a trace compiled for replay: allocation ids become dense slot numbers, so replaying
// costs a slice index per event rather than a map lookup.
type Prepared struct {
	Name   string // the trace's label in reports (usually its file name)
	Trace  *trace.Trace
	ops    []Op
	slots  int
	allocs int
}

// Op is one compiled event: allocation ids become slots numbered 0 to Slots()-1 in order of
// allocation, so that a replay keeps each allocation's address in a slice.
type Op struct {
	Kind   trace.Kind
	Slot   int32  // Alloc, Free: the allocation's slot; Iter: the iteration number
	Size   uint64 // requested bytes of the allocation (Alloc and Free)
	Stream stitch.Stream
}

// Prepare validates t and compiles it; name labels it in reports.
func Prepare(name string, t *trace.Trace) (*Prepared, error) {
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &Prepared{Name: name, Trace: t, ops: make([]Op, 0, len(t.Events))}
	slotOf := make(map[int64]int32)
	sizeOf := make(map[int64]uint64)
	for _, ev := range t.Events {
		switch ev.Kind {
		case trace.Alloc:
			slotOf[ev.ID], sizeOf[ev.ID] = int32(p.slots), ev.Size
			p.ops = append(p.ops, Op{Kind: trace.Alloc, Slot: int32(p.slots), Size: ev.Size, Stream: stitch.Stream(ev.Stream)})
			p.slots++
			p.allocs++
		case trace.Free:
			p.ops = append(p.ops, Op{Kind: trace.Free, Slot: slotOf[ev.ID], Size: sizeOf[ev.ID]})
		case trace.Iter:
			p.ops = append(p.ops, Op{Kind: trace.Iter, Slot: int32(ev.ID)})
		}
	}
	return p, nil
}

// iterations returns the trace's iteration numbers in marker order.
func (p *Prepared) iterations() []int {
	var its []int
	for _, o := range p.ops {
		if o.Kind == trace.Iter {
			its = append(its, int(o.Slot))
		}
	}
	return its
}

// Allocs is the number of allocations in the trace.
func (p *Prepared) Allocs() int { return p.allocs }

// Ops is the compiled trace, one Op per event; the caller must not change it.
func (p *Prepared) Ops() []Op { return p.ops }

// Slots is the number of allocation slots the Ops use (one per allocation).
func (p *Prepared) Slots() int { return p.slots }

// Run is the outcome of one replay of a trace through one allocator.
type Run struct {
	PeakActive   uint64 // largest sum of requested bytes live at once (the same for every allocator)
	PeakReserved uint64 // largest Reserved() seen after any event
	Events       int    // events replayed (all of them unless out of memory)
	OOM          *OOMEvent
	// Driver calls before the first iteration marker, and in each iteration (indexed by the
	// marker's number; a trace without markers has none).
	SetupCalls uint64
	IterCalls  map[int]uint64
	// SteadyCallsByKind: driver calls per steady iteration (SteadyFrom on) of each kind, for an
	// allocator that is a CallCounter.
	SteadyCallsByKind map[string]float64
	// Estimated device time of the driver calls (DriverLedger), for an allocator that is a
	// DriverAccounter (Timed says so): before the first marker, in each iteration (as IterCalls),
	// and in milliseconds per steady iteration of each kind (kinds that cost nothing left out).
	Timed          bool
	SetupTime      time.Duration
	IterTime       map[int]time.Duration
	SteadyMsByKind map[string]float64
	// SteadyHandles: physical handles the driver calls of the steady iterations touched (created,
	// mapped, made accessible, unmapped, released; DriverLedger), per steady iteration.
	SteadyHandles float64
	Elapsed       time.Duration // wall time of the replay loop
	Pairs         int           // allocations made (each later freed or still live at the end)
	// The allocator's own time in each iteration (as IterCalls): the CPU time of the replaying
	// thread (threadCPU) less the wall time spent inside the driver calls where the ledger measures
	// it (DriverLedger.Wall), and the allocations made in it.
	IterCPU   map[int]time.Duration
	IterPairs map[int]int
	Series    []Point // sampled active/reserved bytes, when asked for
}

// OOMEvent says where a replay ran out of memory.
type OOMEvent struct {
	Event     int    `json:"event"`     // index into the trace's events
	Iteration int    `json:"iteration"` // iteration in progress, -1 before the first marker
	Requested uint64 `json:"requested"`
	Active    uint64 `json:"active"`   // requested bytes live at the time
	Reserved  uint64 `json:"reserved"` // the allocator's reserved bytes at the time
	Message   string `json:"message"`
}

// Point is one sample of a replay's memory use.
type Point struct {
	Event    int
	Active   uint64
	Reserved uint64
}

// ErrReplay is wrapped by replay failures other than running out of memory: the allocator
// misbehaved (an error on Free, an invariant broken).
var ErrReplay = errors.New("bench: replay failed")

// Replay runs p through a. It stops at the first out-of-memory (Run.OOM says where) and fails on any
// other error. series > 0 asks for about that many samples of active and reserved bytes (each the
// maximum over its stretch of events). An allocator that is a Checker is checked at the end.
func Replay(p *Prepared, a baseline.Allocator, series int) (*Run, error) {
	return replay(p, a, series, SteadyFrom)
}

// replay is Replay with Run.SteadyCallsByKind counted from iteration kindsFrom on.
func replay(p *Prepared, a baseline.Allocator, series, kindsFrom int) (*Run, error) {
	rp := &replayer{p: p, a: a, ptrs: make([]uintptr, p.slots), iter: -1, kindsFrom: kindsFrom,
		run: &Run{IterCalls: make(map[int]uint64), IterCPU: make(map[int]time.Duration), IterPairs: make(map[int]int)}}
	rp.counter, _ = a.(baseline.CallCounter)
	rp.marker, _ = a.(baseline.IterationMarker)
	if acct, ok := a.(DriverAccounter); ok && acct.DriverLedger() != nil {
		rp.ledger = acct.DriverLedger()
		rp.run.Timed, rp.run.IterTime = true, make(map[int]time.Duration)
	}
	if series > 0 {
		rp.stride = max(1, len(p.ops)/series)
		rp.run.Series = make([]Point, 0, series+1)
	}
	runtime.LockOSThread() // one thread's CPU clock times the iterations
	defer runtime.UnlockOSThread()
	start := time.Now()
	rp.iterStart = threadCPU()
	for i, o := range p.ops {
		if err := rp.step(i, o); err != nil {
			rp.run.Elapsed = time.Since(start)
			return rp.run, fmt.Errorf("%w: %s: %s: event %d: %w", ErrReplay, p.Name, a.Name(), i, err)
		}
		if rp.run.OOM != nil {
			rp.run.Elapsed, rp.run.Events = time.Since(start), i
			rp.closeIteration()
			return rp.run, nil
		}
		if rp.stride > 0 {
			rp.sampleAt(i)
		}
	}
	rp.run.Elapsed, rp.run.Events = time.Since(start), len(p.ops)
	rp.closeIteration()
	rp.steadyByKind()
	if c, ok := a.(baseline.Checker); ok {
		if err := c.Check(); err != nil {
			return rp.run, fmt.Errorf("%w: %s: %s: invariants broken after replay: %w", ErrReplay, p.Name, a.Name(), err)
		}
	}
	return rp.run, nil
}

// replayer is the state of one Replay.
type replayer struct {
	p      *Prepared
	a      baseline.Allocator
	run    *Run
	ptrs   []uintptr // address of each allocation, by slot
	active uint64    // requested bytes live
	iter   int       // iteration in progress, -1 before the first marker

	lastCalls   uint64                   // a.DriverCalls() when the iteration in progress began
	counter     baseline.CallCounter     // a, if it counts calls by kind
	marker      baseline.IterationMarker // a, if it takes iteration marks
	kindsFrom   int                      // first iteration of steady state for counting calls by kind
	steadyStart map[string]uint64        // counter's figures when steady state began
	steadyIters int                      // steady iterations begun

	ledger           *DriverLedger        // a's, if it keeps one
	lastTime         time.Duration        // ledger.Time() when the iteration in progress began
	steadyTallyStart map[string]CallTally // ledger's figures when steady state began

	iterStart time.Duration // threadCPU() when the iteration in progress began
	lastWall  time.Duration // ledger.Wall() then
	lastPairs int           // run.Pairs then

	stride int   // events per sample; 0 = no samples
	sample Point // the sample being gathered
}

// step replays one event; running out of memory sets run.OOM and is not an error.
func (rp *replayer) step(i int, o Op) error {
	switch o.Kind {
	case trace.Alloc:
		ptr, err := rp.a.Alloc(o.Size, o.Stream)
		if errors.Is(err, baseline.ErrOutOfMemory) {
			rp.run.OOM = &OOMEvent{Event: i, Iteration: rp.iter, Requested: o.Size, Active: rp.active,
				Reserved: rp.a.Reserved(), Message: err.Error()}
			return nil
		}
		if err != nil {
			return fmt.Errorf("alloc %d bytes: %w", o.Size, err)
		}
		rp.ptrs[o.Slot] = ptr
		rp.active += o.Size
		rp.run.PeakActive = max(rp.run.PeakActive, rp.active)
		rp.run.PeakReserved = max(rp.run.PeakReserved, rp.a.Reserved())
		rp.run.Pairs++
	case trace.Free:
		if err := rp.a.Free(rp.ptrs[o.Slot], o.Size); err != nil {
			return fmt.Errorf("free %d bytes: %w", o.Size, err)
		}
		rp.active -= o.Size
	case trace.Iter:
		rp.closeIteration()
		rp.iter = int(o.Slot)
		if rp.marker != nil {
			rp.marker.MarkIteration()
		}
		if rp.iter >= rp.kindsFrom {
			if rp.steadyIters == 0 {
				rp.startSteady()
			}
			rp.steadyIters++
		}
	}
	return nil
}

// startSteady takes the by-kind figures at the first steady iteration.
func (rp *replayer) startSteady() {
	if rp.counter != nil {
		rp.steadyStart = rp.counter.CallsByKind()
	}
	if rp.ledger != nil {
		rp.steadyTallyStart = rp.ledger.Tally()
	}
}

// closeIteration books the driver calls, and their estimated time, since the iteration in
// progress began.
func (rp *replayer) closeIteration() {
	now := threadCPU()
	cpu := now - rp.iterStart
	if rp.ledger != nil {
		wall := rp.ledger.Wall()
		cpu = max(0, cpu-(wall-rp.lastWall))
		rp.lastWall = wall
	}
	if rp.iter >= 0 {
		rp.run.IterCPU[rp.iter] += cpu
		rp.run.IterPairs[rp.iter] += rp.run.Pairs - rp.lastPairs
	}
	rp.iterStart, rp.lastPairs = now, rp.run.Pairs
	calls := rp.a.DriverCalls()
	book(&rp.run.SetupCalls, rp.run.IterCalls, rp.iter, calls-rp.lastCalls)
	rp.lastCalls = calls
	if rp.ledger == nil {
		return
	}
	t := rp.ledger.Time()
	book(&rp.run.SetupTime, rp.run.IterTime, rp.iter, t-rp.lastTime)
	rp.lastTime = t
}

// book adds d to the setup's figure (before the first iteration, iter < 0) or to iteration iter's.
func book[V uint64 | time.Duration](setup *V, perIter map[int]V, iter int, d V) {
	if iter < 0 {
		*setup += d
	} else {
		perIter[iter] += d
	}
}

func (rp *replayer) sampleAt(i int) {
	rp.sample.Active = max(rp.sample.Active, rp.active)
	rp.sample.Reserved = max(rp.sample.Reserved, rp.a.Reserved())
	if i%rp.stride == rp.stride-1 || i == len(rp.p.ops)-1 {
		rp.sample.Event = i
		rp.run.Series = append(rp.run.Series, rp.sample)
		rp.sample = Point{}
	}
}

// steadyByKind fills run.SteadyCallsByKind and run.SteadyTimeByKind from the figures now and at
// steady start.
func (rp *replayer) steadyByKind() {
	if rp.steadyStart != nil {
		rp.run.SteadyCallsByKind = make(map[string]float64)
		for kind, n := range rp.counter.CallsByKind() {
			if d := n - rp.steadyStart[kind]; d > 0 {
				rp.run.SteadyCallsByKind[kind] = float64(d) / float64(rp.steadyIters)
			}
		}
	}
	if rp.steadyTallyStart != nil {
		rp.run.SteadyMsByKind = make(map[string]float64)
		var handles uint64
		for kind, c := range rp.ledger.Tally() {
			if d := c.Time - rp.steadyTallyStart[kind].Time; d > 0 {
				rp.run.SteadyMsByKind[kind] = *msMean(d, rp.steadyIters)
			}
			handles += c.Handles - rp.steadyTallyStart[kind].Handles
		}
		rp.run.SteadyHandles = float64(handles) / float64(rp.steadyIters)
	}
}

// MsPerIteration averages IterTime over the iterations numbered in [from, to), in milliseconds;
// ok is false when the run has none there or is not Timed.
func (r *Run) MsPerIteration(from, to int) (mean float64, ok bool) {
	sum, n := sumOver(r.IterTime, from, to)
	if n == 0 {
		return 0, false
	}
	return *msMean(sum, n), true
}

// MsMax is the largest IterTime of the iterations numbered in [from, to), in milliseconds; ok is
// false when the run has none there or is not Timed.
func (r *Run) MsMax(from, to int) (largest float64, ok bool) {
	for it, v := range r.IterTime {
		if it >= from && it < to {
			largest, ok = max(largest, float64(v)/float64(time.Millisecond)), true
		}
	}
	return largest, ok
}

// NsPerPair is the allocator's own time (IterCPU) per allocation over the iterations numbered in
// [from, to); ok is false when they made no allocation.
func (r *Run) NsPerPair(from, to int) (ns float64, ok bool) {
	cpu, _ := sumOver(r.IterCPU, from, to)
	var pairs int
	for it, n := range r.IterPairs {
		if it >= from && it < to {
			pairs += n
		}
	}
	if pairs == 0 {
		return 0, false
	}
	return float64(cpu.Nanoseconds()) / float64(pairs), true
}

// CallsPerIteration averages IterCalls over the iterations numbered in [from, to); ok is false when
// the run has none there.
func (r *Run) CallsPerIteration(from, to int) (mean float64, ok bool) {
	sum, n := sumOver(r.IterCalls, from, to)
	if n == 0 {
		return 0, false
	}
	return float64(sum) / float64(n), true
}

// sumOver adds the values of per-iteration figures m over the iterations numbered in [from, to)
// and counts those iterations.
func sumOver[V uint64 | time.Duration](m map[int]V, from, to int) (sum V, n int) {
	for it, v := range m {
		if it >= from && it < to {
			sum += v
			n++
		}
	}
	return sum, n
}
