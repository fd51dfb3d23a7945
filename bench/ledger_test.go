package bench

import (
	"testing"
	"time"

	"github.com/gmlake/gmlake/driver/sim"
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
	g, err := NewGMLake(metered)
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
			assert.Equal(t, H200.VMM(kind, c.Bytes), c.Time, "%s: %s costs its chunks", when, kind)
		}
	}

	var ptrs []uintptr
	sizes := []uint64{3 * MiB, 40 * MiB, 700 * KiB, 64 * MiB, 10 * MiB}
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
	p, err := g.Alloc(100*MiB, 0) // larger than any free block: stitched or new memory
	require.NoError(t, err)
	require.NoError(t, g.Free(p, 100*MiB))
	check("after a larger block")
	require.NoError(t, g.Engine().EmptyCache())
	check("after emptying the cache")
	require.NoError(t, g.Close())
	check("after close")
	assert.Zero(t, drv.Live().PhysicalBytes)
	assert.Positive(t, metered.ledger.Tally()["release"].Calls)
}

// Device-based allocators: the ledger's bytes allocated less bytes freed are the bytes they hold
// from the device, and its calls are their successful DriverCalls.
func TestDeviceLedgers(t *testing.T) {
	newFirstFit := func() (Allocator, error) { return NewFirstFit(NewSimDevice(), 1*GiB) }
	tests := []struct {
		name string
		make func() (Allocator, error)
		held func(Allocator) uint64 // bytes held from the device
	}{
		{"caching", func() (Allocator, error) { return NewCaching(NewSimDevice()), nil }, Allocator.Reserved},
		{"direct", func() (Allocator, error) { return NewDirect(NewSimDevice()), nil }, Allocator.Reserved},
		{"gorgonia", newFirstFit, func(a Allocator) uint64 { return a.(*FirstFit).ArenaSize() }},
	}
	sizes := []uint64{512, 3 * MiB, 40 * MiB, 1024, 12 * MiB}
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
	run, err := Replay(p, NewDirect(NewSimDevice()), 0)
	require.NoError(t, err)
	require.True(t, run.Timed)
	assert.Equal(t, 250*time.Microsecond, run.SetupTime)
	assert.Equal(t, map[int]time.Duration{0: 850 * time.Microsecond, 1: 600 * time.Microsecond}, run.IterTime)

	untimed, err := Replay(p, untimedAllocator{NewDirect(NewSimDevice())}, 0)
	require.NoError(t, err)
	assert.False(t, untimed.Timed)
	assert.Nil(t, untimed.IterTime)
}

// untimedAllocator hides its allocator's ledger.
type untimedAllocator struct{ Allocator }
