package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/internal/units"
	"github.com/gmlake/gmlake/stitch"
)

// phaseFigures is what one phase of a replay cost.
type phaseFigures struct {
	Iterations   int     `json:"iterations"`
	Pairs        int     `json:"pairs"`          // allocations made (each an alloc+free pair, or still live)
	DriverCalls  uint64  `json:"driver_calls"`   // device calls the allocator made
	DriverNs     int64   `json:"driver_ns"`      // time inside those calls
	WallNs       int64   `json:"wall_ns"`        // wall time of the phase's events
	NsPerPair    float64 `json:"ns_per_pair"`    // WallNs / Pairs
	CallsPerIter float64 `json:"calls_per_iter"` // DriverCalls / Iterations (0 before the first iteration)
	// gmlake: calls and nanoseconds per driver call kind (create, map, set_access, ...).
	ByKind map[string]kindFigures `json:"by_kind,omitempty"`
}

// kindFigures is one driver call kind's share of a phase.
type kindFigures struct {
	Calls uint64 `json:"calls"`
	Ns    int64  `json:"ns"`
}

// record is one JSON line: one replay of one trace through one allocator on one driver.
type record struct {
	Trace     string `json:"trace"`
	Workload  string `json:"workload,omitempty"`
	Allocator string `json:"allocator"` // gmlake, gorgonia, direct
	Driver    string `json:"driver"`    // cuda (real H200 memory) or sim
	Run       string `json:"run"`       // uncapped, at-min-capacity, below-min-capacity, arena, bisect, repeated
	// Run "repeated" (--repeat): the trace's iterations played this many times in a row.
	Repetitions int `json:"repetitions,omitempty"`

	Capacity     uint64          `json:"capacity,omitempty"` // the limit of this run (gorgonia: its arena)
	OOM          bool            `json:"oom"`
	OOMAt        *bench.OOMEvent `json:"oom_at,omitempty"`
	Partial      bool            `json:"partial,omitempty"` // stopped by the time limit
	Events       int             `json:"events"`
	PeakActive   uint64          `json:"peak_active"`
	PeakReserved uint64          `json:"peak_reserved"`

	// The smallest capacity that replays without out-of-memory, bisected to 2 MiB on the
	// simulator (Run "bisect"); CapacityOverActive = MinCapacity / PeakActive.
	MinCapacity        uint64  `json:"min_capacity,omitempty"`
	MinCapacityExact   bool    `json:"min_capacity_exact,omitempty"`
	CapacityOverActive float64 `json:"capacity_over_active,omitempty"`

	Phases map[string]phaseFigures `json:"phases,omitempty"`
	// Measured per iteration (in marker order): milliseconds inside the allocator's device calls.
	// The largest over the steady iterations (bench.SteadyFrom on, single pass) and over the
	// warm-up ones (0 .. bench.SteadyFrom-1); and the allocator's own time per alloc+free pair over
	// the steady iterations: their wall time less the time inside device calls, per allocation.
	// The same three figures as gmlake-bench's (estimated there, measured here).
	DriverMsPerIter   []float64 `json:"driver_ms_per_iter,omitempty"`
	SteadyDriverMsMax *float64  `json:"steady_driver_ms_max,omitempty"`
	WarmupDriverMsMax *float64  `json:"warmup_driver_ms_max,omitempty"`
	SteadyNsPerPair   *float64  `json:"steady_ns_per_pair,omitempty"`

	Outcomes map[string]uint64 `json:"outcomes,omitempty"` // gmlake: requests per outcome
	Calls    map[string]uint64 `json:"calls,omitempty"`    // gmlake: driver calls per kind
	// IterationsFound: gmlake-unmarked, the iteration beginnings the engine found by itself
	// (stitch.Stats.IterationsFound; 0 when the replay marks them).
	IterationsFound uint64 `json:"iterations_found,omitempty"`

	DeviceFreeBefore uint64 `json:"device_free_before,omitempty"` // cuMemGetInfo free before the run
	DeviceFreeAfter  uint64 `json:"device_free_after,omitempty"`  // and after the allocator closed
	Error            string `json:"error,omitempty"`
}

func (rec *record) fill(r *result, clock *callClock) {
	rec.OOM, rec.OOMAt, rec.Partial, rec.Events = r.oom != nil, r.oom, r.partial, r.events
	rec.PeakActive = r.peakActive
	if r.peakReserved > 0 {
		rec.PeakReserved = r.peakReserved
	}
	rec.Phases = make(map[string]phaseFigures, numPhases)
	for ph := range numPhases {
		if ph == lastRep && r.iters[ph] == 0 {
			continue // a trace played once
		}
		f := phaseFigures{Iterations: r.iters[ph], Pairs: r.pairs[ph], DriverCalls: clock.calls[ph],
			DriverNs: clock.nanos[ph], WallNs: r.wall[ph].Nanoseconds()}
		if f.Pairs > 0 {
			f.NsPerPair = float64(f.WallNs) / float64(f.Pairs)
		}
		if f.Iterations > 0 {
			f.CallsPerIter = float64(f.DriverCalls) / float64(f.Iterations)
		}
		for k := range stitch.NumCallKinds {
			if n := clock.kindCalls[ph][k]; n > 0 {
				if f.ByKind == nil {
					f.ByKind = make(map[string]kindFigures)
				}
				f.ByKind[k.String()] = kindFigures{Calls: n, Ns: clock.kindNanos[ph][k]}
			}
		}
		rec.Phases[phaseNames[ph]] = f
	}
	rec.fillIterations(r, clock)
}

// fillIterations fills the per-iteration figures and the largest of the warm-up and steady ones.
func (rec *record) fillIterations(r *result, clock *callClock) {
	var ownNs, driverNs int64
	var pairs int
	for _, it := range r.iterOrder {
		driverMs := float64(clock.iterNanos[it]) / 1e6
		rec.DriverMsPerIter = append(rec.DriverMsPerIter, driverMs)
		var into **float64
		switch clock.phaseOf(it) {
		case warmup:
			into = &rec.WarmupDriverMsMax
		case steady:
			into = &rec.SteadyDriverMsMax
			ownNs += r.iterWall[it].Nanoseconds()
			driverNs += clock.iterNanos[it]
			pairs += r.iterPairs[it]
		default:
			continue
		}
		if *into == nil || driverMs > **into {
			v := driverMs
			*into = &v
		}
	}
	if pairs > 0 {
		v := float64(max(0, ownNs-driverNs)) / float64(pairs)
		rec.SteadyNsPerPair = &v
	}
}

func (rec *record) fillEngine(st stitch.Stats) {
	rec.PeakReserved = st.PeakReservedBytes
	rec.IterationsFound = st.IterationsFound
	rec.Outcomes = make(map[string]uint64, stitch.NumOutcomes)
	for o := range stitch.NumOutcomes {
		rec.Outcomes[o.String()] = st.Outcomes.Of(o)
	}
	rec.Calls = make(map[string]uint64, stitch.NumCallKinds)
	for k := range stitch.NumCallKinds {
		if st.DriverCalls.Of(k) > 0 {
			rec.Calls[k.String()] = st.DriverCalls.Of(k)
		}
	}
}

func writeJSON(w io.Writer, recs []record) error {
	enc := json.NewEncoder(w)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

func ms(ns int64) string { return fmt.Sprintf("%.1f", float64(ns)/1e6) }

// markdown writes one table row per (trace, allocator) on the GPU, with the simulator's figures
// beside them.
func markdown(w io.Writer, recs []record, header string) {
	find := func(trace, alloc, driver, run string) *record {
		for i := range recs {
			r := &recs[i]
			if r.Trace == trace && r.Allocator == alloc && r.Driver == driver && r.Run == run {
				return r
			}
		}
		return nil
	}
	var traces []string
	for _, r := range recs {
		if len(traces) == 0 || traces[len(traces)-1] != r.Trace {
			traces = append(traces, r.Trace)
		}
	}
	fmt.Fprintf(w, "%s\n\n", header)
	fmt.Fprintln(w, "| trace | allocator | peak active GiB | peak reserved GiB (GPU / sim) | capacity / active (sim min) | runs at it on GPU | fails 2 MiB below on GPU | setup: calls, ms in driver | warm-up: calls/iter, ms in driver (all 3 its) | steady: calls/iter, ms in driver (all its) | steady ns per alloc+free (GPU / sim) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, t := range traces {
		for _, alloc := range []string{"gmlake", "gmlake-unmarked", "gorgonia", "direct"} {
			first := "uncapped"
			if alloc == "gorgonia" {
				first = "arena"
			}
			g, s := find(t, alloc, "cuda", first), find(t, alloc, "sim", first)
			if g == nil && s == nil {
				continue
			}
			cell := func(f func(r *record) string, r *record) string {
				if r == nil {
					return "–"
				}
				if r.Error != "" {
					return "error"
				}
				return f(r)
			}
			row := []string{strings.TrimSuffix(t, ".trace.gz"), alloc}
			ref := g
			if ref == nil {
				ref = s
			}
			row = append(row, units.FormatGiB(ref.PeakActive))
			reserved := cell(func(r *record) string { return units.FormatGiB(r.PeakReserved) }, g) + " / " + cell(func(r *record) string { return units.FormatGiB(r.PeakReserved) }, s)
			if g != nil && g.Partial {
				reserved += " (partial)"
			}
			row = append(row, reserved)
			capCell, at, below := "–", "–", "–"
			switch alloc {
			case "gmlake":
				if b := find(t, alloc, "sim", "bisect"); b != nil && b.MinCapacity > 0 {
					capCell = fmt.Sprintf("%.3f", b.CapacityOverActive)
				}
				if r := find(t, alloc, "cuda", "at-min-capacity"); r != nil {
					at = yesNo(r.Error == "" && !r.OOM)
				}
				if r := find(t, alloc, "cuda", "below-min-capacity"); r != nil {
					below = yesNo(r.Error == "" && r.OOM)
				}
			case "gorgonia":
				if g != nil && g.PeakActive > 0 {
					capCell = fmt.Sprintf("%.3f", float64(g.Capacity)/float64(g.PeakActive))
					at = yesNo(g.Error == "" && !g.OOM)
				}
			}
			row = append(row, capCell, at, below)
			for _, ph := range []string{"setup", "warmup", "steady"} {
				row = append(row, cell(func(r *record) string {
					f := r.Phases[ph]
					if ph == "setup" {
						return fmt.Sprintf("%d, %s", f.DriverCalls, ms(f.DriverNs))
					}
					return fmt.Sprintf("%.1f, %s", f.CallsPerIter, ms(f.DriverNs))
				}, g))
			}
			steadyNs := func(r *record) string {
				if r.Phases["steady"].Pairs == 0 {
					return "–" // not reached (direct under its time limit)
				}
				return fmt.Sprintf("%.0f", r.Phases["steady"].NsPerPair)
			}
			row = append(row, cell(steadyNs, g)+" / "+cell(steadyNs, s))
			fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
		}
	}
}

// markdownRepeated writes one row per trace replayed with --repeat: what the engine's last
// repetition cost on the GPU and on the simulator.
func markdownRepeated(w io.Writer, recs []record) {
	var gpu, sim []*record
	for i := range recs {
		if r := &recs[i]; r.Run == "repeated" {
			if r.Driver == "cuda" {
				gpu = append(gpu, r)
			} else {
				sim = append(sim, r)
			}
		}
	}
	if len(gpu)+len(sim) == 0 {
		return
	}
	rows := gpu
	if len(rows) == 0 {
		rows = sim
	}
	fmt.Fprintln(w, "\nIterations repeated in a row (`--repeat`), gmlake with iteration marks and gmlake-unmarked without, no capacity limit: the last repetition.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| trace | allocator | repetitions | driver calls per iteration (GPU / sim) | ms in driver (GPU) | ns per alloc+free (GPU / sim) | peak reserved GiB (GPU / sim) |")
	fmt.Fprintln(w, "|---|---|---:|---|---:|---|---|")
	for _, r := range rows {
		var s *record
		for _, c := range sim {
			if c.Trace == r.Trace && c.Allocator == r.Allocator {
				s = c
			}
		}
		cell := func(r *record, f func(*record) string) string {
			switch {
			case r == nil:
				return "–"
			case r.Error != "":
				return "error"
			}
			return f(r)
		}
		var g *record
		if r.Driver == "cuda" {
			g = r
		}
		calls := func(r *record) string { return fmt.Sprintf("%.1f", r.Phases["last_repetition"].CallsPerIter) }
		pair := func(r *record) string { return fmt.Sprintf("%.0f", r.Phases["last_repetition"].NsPerPair) }
		gib := func(r *record) string { return units.FormatGiB(r.PeakReserved) }
		driverMs := "–"
		if g != nil && g.Error == "" {
			driverMs = ms(g.Phases["last_repetition"].DriverNs)
		}
		fmt.Fprintf(w, "| %s | %s | %d | %s / %s | %s | %s / %s | %s / %s |\n", strings.TrimSuffix(r.Trace, ".trace.gz"), r.Allocator, r.Repetitions,
			cell(g, calls), cell(s, calls), driverMs, cell(g, pair), cell(s, pair), cell(g, gib), cell(s, gib))
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// markdownTargets writes, per trace and engine (gmlake, gmlake-unmarked) with a GPU run, the
// measured figures against the
// targets: the largest steady iteration's driver time <= 1% of PyTorch's step, the largest warm-up
// iteration's <= 10%, the engine's own ns per pair <= 1.5 x the pool's on the GPU, and the GPU's
// peak reserved against the simulator's.
func markdownTargets(w io.Writer, recs []record, steps map[string]float64) {
	find := func(trace, alloc, driver, run string) *record {
		for i := range recs {
			if r := &recs[i]; r.Trace == trace && r.Allocator == alloc && r.Driver == driver && r.Run == run && r.Error == "" {
				return r
			}
		}
		return nil
	}
	var rows []string
	var traces []string
	for _, r := range recs {
		if len(traces) == 0 || traces[len(traces)-1] != r.Trace {
			traces = append(traces, r.Trace)
		}
	}
	for _, t := range traces {
		for _, alloc := range []string{"gmlake", "gmlake-unmarked"} {
			g := find(t, alloc, "cuda", "uncapped")
			if g == nil {
				continue
			}
			step, hasStep := steps[bench.TraceStem(t)]
			stepCell, steadyCell, warmCell := "–", msCell(g.SteadyDriverMsMax, 0, false), msCell(g.WarmupDriverMsMax, 0, false)
			if hasStep {
				stepCell = fmt.Sprintf("%.1f", 1000*step)
				steadyCell = msCell(g.SteadyDriverMsMax, 10*step, true) // 1% of the step, in ms
				warmCell = msCell(g.WarmupDriverMsMax, 100*step, true)  // 10%
			}
			nsCell := "–"
			if pool := find(t, "gorgonia", "cuda", "arena"); g.SteadyNsPerPair != nil && pool != nil && pool.SteadyNsPerPair != nil && *pool.SteadyNsPerPair > 0 {
				x := *g.SteadyNsPerPair / *pool.SteadyNsPerPair
				nsCell = fmt.Sprintf("%.0f / %.0f = %.2fx %s 1.5", *g.SteadyNsPerPair, *pool.SteadyNsPerPair, x, map[bool]string{true: "<=", false: ">"}[x <= 1.5])
				if x > 1.5 {
					nsCell = "**" + nsCell + "**"
				}
			}
			peakCell := "–"
			if s := find(t, alloc, "sim", "uncapped"); s != nil {
				peakCell = fmt.Sprintf("%s / %s", units.FormatGiB(g.PeakReserved), units.FormatGiB(s.PeakReserved))
				if g.PeakReserved == s.PeakReserved {
					peakCell += " (equal)"
				}
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s |", strings.TrimSuffix(t, ".trace.gz"), alloc, stepCell,
				steadyCell, warmCell, nsCell, peakCell))
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "\nMeasured against the targets, gmlake on the GPU, single pass: the largest time in the driver of any steady "+
		"iteration (3 on) against 1% of PyTorch's step, of any warm-up iteration (0-2) against 10%; the engine's own time "+
		"per alloc+free pair in the steady iterations (wall time less the time in driver calls) against 1.5 x the Gorgonia "+
		"pool's on the GPU; peak reserved on the GPU and on the simulator.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| trace | allocator | PyTorch step (ms) | steady driver ms max | warm-up driver ms max | steady ns/pair: engine / pool | peak reserved GiB: GPU / sim |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---|")
	for _, r := range rows {
		fmt.Fprintln(w, r)
	}
}

// msCell is a measured millisecond figure, against limit when there is one.
func msCell(v *float64, limit float64, hasLimit bool) string {
	switch {
	case v == nil:
		return "–"
	case !hasLimit:
		return fmt.Sprintf("%.2f", *v)
	case *v <= limit:
		return fmt.Sprintf("%.2f <= %.2f", *v, limit)
	}
	return fmt.Sprintf("**%.2f > %.2f**", *v, limit)
}
