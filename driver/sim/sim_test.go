package sim_test

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

const g = sim.DefaultGranularity

func TestCapacity(t *testing.T) {
	d := sim.New(sim.WithCapacity(4 * g))
	h, err := d.Create(3 * g)
	require.NoError(t, err)
	_, err = d.Create(2 * g)
	assert.ErrorIs(t, err, stitch.ErrOutOfMemory)
	require.NoError(t, d.Release(h))
	_, err = d.Create(4 * g)
	assert.NoError(t, err)
	free, total, err := d.MemInfo()
	require.NoError(t, err)
	assert.Equal(t, uint64(0), free)
	assert.Equal(t, uint64(4*g), total)
}

func TestValidation(t *testing.T) {
	d := sim.New()
	h, err := d.Create(2 * g)
	require.NoError(t, err)
	base, err := d.Reserve(4 * g)
	require.NoError(t, err)
	require.NoError(t, d.Map(base, 2*g, h, 0))

	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"create zero", func() error { _, err := d.Create(0); return err }, sim.ErrInvalid},
		{"create unaligned", func() error { _, err := d.Create(g + 1); return err }, sim.ErrInvalid},
		{"map overlapping", func() error { return d.Map(base+g, 2*g, h, 0) }, sim.ErrOverlap},
		{"map part of a handle", func() error { return d.Map(base+2*g, g, h, 0) }, sim.ErrInvalid},
		{"map from inside a handle", func() error { return d.Map(base+2*g, g, h, g) }, sim.ErrInvalid},
		{"map past range end", func() error { return d.Map(base+3*g, 2*g, h, 0) }, sim.ErrOutOfRange},
		{"map unreserved", func() error { return d.Map(base+8*g, 2*g, h, 0) }, sim.ErrOutOfRange},
		{"map past handle end", func() error { return d.Map(base+2*g, 2*g, h, 2*g) }, sim.ErrInvalid},
		{"map unknown handle", func() error { return d.Map(base+2*g, 2*g, h+100, 0) }, sim.ErrNotFound},
		{"unmap part of a mapping", func() error { return d.Unmap(base, g) }, sim.ErrNotMapped},
		{"unmap unmapped", func() error { return d.Unmap(base+2*g, g) }, sim.ErrNotMapped},
		{"set access unmapped", func() error { return d.SetAccess(base+g, 2*g) }, sim.ErrNotMapped},
		{"release mapped", func() error { return d.Release(h) }, sim.ErrBusy},
		{"free with mappings", func() error { return d.Free(base, 4*g) }, sim.ErrBusy},
		{"free wrong size", func() error { return d.Free(base, 2*g) }, sim.ErrInvalid},
		{"free not a base", func() error { return d.Free(base+g, 3*g) }, sim.ErrNotFound},
		{"unknown event", func() error { _, err := d.EventDone(42); return err }, sim.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.ErrorIs(t, tt.call(), tt.want)
		})
	}
	// None of the rejected calls changed anything.
	assert.Equal(t, sim.Live{Handles: 1, Ranges: 1, Mappings: 1, PhysicalBytes: 2 * g, VirtualBytes: 4 * g}, d.Live())

	require.NoError(t, d.SetAccess(base, 2*g))
	assert.True(t, d.Accessible(base, 2*g))
	assert.False(t, d.Accessible(base, 3*g))
	require.NoError(t, d.Unmap(base, 2*g))
	require.NoError(t, d.Free(base, 4*g))
	require.NoError(t, d.Release(h))
	assert.Equal(t, sim.Live{}, d.Live())
}

func TestOneHandleUnderTwoRanges(t *testing.T) {
	d := sim.New()
	h, err := d.Create(2 * g)
	require.NoError(t, err)
	h2, err := d.Create(g)
	require.NoError(t, err)
	a, err := d.Reserve(2 * g)
	require.NoError(t, err)
	b, err := d.Reserve(3 * g)
	require.NoError(t, err)
	require.NoError(t, d.Map(a, 2*g, h, 0))
	require.NoError(t, d.Map(b, g, h2, 0))
	require.NoError(t, d.Map(b+g, 2*g, h, 0))
	assert.NotEqual(t, a, b)
	assert.Equal(t, 3, d.Live().Mappings)
	// One Unmap may cover several whole mappings.
	require.NoError(t, d.Unmap(b, 3*g))
	require.NoError(t, d.Unmap(a, 2*g))
	require.NoError(t, d.Release(h))
	require.NoError(t, d.Release(h2))
}

func TestFaultInjection(t *testing.T) {
	boom := errors.New("boom")
	d := sim.New(sim.WithFault(stitch.CallCreate, 2, boom))
	_, err := d.Create(g)
	require.NoError(t, err)
	_, err = d.Create(g)
	assert.ErrorIs(t, err, boom)
	_, err = d.Create(g)
	assert.NoError(t, err)
	assert.Equal(t, 2, d.Live().Handles, "a failed call has no effect")

	d.FailNth(stitch.CallReserve, 1, nil)
	_, err = d.Reserve(g)
	assert.ErrorIs(t, err, sim.ErrInjected)
	assert.Equal(t, uint64(3), d.Calls()[stitch.CallCreate])
	assert.Equal(t, uint64(1), d.Calls()[stitch.CallReserve])
	assert.Equal(t, uint64(4), d.TotalCalls())
}

func TestEvents(t *testing.T) {
	tests := []struct {
		name   string
		delay  int
		before int // queries answered false
	}{
		{"immediate", 0, 0},
		{"after two queries", 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := sim.New(sim.WithEventDelay(tt.delay))
			e, err := d.RecordEvent(1)
			require.NoError(t, err)
			for i := 0; i < tt.before; i++ {
				done, err := d.EventDone(e)
				require.NoError(t, err)
				assert.False(t, done)
			}
			done, err := d.EventDone(e)
			require.NoError(t, err)
			assert.True(t, done)
			require.NoError(t, d.DestroyEvent(e))
			assert.Equal(t, 0, d.Live().Events)
		})
	}

	d := sim.New(sim.WithEventDelay(1 << 30))
	e, err := d.RecordEvent(0)
	require.NoError(t, err)
	d.CompleteEvents()
	done, err := d.EventDone(e)
	require.NoError(t, err)
	assert.True(t, done, "CompleteEvents completes pending events")
	e2, err := d.RecordEvent(0)
	require.NoError(t, err)
	require.NoError(t, d.Synchronize())
	done, err = d.EventDone(e2)
	require.NoError(t, err)
	assert.True(t, done, "Synchronize completes pending events")
}

func TestAddressesNeverReused(t *testing.T) {
	d := sim.New()
	seen := map[uintptr]bool{}
	for i := 0; i < 100; i++ {
		a, err := d.Reserve(g)
		require.NoError(t, err)
		require.False(t, seen[a])
		seen[a] = true
		require.NoError(t, d.Free(a, g))
	}
}

func TestResolve(t *testing.T) {
	d := sim.New()
	h1, _ := d.Create(g)
	h2, _ := d.Create(2 * g)
	base, _ := d.Reserve(3 * g)
	require.NoError(t, d.Map(base, g, h1, 0))
	require.NoError(t, d.Map(base+g, 2*g, h2, 0))
	_, err := d.Resolve(base, g)
	assert.ErrorIs(t, err, sim.ErrNotMapped, "no access set yet")
	require.NoError(t, d.SetAccess(base, 3*g))
	got, err := d.Resolve(base+g/2, 2*g)
	require.NoError(t, err)
	assert.Equal(t, []sim.PhysRange{{Handle: h1, Offset: g / 2, Size: g / 2}, {Handle: h2, Offset: 0, Size: 3 * g / 2}}, got)
}

// TestManualEvents: events complete only when the test says so, in stream order.
func TestManualEvents(t *testing.T) {
	d := sim.New(sim.WithManualEvents())
	record := func(s stitch.Stream) stitch.Event {
		e, err := d.RecordEvent(s)
		require.NoError(t, err)
		return e
	}
	done := func(e stitch.Event) bool {
		ok, err := d.EventDone(e)
		require.NoError(t, err)
		return ok
	}
	a1, b1, a2, a3, b2 := record(1), record(2), record(1), record(1), record(2)
	for range 100 {
		require.False(t, done(a1), "no query completes a manual event")
	}
	require.NoError(t, d.CompleteEvent(a2))
	assert.True(t, done(a1), "an earlier event of the stream completes with it")
	assert.True(t, done(a2))
	assert.False(t, done(a3), "a later one does not")
	assert.False(t, done(b1), "nor one of another stream")
	d.CompleteStream(2)
	assert.True(t, done(b1))
	assert.True(t, done(b2))
	assert.False(t, done(a3))
	assert.Equal(t, []sim.EventState{{a1, 1, true}, {b1, 2, true}, {a2, 1, true}, {a3, 1, false}, {b2, 2, true}}, d.Events())
	require.NoError(t, d.Synchronize())
	assert.True(t, done(a3), "Synchronize completes everything")
	assert.ErrorIs(t, d.CompleteEvent(99), sim.ErrNotFound)
}

// TestEventLatency: an event completes once its latency has passed, not before.
func TestEventLatency(t *testing.T) {
	d := sim.New(sim.WithEventLatency(30 * time.Millisecond))
	e, err := d.RecordEvent(1)
	require.NoError(t, err)
	start := time.Now()
	for {
		ok, err := d.EventDone(e)
		require.NoError(t, err)
		if ok {
			break
		}
		time.Sleep(time.Millisecond)
	}
	assert.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond)
}

// TestDelayedEventCompletesEarlierOnes: with WithEventDelay too, a stream completes in order.
func TestDelayedEventCompletesEarlierOnes(t *testing.T) {
	d := sim.New(sim.WithEventDelay(1))
	first, err := d.RecordEvent(3)
	require.NoError(t, err)
	second, err := d.RecordEvent(3)
	require.NoError(t, err)
	for _, e := range []stitch.Event{second, second} {
		_, err := d.EventDone(e)
		require.NoError(t, err)
	}
	assert.Equal(t, []sim.EventState{{first, 3, true}, {second, 3, true}}, d.Events())
}

// TestManyMappings maps a range's handles in a shuffled order, sets access on parts, unmaps every
// other one, and checks each step against the plain answer: which slots are mapped, with access,
// and to which handle (the B-tree of mappings, and the walks that start mid-range).
func TestManyMappings(t *testing.T) {
	const n = 3000 // past one B-tree leaf many times over
	d := sim.New()
	base, err := d.Reserve(n * g)
	require.NoError(t, err)
	hs := make([]stitch.PhysHandle, n)
	for i := range hs {
		hs[i], err = d.Create(g)
		require.NoError(t, err)
	}
	order := rand.New(rand.NewPCG(1, 2)).Perm(n)
	for _, i := range order {
		require.NoError(t, d.Map(base+uintptr(i)*g, g, hs[i], 0))
	}
	assert.ErrorIs(t, d.Map(base+g, g, hs[0], 0), sim.ErrOverlap)
	require.NoError(t, d.SetAccess(base+100*g, 200*g))
	assert.True(t, d.Accessible(base+100*g, 200*g))
	assert.False(t, d.Accessible(base+99*g, 2*g), "slot 99 has no access")
	assert.False(t, d.Accessible(base+299*g, 2*g), "slot 300 has no access")
	got, err := d.Resolve(base+150*g+5, g)
	require.NoError(t, err)
	assert.Equal(t, []sim.PhysRange{{Handle: hs[150], Offset: 5, Size: g - 5}, {Handle: hs[151], Offset: 0, Size: 5}}, got)

	for i := 0; i < n; i += 2 {
		require.NoError(t, d.Unmap(base+uintptr(i)*g, g))
	}
	assert.Equal(t, n/2, d.Live().Mappings)
	assert.False(t, d.Accessible(base+150*g, g), "unmapped")
	assert.True(t, d.Accessible(base+151*g, g))
	assert.ErrorIs(t, d.SetAccess(base+500*g, 3*g), sim.ErrNotMapped, "slot 500 is unmapped")
	assert.ErrorIs(t, d.Unmap(base+1*g, 2*g), sim.ErrNotMapped, "slot 2 is unmapped")
	for i := 1; i < n; i += 2 {
		require.NoError(t, d.Unmap(base+uintptr(i)*g, g))
	}
	require.NoError(t, d.Free(base, n*g))
	for _, h := range hs {
		require.NoError(t, d.Release(h))
	}
	assert.Equal(t, sim.Live{}, d.Live())
}
