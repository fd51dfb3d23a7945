package bench

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gmlake/gmlake/baseline"
	"github.com/gmlake/gmlake/internal/units"
	"github.com/gmlake/gmlake/stitch"
	"github.com/gmlake/gmlake/trace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// build makes a prepared trace from lines of the text format.
func build(t testing.TB, lines ...string) *Prepared {
	t.Helper()
	tr, err := trace.Read(strings.NewReader(strings.Join(lines, "\n")))
	require.NoError(t, err)
	p, err := Prepare("synthetic", tr)
	require.NoError(t, err)
	return p
}

func spec(t testing.TB, name string) Spec {
	t.Helper()
	s, err := SimSpec(name)
	require.NoError(t, err)
	return s
}

// A trace whose minimum capacity is known for each allocator: 12 MiB, freed, then 14 MiB and 100
// bytes live together.
//   - caching: uncapped it keeps both large segments and a 2 MiB small one (28 MiB); under 16 MiB it
//     releases the cached 12 MiB segment and retries (the retry path), needing 14 + 2 MiB.
//   - direct: the live peak, 14 MiB + 512, bisected up to 16 MiB.
//   - gorgonia: 12 MiB at offset 0, freed, 14 MiB at offset 0, 256 bytes after it: 16 MiB.
func TestMinCapacityKnownAnswers(t *testing.T) {
	p := build(t, "a 0 12582912 0", "f 0", "a 1 14680064 0", "a 2 100 0", "f 2", "f 1")
	tests := []struct {
		alloc        string
		peakReserved uint64
		minCapacity  uint64
	}{
		{"caching", 28 * units.MiB, 16 * units.MiB}, // the 100-byte request adds a 2 MiB small segment
		{"direct", 14*units.MiB + 512, 16 * units.MiB},
		{"gorgonia", 14*units.MiB + 256, 16 * units.MiB},
	}
	for _, tc := range tests {
		t.Run(tc.alloc, func(t *testing.T) {
			rep, err := Measure(p, spec(t, tc.alloc), MeasureOptions{MinCapacity: true})
			require.NoError(t, err)
			assert.Equal(t, 14*units.MiB+100, rep.PeakActive)
			assert.Equal(t, tc.peakReserved, rep.PeakReserved)
			require.NotNil(t, rep.MinCapacity)
			assert.Equal(t, tc.minCapacity, *rep.MinCapacity)
			assert.True(t, *rep.MinCapacityExact)
			assert.InDelta(t, float64(tc.minCapacity)/float64(14*units.MiB+100), *rep.CapacityOverActive, 1e-9)
		})
	}
}

// Bisection at a fine step finds the exact byte boundary of a direct allocator.
func TestMinCapacityFineStep(t *testing.T) {
	p := build(t, "a 0 5000 0", "a 1 3000 0", "f 0", "a 2 6000 0")
	b, err := MinCapacity(p, spec(t, "direct"), 9000, 9216, 512, 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(3072+6144), b.Capacity, "3000 and 6000 rounded to 512")
	assert.True(t, b.Exact)
	require.NotNil(t, b.Binding, "one step below, the last allocation fails")
	assert.Equal(t, 3, b.Binding.Event)
	assert.Equal(t, uint64(6000), b.Binding.Requested)
	assert.Equal(t, uint64(3000), b.Binding.Active)
}

// A probe limit stops the bisection after that many halving replays: the bound found then is
// reported as not exact, and the same limit gives the same answer every time (no clock involved).
func TestMinCapacityMaxProbes(t *testing.T) {
	p := build(t, "a 0 5000 0", "a 1 3000 0", "f 0", "a 2 6000 0")
	full, err := MinCapacity(p, spec(t, "direct"), 1, 9216, 512, 0)
	require.NoError(t, err)
	require.True(t, full.Exact)
	assert.Equal(t, uint64(9216), full.Capacity)
	assert.Equal(t, 5, full.Probes, "from (0, 9216] to one 512-byte step: 18 steps, 5 halvings")

	for range 2 {
		cut, err := MinCapacity(p, spec(t, "direct"), 1, 9216, 512, 2)
		require.NoError(t, err)
		assert.False(t, cut.Exact, "2 probes do not narrow 18 steps to one")
		assert.Equal(t, 2, cut.Probes)
		assert.GreaterOrEqual(t, cut.Capacity, full.Capacity, "an upper bound")
		require.NotNil(t, cut.Binding, "the out-of-memory at the largest capacity tried below the bound")
		assert.Equal(t, 1, cut.Binding.Event)
	}

	enough, err := MinCapacity(p, spec(t, "direct"), 1, 9216, 512, full.Probes)
	require.NoError(t, err)
	assert.True(t, enough.Exact, "as many probes as the exact search needs")
	assert.Equal(t, full.Capacity, enough.Capacity)
}

func TestMeasureOOMAtCapacity(t *testing.T) {
	p := build(t, "i 0", "a 0 12582912 0", "f 0", "i 1", "a 1 14680064 0", "a 2 4194304 0")
	rep, err := Measure(p, spec(t, "direct"), MeasureOptions{Capacity: 16 * units.MiB})
	require.NoError(t, err)
	require.True(t, rep.OOM)
	require.NotNil(t, rep.OOMAt)
	assert.Equal(t, 5, rep.OOMAt.Event)
	assert.Equal(t, 1, rep.OOMAt.Iteration)
	assert.Equal(t, 4*units.MiB, rep.OOMAt.Requested)
	assert.Equal(t, 14*units.MiB, rep.OOMAt.Active)

	rep, err = Measure(p, spec(t, "direct"), MeasureOptions{Capacity: 18 * units.MiB})
	require.NoError(t, err)
	assert.False(t, rep.OOM)
	assert.Nil(t, rep.OOMAt)
}

// Driver calls are split at the markers: before i 0 is setup, iterations 0-2 warm-up, 3 on steady.
func TestMeasureDriverCallsPerIteration(t *testing.T) {
	lines := []string{"a 0 100 0"}
	id := 1
	for it := range 5 {
		lines = append(lines, fmt.Sprintf("i %d", it))
		for range it + 1 { // iteration it makes it+1 allocations and frees them
			lines = append(lines, fmt.Sprintf("a %d 1000 0", id), fmt.Sprintf("f %d", id))
			id++
		}
	}
	p := build(t, lines...)
	direct, err := Measure(p, spec(t, "direct"), MeasureOptions{})
	require.NoError(t, err)
	assert.Equal(t, uint64(1), direct.SetupDriverCalls)
	require.NotNil(t, direct.WarmupDriverCallsPerIter)
	assert.InDelta(t, (2.0+4+6)/3, *direct.WarmupDriverCallsPerIter, 1e-9)
	require.NotNil(t, direct.SteadyDriverCallsPerIter)
	assert.InDelta(t, (8.0+10)/2, *direct.SteadyDriverCallsPerIter, 1e-9)
	assert.Equal(t, []uint64{2, 4, 6, 8, 10}, direct.DriverCallsPerIter)
	// Each pair is a cuMemAlloc and a cuMemFree of 1000 bytes: 0.85 ms. The largest iteration of
	// each phase is its last.
	pair := float64(H200.Malloc(1000)+H200.MallocFree(1000)) / float64(time.Millisecond)
	require.NotNil(t, direct.WarmupDriverMsMax)
	assert.InDelta(t, 3*pair, *direct.WarmupDriverMsMax, 1e-9)
	require.NotNil(t, direct.SteadyDriverMsMax)
	assert.InDelta(t, 5*pair, *direct.SteadyDriverMsMax, 1e-9)
	require.Len(t, direct.DriverMsPerIter, 5)
	assert.InDelta(t, 4*pair, direct.DriverMsPerIter[3], 1e-9)
	// The allocator's own time: over the steady iterations' 4+5 pairs, and per iteration.
	require.NotNil(t, direct.SteadyNsPerPair)
	assert.Positive(t, *direct.SteadyNsPerPair)
	assert.Len(t, direct.CPUMsPerIter, 5)

	caching, err := Measure(p, spec(t, "caching"), MeasureOptions{})
	require.NoError(t, err)
	assert.Equal(t, uint64(1), caching.SetupDriverCalls)
	assert.Zero(t, *caching.WarmupDriverCallsPerIter)
	assert.Zero(t, *caching.SteadyDriverCallsPerIter)

	noMarkers, err := Measure(build(t, "a 0 100 0", "f 0"), spec(t, "caching"), MeasureOptions{})
	require.NoError(t, err)
	assert.Nil(t, noMarkers.SteadyDriverCallsPerIter)
	assert.Nil(t, noMarkers.WarmupDriverCallsPerIter)
	assert.Nil(t, noMarkers.SteadyDriverMsMax)
	assert.Nil(t, noMarkers.SteadyNsPerPair)
}

// The replay counts each iteration's allocations and books the time inside metered driver calls
// apart from the allocator's own.
func TestReplayBooksAllocatorTime(t *testing.T) {
	p := build(t, "a 0 100 0", "i 0", "a 1 1000 0", "a 2 1000 0", "f 1", "f 2", "i 1", "a 3 3000000 0", "f 3", "i 2")
	g, err := spec(t, "gmlake").New(0)
	require.NoError(t, err)
	run, err := Replay(p, g, 0)
	require.NoError(t, err)
	assert.Equal(t, map[int]int{0: 2, 1: 1, 2: 0}, run.IterPairs)
	require.Len(t, run.IterCPU, 3)
	var cpu time.Duration
	for _, d := range run.IterCPU {
		assert.GreaterOrEqual(t, d, time.Duration(0))
		cpu += d
	}
	wall := g.(DriverAccounter).DriverLedger().Wall()
	assert.Positive(t, wall)
	assert.LessOrEqual(t, cpu+wall, run.Elapsed+time.Millisecond, "own time and driver time are parts of the loop's")
	ns, ok := run.NsPerPair(0, 2)
	assert.True(t, ok)
	assert.InDelta(t, float64(run.IterCPU[0]+run.IterCPU[1])/3, ns, 1e-6)
	_, ok = run.NsPerPair(2, 3)
	assert.False(t, ok, "no allocation in iteration 2")
}

func TestReplayReportsAllocatorFailures(t *testing.T) {
	p := build(t, "a 0 100 0", "f 0")
	_, err := Measure(p, Spec{Name: "broken", New: func(uint64) (baseline.Allocator, error) {
		return brokenFree{baseline.NewDirect(baseline.NewSimDevice())}, nil
	}}, MeasureOptions{})
	assert.ErrorIs(t, err, ErrReplay)
	assert.ErrorIs(t, err, baseline.ErrSizeMismatch)
}

// brokenFree frees with the wrong size.
type brokenFree struct{ *baseline.Direct }

func (b brokenFree) Free(ptr uintptr, size uint64) error { return b.Direct.Free(ptr, size+1) }

func TestReplaySeries(t *testing.T) {
	p := build(t, "a 0 1000 0", "a 1 1000 0", "f 0", "f 1")
	run, err := Replay(p, baseline.NewDirect(baseline.NewSimDevice()), 2)
	require.NoError(t, err)
	require.Len(t, run.Series, 2)
	assert.Equal(t, Point{Event: 1, Active: 2000, Reserved: 2048}, run.Series[0])
	assert.Equal(t, Point{Event: 3, Active: 1000, Reserved: 1024}, run.Series[1])
}

func TestFragmentation(t *testing.T) {
	tests := []struct {
		name             string
		active, reserved uint64
		want             float64
	}{
		{"nothing reserved", 0, 0, 0},
		{"all used", 4 * units.MiB, 4 * units.MiB, 0},
		{"a quarter idle", 3 * units.MiB, 4 * units.MiB, 0.25},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.InDelta(t, tt.want, Fragmentation(tt.active, tt.reserved), 1e-12)
		})
	}
}

// windowed is an allocator that runs out of memory at every request when its capacity lies in
// [from, to): fitting that is not monotone in capacity, as the engine's can be.
type windowed struct{ baseline.Allocator }

func (windowed) Alloc(uint64, stitch.Stream) (uintptr, error) {
	return 0, fmt.Errorf("window: %w", baseline.ErrOutOfMemory)
}

// Where fitting is not monotone in capacity, a capacity that fits below one that fails is not
// the answer: the scan above the bisected capacity (2% of the peak active bytes, 9000 here: 180
// bytes, capacities 64, 128 and 192 bytes above at a step of 64) finds the failure and the search
// starts again above it, until every capacity scanned fits.
func TestMinCapacityScansAbove(t *testing.T) {
	p := build(t, "a 0 5000 0", "a 1 3000 0", "f 0", "a 2 6000 0")
	direct := spec(t, "direct")
	const step, fit = 64, 9216 // 3000 and 6000 rounded to 512
	for _, tc := range []struct {
		name     string
		from, to uint64 // the capacities that fail for want of luck
		want     uint64
		rescans  int
	}{
		{name: "monotone", want: fit},
		{name: "a window above", from: fit + 2*step, to: fit + 3*step, want: fit + 3*step, rescans: 1},
		{name: "a window just above", from: fit + step, to: fit + 2*step, want: fit + 2*step, rescans: 1},
		{name: "a window past the scan's end", from: fit + step, to: fit + 6*step, want: fit + 6*step, rescans: 1},
		{name: "a window beyond the scan", from: fit + 8*step, to: fit + 9*step, want: fit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Spec{Name: "windowed", New: func(capacity uint64) (baseline.Allocator, error) {
				a, err := direct.New(capacity)
				if err == nil && capacity >= tc.from && capacity < tc.to {
					return windowed{a}, nil
				}
				return a, err
			}}
			b, err := MinCapacity(p, s, 9000, fit, step, 0)
			require.NoError(t, err)
			assert.Equal(t, tc.want, b.Capacity)
			assert.True(t, b.Exact)
			assert.Equal(t, tc.rescans, b.Rescans)
			require.NotNil(t, b.Binding)
			if tc.rescans == 0 {
				assert.Zero(t, b.FirstFit)
				assert.Equal(t, 3, b.Binding.Event, "one step below the fit, the last request fails")
				return
			}
			assert.Equal(t, uint64(fit), b.FirstFit)
			assert.Equal(t, 0, b.Binding.Event, "one step below, in the window, the first request fails")
		})
	}
}
