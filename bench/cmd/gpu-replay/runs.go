package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gmlake/gmlake/baseline"
	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/driver/cuda"
	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/internal/units"
)

// unboundedArena lets the simulated first-fit pool grow to its high-water mark.
const unboundedArena = 1 << 50

// readSim reads the "bisect" records of an earlier --sim-only run, by trace.
func readSim(path string) (map[string]record, error) {
	prior := make(map[string]record)
	if path == "" {
		return prior, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if r.Driver == "sim" && r.Run == "bisect" && r.Error == "" {
			prior[r.Trace] = r
		}
	}
	return prior, sc.Err()
}

// simRuns replays p on the simulator: the engine without a limit, the bisection of its minimum
// capacity (or the earlier one from prior), and the first-fit pool's high-water mark. device is
// the simulated device's memory for the unlimited run: the GPU's, when there is one, since the
// engine's defaults (its arena, its budget of stitched views) follow the device's size.
func (c *cli) simRuns(p *prepared, prior map[string]record, device uint64, log io.Writer) []record {
	var recs []record
	base := record{Trace: p.name, Workload: p.workload, Driver: "sim"}

	var rec record // the marked engine's: the bisection starts from its peaks
	for _, name := range c.simEngines() {
		start := time.Now()
		r := base
		r.Allocator, r.Run = name, "uncapped"
		simEngine(p, device, &r)
		recs = append(recs, r)
		c.progress(log, &r, time.Since(start))
		if name == baseline.NameGMLake {
			rec = r
		}
	}

	if rec.Error == "" && c.Bisect {
		b, ok := prior[p.name]
		if !ok {
			start := time.Now()
			b = base
			b.Allocator, b.Run = "gmlake", "bisect"
			b.PeakActive, b.PeakReserved = rec.PeakActive, rec.PeakReserved
			bis, err := bench.MinCapacity(p.bench, bench.Spec{Name: "gmlake", New: simGMLake},
				rec.PeakActive, rec.PeakReserved, granularity, c.BisectProbes)
			b.setError(err)
			b.MinCapacity, b.MinCapacityExact = bis.Capacity, bis.Exact
			b.CapacityOverActive = float64(bis.Capacity) / float64(max(rec.PeakActive, 1))
			c.progress(log, &b, time.Since(start))
		}
		recs = append(recs, b)
	}

	start := time.Now()
	ff := base
	ff.Allocator, ff.Run = "gorgonia", "arena"
	clock := &callClock{}
	pool, err := baseline.NewFirstFit(timedDevice{d: baseline.NewSimDevice(), clock: clock}, unboundedArena)
	if err == nil {
		var r *result
		r, err = replay(p, pool, clock, &streams{}, false, 0)
		if r != nil {
			ff.fill(r, clock)
		}
		ff.PeakReserved, ff.Capacity = pool.Reserved(), pool.Reserved()
		err = errors.Join(err, pool.Check(), pool.Close())
	}
	ff.setError(err)
	recs = append(recs, ff)
	c.progress(log, &ff, time.Since(start))
	return recs
}

// gpuRuns replays p with real memory through each allocator asked for.
func (c *cli) gpuRuns(p *prepared, drv *cuda.Driver, simRecs []record, log io.Writer) []record {
	var minCap, highWater uint64
	for _, r := range simRecs {
		switch {
		case r.Allocator == "gmlake" && r.Run == "bisect" && r.Error == "":
			minCap = r.MinCapacity
		case r.Allocator == "gorgonia" && r.Error == "":
			highWater = r.PeakReserved
		}
	}
	var recs []record
	add := func(rec record, start time.Time) {
		recs = append(recs, rec)
		c.progress(log, &rec, time.Since(start))
	}
	if c.wants(baseline.NameGMLake) {
		start := time.Now()
		add(c.gpuEngine(p, drv, baseline.NameGMLake, "uncapped", 0), start)
		if minCap > 0 {
			start = time.Now()
			add(c.gpuEngine(p, drv, baseline.NameGMLake, "at-min-capacity", minCap), start)
			if c.Below && minCap > granularity {
				start = time.Now()
				add(c.gpuEngine(p, drv, baseline.NameGMLake, "below-min-capacity", minCap-granularity), start)
			}
		}
	}
	if c.wants(baseline.NameGMLakeUnmarked) {
		start := time.Now()
		add(c.gpuEngine(p, drv, baseline.NameGMLakeUnmarked, "uncapped", 0), start)
	}
	if c.wants("gorgonia") && highWater > 0 {
		start := time.Now()
		add(c.gpuFirstFit(p, drv, roundUp(highWater, granularity)), start)
	}
	if c.wants("direct") {
		start := time.Now()
		add(c.gpuDirect(p, drv), start)
	}
	return recs
}

// simEngines are the engines replayed on the simulator: gmlake always (its figures are the
// simulator's side of every comparison, and its bisection the GPU's capacities), gmlake-unmarked
// when asked for.
func (c *cli) simEngines() []string {
	if c.wants(baseline.NameGMLakeUnmarked) {
		return []string{baseline.NameGMLake, baseline.NameGMLakeUnmarked}
	}
	return []string{baseline.NameGMLake}
}

// simEngine replays p through the engine named rec.Allocator (gmlake or gmlake-unmarked) on a
// simulated device of device bytes, with no capacity limit, into rec.
func simEngine(p *prepared, device uint64, rec *record) {
	clock := &callClock{}
	a, err := newEngineAllocator(rec.Allocator, timedDriver{d: sim.New(sim.WithGranularity(granularity), sim.WithCapacity(device)), clock: clock}, 0)
	if err == nil {
		var r *result
		r, err = replay(p, a, clock, &streams{}, false, 0)
		if r != nil {
			rec.fill(r, clock)
			rec.fillEngine(a.Engine().Stats())
		}
		err = errors.Join(err, a.Check(), a.Close())
	}
	rec.setError(err)
}

// repeatRuns replays p, a trace with repeated iterations, through the engine without a capacity
// limit: on the simulator, and on the GPU when drv is not nil; marked (gmlake, always on the
// simulator) and unmarked (gmlake-unmarked) as asked.
func (c *cli) repeatRuns(p *prepared, drv *cuda.Driver, device uint64, log io.Writer) []record {
	var recs []record
	for _, name := range c.simEngines() {
		start := time.Now()
		rec := record{Trace: p.name, Workload: p.workload, Allocator: name, Driver: "sim", Run: "repeated",
			Repetitions: p.phases.times}
		simEngine(p, device, &rec)
		recs = append(recs, rec)
		c.progress(log, &rec, time.Since(start))
		if drv != nil && c.wants(name) {
			start = time.Now()
			g := c.gpuEngine(p, drv, name, "repeated", 0)
			g.Repetitions = p.phases.times
			recs = append(recs, g)
			c.progress(log, &g, time.Since(start))
		}
	}
	return recs
}

func newGPURecord(p *prepared, drv *cuda.Driver, alloc, run string) record {
	rec := record{Trace: p.name, Workload: p.workload, Allocator: alloc, Driver: "cuda", Run: run}
	rec.DeviceFreeBefore, _, _ = drv.MemInfo()
	return rec
}

// gpuEngine replays p through the engine named name (gmlake or gmlake-unmarked) on the GPU, holding
// at most capacity bytes (0: no limit).
func (c *cli) gpuEngine(p *prepared, drv *cuda.Driver, name, run string, capacity uint64) record {
	rec := newGPURecord(p, drv, name, run)
	rec.Capacity = capacity
	clock := &callClock{}
	a, err := newEngineAllocator(name, timedDriver{d: drv, clock: clock}, capacity)
	if err == nil {
		st := &streams{d: drv}
		var r *result
		r, err = replay(p, a, clock, st, false, 0)
		if r != nil {
			rec.fill(r, clock) // before Close, whose calls are not the replay's
			rec.fillEngine(a.Engine().Stats())
		}
		err = errors.Join(err, a.Check(), a.Close(), st.close())
	}
	rec.setError(err)
	rec.DeviceFreeAfter, _, _ = drv.MemInfo()
	return rec
}

func (c *cli) gpuFirstFit(p *prepared, drv *cuda.Driver, arena uint64) record {
	rec := newGPURecord(p, drv, "gorgonia", "arena")
	rec.Capacity = arena
	clock := &callClock{}
	pool, err := baseline.NewFirstFit(timedDevice{d: cudaDevice{drv}, clock: clock}, arena)
	if err == nil {
		var r *result
		r, err = replay(p, pool, clock, &streams{d: drv}, false, 0)
		if r != nil {
			rec.fill(r, clock)
		}
		rec.PeakReserved = arena // the whole arena is taken from the device up front
		err = errors.Join(err, pool.Check(), pool.Close())
	}
	rec.setError(err)
	rec.DeviceFreeAfter, _, _ = drv.MemInfo()
	return rec
}

func (c *cli) gpuDirect(p *prepared, drv *cuda.Driver) record {
	rec := newGPURecord(p, drv, "direct", "uncapped")
	clock := &callClock{}
	d := baseline.NewDirect(timedDevice{d: cudaDevice{drv}, clock: clock})
	r, err := replay(p, d, clock, &streams{d: drv}, true, c.DirectLimit)
	if r != nil {
		rec.fill(r, clock)
	}
	err = errors.Join(err, d.Close())
	rec.setError(err)
	rec.DeviceFreeAfter, _, _ = drv.MemInfo()
	return rec
}

func (rec *record) setError(err error) {
	if err != nil {
		rec.Error = err.Error()
	}
}

func (c *cli) progress(w io.Writer, r *record, took time.Duration) {
	status := "ok"
	switch {
	case r.Error != "":
		status = "ERROR " + r.Error
	case r.OOM:
		status = "out of memory"
	case r.Partial:
		status = "partial (time limit)"
	}
	extra := ""
	if r.MinCapacity > 0 {
		extra = fmt.Sprintf(" min capacity %s GiB (%.4f × active, exact %v)", units.FormatGiB(r.MinCapacity), r.CapacityOverActive, r.MinCapacityExact)
	}
	if last, ok := r.Phases["last_repetition"]; ok {
		extra += fmt.Sprintf(" last of %d repetitions: %.1f calls/iter, %s ms in driver, %.0f ns/pair;",
			r.Repetitions, last.CallsPerIter, ms(last.DriverNs), last.NsPerPair)
	}
	if r.Phases != nil {
		st := r.Phases["steady"]
		extra += fmt.Sprintf(" steady %.0f ns/pair %.1f calls/iter; ms in driver setup/warm-up/steady %s/%s/%s",
			st.NsPerPair, st.CallsPerIter, ms(r.Phases["setup"].DriverNs), ms(r.Phases["warmup"].DriverNs), ms(st.DriverNs))
	}
	fmt.Fprintf(w, "%-44s %-8s %-4s %-18s peak reserved %s GiB%s  %s  [%.1fs]\n",
		r.Trace, r.Allocator, r.Driver, r.Run, units.FormatGiB(r.PeakReserved), extra, status, took.Seconds())
}

func roundUp(n, to uint64) uint64 { return (n + to - 1) / to * to }
