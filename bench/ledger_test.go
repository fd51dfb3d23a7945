package bench

import (
	"testing"
	"time"

	"github.com/gmlake/gmlake/baseline"
	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/internal/units"
	"github.com/gmlake/gmlake/stitch"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkLedger checks what holds for any ledger: its time is the sum of its kinds' times.
func checkLedger(t *testing.T, l *DriverLedger) map[string]CallTally {
	t.Helper()
	tally := l.Tally()
	var sum time.Duration
	for _, c := range tally {
		sum += c.Time
	}
	assert.Equal(t, l.Time(), sum)
	return tally
}

// The metered driver under the engine: its ledger agrees with the simulator's call counters and
// live physical bytes, and linear kinds cost their bytes' chunks.
func TestMeteredDriver(t *testing.T) {
	drv := sim.New()
	metered := newMeteredDriver(drv, H200)
	g, err := baseline.NewGMLake(metered)
	require.NoError(t, err)

	check := func(when string) {
		tally := checkLedger(t, metered.ledger)
		calls := drv.Calls()
		for k := range stitch.NumCallKinds {
			assert.Equal(t, calls[k], tally[k.String()].Calls, "%s: %s calls", when, k)
		}
		assert.Equal(t, drv.Live().PhysicalBytes, tally["create"].Bytes-tally["release"].Bytes, "%s: live physical bytes", when)
		for _, kind := range []stitch.CallKind{stitch.CallCreate, stitch.CallMap, stitch.CallSetAccess, stitch.CallUnmap} {
			c := tally[kind.String()]
			hc := map[stitch.CallKind]HandleCost{stitch.CallCreate: H200.Create, stitch.CallMap: H200.Map,
				stitch.CallSetAccess: H200.SetAccess, stitch.CallUnmap: H200.Unmap}[kind]
			// The engine's ranges are wholly mapped: the bytes per handle add up to the calls' bytes.
			want := time.Duration(c.Handles)*hc.PerHandle + hc.Of(c.Bytes) - hc.PerHandle
			assert.InDelta(t, float64(want), float64(c.Time), float64(c.Handles), "%s: %s costs its handles", when, kind)
			assert.GreaterOrEqual(t, c.Handles, c.Calls, "%s: %s touches a handle per call at least", when, kind)
		}
	}

	var ptrs []uintptr
	sizes := []uint64{3 * units.MiB, 40 * units.MiB, 700 * units.KiB, 64 * units.MiB, 10 * units.MiB}
	for _, size := range sizes {
		p, err := g.Alloc(size, 0)
		require.NoError(t, err)
		ptrs = append(ptrs, p)
	}
	check("after allocating")
	assert.Positive(t, metered.ledger.Time())
	for i, p := range ptrs {
		require.NoError(t, g.Free(p, sizes[i]))
	}
	p, err := g.Alloc(100*units.MiB, 0) // larger than any free block: stitched or new memory
	require.NoError(t, err)
	require.NoError(t, g.Free(p, 100*units.MiB))
	check("after a larger block")
	require.NoError(t, g.Engine().EmptyCache())
	check("after emptying the cache")
	require.NoError(t, g.Close())
	check("after close")
	assert.Zero(t, drv.Live().PhysicalBytes)
	assert.Positive(t, metered.ledger.Tally()["release"].Calls)
}

// A range costs every handle mapped in it: set access over three handles costs three handles, an
// unmap of one of them one, and Release charges the handle's own size.
func TestMeteredDriverCostsPerHandle(t *testing.T) {
	metered := newMeteredDriver(sim.New(), H200)
	sizes := []uint64{2 * units.MiB, 64 * units.MiB, 1 * units.GiB}
	var total uint64
	for _, s := range sizes {
		total += s
	}
	base, err := metered.Reserve(total)
	require.NoError(t, err)
	handles := make([]stitch.PhysHandle, len(sizes))
	addr := base
	for i, s := range sizes {
		handles[i], err = metered.Create(s)
		require.NoError(t, err)
		require.NoError(t, metered.Map(addr, s, handles[i], 0))
		addr += uintptr(s)
	}
	l := metered.ledger
	var want time.Duration
	for _, s := range sizes {
		want += H200.SetAccess.Of(s)
	}
	before := l.Tally()["set_access"]
	require.NoError(t, metered.SetAccess(base, total))
	got := l.Tally()["set_access"]
	assert.Equal(t, uint64(3), got.Handles-before.Handles)
	assert.Equal(t, want, got.Time-before.Time)

	// A range over the first two handles costs two.
	require.NoError(t, metered.SetAccess(base, 2*units.MiB+64*units.MiB))
	last := l.Tally()["set_access"]
	assert.Equal(t, uint64(2), last.Handles-got.Handles)
	assert.Equal(t, H200.SetAccess.Of(2*units.MiB)+H200.SetAccess.Of(64*units.MiB), last.Time-got.Time)
	// The bytes of each mapping a range covers, where it starts or ends inside one.
	assert.Equal(t, []uint64{units.MiB, 64 * units.MiB, 3}, metered.covered(base+uintptr(units.MiB), units.MiB+64*units.MiB+3))
	assert.Empty(t, metered.covered(base+uintptr(total), units.GiB))

	require.NoError(t, metered.Unmap(base+uintptr(2*units.MiB), 64*units.MiB))
	assert.Equal(t, H200.Unmap.Of(64*units.MiB), l.Tally()["unmap"].Time)
	assert.Equal(t, uint64(1), l.Tally()["unmap"].Handles)
	require.NoError(t, metered.Release(handles[1]))
	assert.Equal(t, H200.Release.Of(64*units.MiB), l.Tally()["release"].Time)

	// What is left mapped: the first and the last handle, a hole between.
	require.NoError(t, metered.Unmap(base, 2*units.MiB))
	require.NoError(t, metered.Unmap(base+uintptr(66*units.MiB), 1*units.GiB))
	unmap := l.Tally()["unmap"]
	assert.Equal(t, uint64(3), unmap.Handles)
	assert.Equal(t, H200.Unmap.Of(64*units.MiB)+H200.Unmap.Of(2*units.MiB)+H200.Unmap.Of(1*units.GiB), unmap.Time)
	assert.Zero(t, metered.mappings.Len())
	assert.Positive(t, l.Wall())
}

// Device-based allocators: the ledger's bytes allocated less bytes freed are the bytes they hold
// from the device, and its calls are their successful DriverCalls.
func TestDeviceLedgers(t *testing.T) {
	tests := []struct {
		name string
		make func() (baseline.Allocator, error)
		held func(baseline.Allocator) uint64 // bytes held from the device
	}{
		{"caching", func() (baseline.Allocator, error) { return newSim(baseline.NameCaching, 0) }, baseline.Allocator.Reserved},
		{"direct", func() (baseline.Allocator, error) { return newSim(baseline.NameDirect, 0) }, baseline.Allocator.Reserved},
		{"gorgonia", func() (baseline.Allocator, error) { return newSim(baseline.NameGorgonia, 1*units.GiB) },
			func(a baseline.Allocator) uint64 { return a.(meteredFirstFit).ArenaSize() }},
	}
	sizes := []uint64{512, 3 * units.MiB, 40 * units.MiB, 1024, 12 * units.MiB}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := tt.make()
			require.NoError(t, err)
			l := a.(DriverAccounter).DriverLedger()
			require.NotNil(t, l)
			check := func(when string) {
				tally := checkLedger(t, l)
				assert.Equal(t, tt.held(a), tally[KindMalloc].Bytes-tally[KindMallocFree].Bytes, "%s: bytes held", when)
				assert.Equal(t, a.DriverCalls(), tally[KindMalloc].Calls+tally[KindMallocFree].Calls, "%s: calls", when)
			}
			var ptrs []uintptr
			for _, size := range sizes {
				p, err := a.Alloc(size, 0)
				require.NoError(t, err)
				ptrs = append(ptrs, p)
			}
			check("after allocating")
			for i, p := range ptrs {
				require.NoError(t, a.Free(p, sizes[i]))
			}
			check("after freeing")
			require.NoError(t, a.Close())
			tally := checkLedger(t, l)
			assert.Equal(t, tally[KindMalloc].Bytes, tally[KindMallocFree].Bytes, "after close: everything returned")
		})
	}
}

// The replay books the estimated time per iteration, as it books calls.
func TestReplayBooksDriverTime(t *testing.T) {
	p := build(t, "a 0 1024 0", "i 0", "a 1 1024 0", "f 1", "i 1", "f 0")
	direct, err := newSim(baseline.NameDirect, 0)
	require.NoError(t, err)
	run, err := Replay(p, direct, 0)
	require.NoError(t, err)
	require.True(t, run.Timed)
	assert.Equal(t, 250*time.Microsecond, run.SetupTime)
	assert.Equal(t, map[int]time.Duration{0: 850 * time.Microsecond, 1: 600 * time.Microsecond}, run.IterTime)

	untimed, err := Replay(p, untimedAllocator{baseline.NewDirect(baseline.NewSimDevice())}, 0)
	require.NoError(t, err)
	assert.False(t, untimed.Timed)
	assert.Nil(t, untimed.IterTime)
}

// untimedAllocator hides its allocator's ledger.
type untimedAllocator struct{ baseline.Allocator }
