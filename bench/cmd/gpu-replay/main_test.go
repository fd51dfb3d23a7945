package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/trace"
)

// synthetic is a small training-like trace: weights that stay, then iterations that allocate and
// free activations whose sizes change from one iteration to the next.
func synthetic() *trace.Trace {
	t := &trace.Trace{Name: "synthetic"}
	id := int64(0)
	alloc := func(size uint64) int64 {
		id++
		t.Events = append(t.Events, trace.Event{Kind: trace.Alloc, ID: id, Size: size})
		return id
	}
	for range 4 {
		alloc(48 << 20)
	}
	for it := range 7 {
		t.Events = append(t.Events, trace.Event{Kind: trace.Iter, ID: int64(it)})
		var acts []int64
		for k := range 12 {
			acts = append(acts, alloc(uint64(3<<20+k*(1<<20)+it%3*(512<<10))))
			if k%3 == 2 {
				alloc(100_000) // small, freed at once
				t.Events = append(t.Events, trace.Event{Kind: trace.Free, ID: id})
			}
		}
		for i := len(acts) - 1; i >= 0; i-- {
			t.Events = append(t.Events, trace.Event{Kind: trace.Free, ID: acts[i]})
		}
	}
	return t
}

// writeSynthetic writes the synthetic trace into dir and returns its path.
func writeSynthetic(t *testing.T, dir string) string {
	path := filepath.Join(dir, "synthetic.trace.gz")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, trace.Write(f, synthetic()))
	require.NoError(t, f.Close())
	return path
}

func TestSimOnlyRun(t *testing.T) {
	dir := t.TempDir()
	path := writeSynthetic(t, dir)

	c := cli{Traces: []string{path}, SimOnly: true, Bisect: true, Allocators: []string{"gmlake", "gorgonia", "direct"},
		JSON: filepath.Join(dir, "out.jsonl"), Markdown: filepath.Join(dir, "out.md")}
	var stderr bytes.Buffer
	require.NoError(t, c.run(&bytes.Buffer{}, &stderr), stderr.String())

	recs, err := readRecords(c.JSON)
	require.NoError(t, err)
	byRun := map[string]record{}
	for _, r := range recs {
		assert.Empty(t, r.Error)
		assert.Equal(t, "sim", r.Driver)
		byRun[r.Allocator+"/"+r.Run] = r
	}
	require.Len(t, byRun, 3)
	engine, bisect, pool := byRun["gmlake/uncapped"], byRun["gmlake/bisect"], byRun["gorgonia/arena"]

	allocs := 0
	for _, ev := range synthetic().Events {
		if ev.Kind == trace.Alloc {
			allocs++
		}
	}
	ph := engine.Phases
	assert.Equal(t, allocs, ph["setup"].Pairs+ph["warmup"].Pairs+ph["steady"].Pairs, "every allocation in one phase")
	assert.Equal(t, 3, ph["warmup"].Iterations)
	assert.Equal(t, 4, ph["steady"].Iterations)
	assert.NotZero(t, ph["setup"].DriverCalls, "the engine creates memory before the first iteration")
	for name, f := range ph {
		var sum uint64
		for _, k := range f.ByKind {
			sum += k.Calls
		}
		assert.Equal(t, f.DriverCalls, sum, "%s: calls by kind add up", name)
	}

	// Per iteration, measured: the time in calls adds up to the phases', the largest of each
	// phase is its maximum, and the own time per pair is there.
	require.Len(t, engine.DriverMsPerIter, 7)
	var warm, stead float64
	for i, v := range engine.DriverMsPerIter {
		if i < 3 {
			warm += v
		} else {
			stead += v
		}
	}
	assert.InDelta(t, float64(ph["warmup"].DriverNs)/1e6, warm, 1e-6)
	assert.InDelta(t, float64(ph["steady"].DriverNs)/1e6, stead, 1e-6)
	require.NotNil(t, engine.WarmupDriverMsMax)
	require.NotNil(t, engine.SteadyDriverMsMax)
	assert.Equal(t, slices.Max(engine.DriverMsPerIter[:3]), *engine.WarmupDriverMsMax)
	assert.Equal(t, slices.Max(engine.DriverMsPerIter[3:]), *engine.SteadyDriverMsMax)
	require.NotNil(t, engine.SteadyNsPerPair)
	assert.Positive(t, *engine.SteadyNsPerPair)
	assert.LessOrEqual(t, *engine.SteadyNsPerPair, ph["steady"].NsPerPair, "own time is part of the wall time")
	require.NotNil(t, pool.SteadyNsPerPair)

	assert.GreaterOrEqual(t, bisect.MinCapacity, engine.PeakActive)
	assert.LessOrEqual(t, bisect.MinCapacity, roundUp(engine.PeakReserved, granularity))
	assert.True(t, bisect.MinCapacityExact)
	assert.GreaterOrEqual(t, pool.PeakReserved, pool.PeakActive)

	md, err := os.ReadFile(c.Markdown)
	require.NoError(t, err)
	assert.Contains(t, string(md), "| synthetic | gmlake |")
}

func TestSimOnlyRepeated(t *testing.T) {
	dir := t.TempDir()
	path := writeSynthetic(t, dir)

	c := cli{Traces: []string{path}, SimOnly: true, Allocators: []string{"gmlake", "gmlake-unmarked"}, Repeat: 4,
		JSON: filepath.Join(dir, "out.jsonl"), Markdown: filepath.Join(dir, "out.md")}
	var stderr bytes.Buffer
	require.NoError(t, c.run(&bytes.Buffer{}, &stderr), stderr.String())

	recs, err := readRecords(c.JSON)
	require.NoError(t, err)
	var rep, once, unmarkedRep, unmarkedOnce *record
	for i, r := range recs {
		switch r.Allocator + "/" + r.Run {
		case "gmlake/repeated":
			rep = &recs[i]
		case "gmlake/uncapped":
			once = &recs[i]
		case "gmlake-unmarked/repeated":
			unmarkedRep = &recs[i]
		case "gmlake-unmarked/uncapped":
			unmarkedOnce = &recs[i]
		}
	}
	require.NotNil(t, rep, "a repeated run")
	require.NotNil(t, once)
	require.NotNil(t, unmarkedRep, "gmlake-unmarked asked for: its repeated run too")
	require.NotNil(t, unmarkedOnce)
	assert.Zero(t, rep.IterationsFound, "the marked replay tells the engine where iterations begin")
	assert.NotZero(t, unmarkedRep.IterationsFound, "the unmarked engine finds the iterations itself")
	assert.Empty(t, unmarkedOnce.Error)
	assert.Equal(t, once.PeakActive, unmarkedOnce.PeakActive)
	// Without marks too, by the last repetition the recurring shapes cost no driver call.
	assert.Zero(t, unmarkedRep.Phases["last_repetition"].DriverCalls)
	assert.NotZero(t, unmarkedRep.Phases["last_repetition"].Pairs)
	assert.Empty(t, rep.Error)
	assert.Equal(t, 4, rep.Repetitions)
	_, played := once.Phases["last_repetition"]
	assert.False(t, played, "a trace played once has no last repetition")

	ph := rep.Phases
	assert.Equal(t, 3, ph["warmup"].Iterations, "the warm-up is the first repetition's")
	assert.Equal(t, 4+2*7, ph["steady"].Iterations)
	assert.Equal(t, 7, ph["last_repetition"].Iterations)
	assert.NotZero(t, ph["last_repetition"].Pairs)
	// Three shapes recur: by the last repetition the engine replays each one's placements.
	assert.Zero(t, ph["last_repetition"].DriverCalls)
	assert.Equal(t, once.PeakActive, rep.PeakActive, "repetition adds no live memory")

	md, err := os.ReadFile(c.Markdown)
	require.NoError(t, err)
	assert.Contains(t, string(md), "| synthetic | gmlake | 4 | – / 0.0 |")
	assert.Contains(t, string(md), "| synthetic | gmlake-unmarked | 4 | – / 0.0 |")
}

func readRecords(path string) ([]record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var recs []record
	dec := json.NewDecoder(bytes.NewReader(data))
	for dec.More() {
		var r record
		if err := dec.Decode(&r); err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// The targets table: the measured steady and warm-up maxima against 1% and 10% of the step, the
// engine's own ns/pair against the pool's on the GPU, the GPU's peak reserved against the sim's.
func TestMarkdownTargets(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	recs := []record{
		{Trace: "a.trace.gz", Allocator: "gmlake", Driver: "sim", Run: "uncapped", PeakReserved: 1 << 30},
		{Trace: "a.trace.gz", Allocator: "gmlake", Driver: "cuda", Run: "uncapped", PeakReserved: 1 << 30,
			SteadyDriverMsMax: f(0.5), WarmupDriverMsMax: f(30), SteadyNsPerPair: f(1200)},
		{Trace: "a.trace.gz", Allocator: "gorgonia", Driver: "cuda", Run: "arena", SteadyNsPerPair: f(1000)},
		{Trace: "a.trace.gz", Allocator: "gmlake-unmarked", Driver: "sim", Run: "uncapped", PeakReserved: 2 << 30},
		{Trace: "a.trace.gz", Allocator: "gmlake-unmarked", Driver: "cuda", Run: "uncapped", PeakReserved: 2 << 30,
			SteadyDriverMsMax: f(3), WarmupDriverMsMax: f(10), SteadyNsPerPair: f(1600)},
		{Trace: "b.trace.gz", Allocator: "gmlake", Driver: "sim", Run: "uncapped", PeakReserved: 1 << 30},
	}
	var b strings.Builder
	markdownTargets(&b, recs, map[string]float64{"a": 0.2})
	assert.Contains(t, b.String(), "| a | gmlake | 200.0 | 0.50 <= 2.00 | **30.00 > 20.00** | 1200 / 1000 = 1.20x <= 1.5 | 1.00 / 1.00 (equal) |")
	assert.Contains(t, b.String(), "| a | gmlake-unmarked | 200.0 | **3.00 > 2.00** | 10.00 <= 20.00 | **1600 / 1000 = 1.60x > 1.5** | 2.00 / 2.00 (equal) |")
	assert.NotContains(t, b.String(), "| b |", "no GPU run of b")
}

// --no-bisect: no bisection on the simulator, so nothing to replay at a minimum capacity.
func TestSimOnlyNoBisect(t *testing.T) {
	dir := t.TempDir()
	c := cli{Traces: []string{writeSynthetic(t, dir)}, SimOnly: true, Allocators: []string{"gmlake", "gorgonia"},
		JSON: filepath.Join(dir, "out.jsonl")}
	require.NoError(t, c.run(&bytes.Buffer{}, &bytes.Buffer{}))
	recs, err := readRecords(c.JSON)
	require.NoError(t, err)
	var runs []string
	for _, r := range recs {
		runs = append(runs, r.Allocator+"/"+r.Run)
	}
	assert.Equal(t, []string{"gmlake/uncapped", "gorgonia/arena"}, runs)
}
