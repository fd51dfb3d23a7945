package cuda_test

import (
	"errors"
	"math/bits"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/cuda"
	"github.com/gmlake/gmlake/stitch"
)

func TestGPUDeviceInfo(t *testing.T) {
	d := newDriver(t)
	g := d.Granularity()
	assert.Equal(t, 1, bits.OnesCount64(g), "granularity %d is a power of two", g)
	free, total, err := d.MemInfo()
	require.NoError(t, err)
	assert.LessOrEqual(t, free, total)
	assert.Equal(t, d.TotalMem(), total)
	v, err := cuda.DriverVersion()
	require.NoError(t, err)
	t.Logf("device %d %q: %d bytes, %d free, granularity %d, driver API %d", d.Ordinal(), d.Name(), total, free, g, v)
}

func TestGPUGranularityOption(t *testing.T) {
	base := newDriver(t)
	g := base.Granularity()
	tests := []struct {
		name string
		want uint64
		err  error
	}{
		{"double", 2 * g, nil},
		{"not a power of two", 3 * g, cuda.ErrGranularity},
		{"below the minimum", g / 2, cuda.ErrGranularity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := cuda.New(cuda.WithGranularity(tt.want))
			if tt.err != nil {
				assert.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			defer d.Close()
			assert.Equal(t, tt.want, d.Granularity())
		})
	}
}

// One physical chunk under two virtual ranges: bytes written through one read back through the
// other, in both directions, and two chunks under one range are contiguous across the seam.
func TestGPUAliasAndStitch(t *testing.T) {
	d := newDriver(t)
	g := d.Granularity()
	a, err := d.Create(g)
	require.NoError(t, err)
	b, err := d.Create(g)
	require.NoError(t, err)

	stitched, err := d.Reserve(2 * g)
	require.NoError(t, err)
	require.NoError(t, d.Map(stitched, g, a, 0))
	require.NoError(t, d.Map(stitched+uintptr(g), g, b, 0))
	require.NoError(t, d.SetAccess(stitched, 2*g), "one access call over the whole stitched range")

	alone, err := d.Reserve(g)
	require.NoError(t, err)
	require.NoError(t, d.Map(alone, g, b, 0))
	require.NoError(t, d.SetAccess(alone, g))

	data := pattern(1, int(2*g))
	require.NoError(t, d.CopyToDevice(stitched, data))
	sameBytes(t, data[g:], readBack(t, d, alone, int(g)), "second chunk through its own range")

	back := pattern(2, int(g))
	require.NoError(t, d.CopyToDevice(alone, back))
	sameBytes(t, append(data[:g:g], back...), readBack(t, d, stitched, int(2*g)), "stitched range after a write through the alias")

	require.NoError(t, d.Unmap(alone, g))
	require.NoError(t, d.Free(alone, g))
	require.NoError(t, d.Unmap(stitched, 2*g))
	require.NoError(t, d.Free(stitched, 2*g))
	require.NoError(t, d.Release(a))
	require.NoError(t, d.Release(b))
}

// A handle maps only whole: a part of it, at an offset or a prefix, is refused before the driver is
// asked; several whole mappings unmap with one call, and a large handle holds its data.
func TestGPUMapWholeHandles(t *testing.T) {
	d := newDriver(t)
	g := d.Granularity()
	h, err := d.Create(3 * g)
	require.NoError(t, err)
	small, err := d.Create(g)
	require.NoError(t, err)
	part, err := d.Reserve(g)
	require.NoError(t, err)
	assert.ErrorIs(t, d.Map(part, g, h, 2*g), cuda.ErrOutOfRange, "at an offset")
	assert.ErrorIs(t, d.Map(part, g, h, 0), cuda.ErrOutOfRange, "a prefix")
	require.NoError(t, d.Free(part, g))

	both, err := d.Reserve(4 * g)
	require.NoError(t, err)
	require.NoError(t, d.Map(both, 3*g, h, 0))
	require.NoError(t, d.Map(both+uintptr(3*g), g, small, 0))
	require.NoError(t, d.SetAccess(both, 4*g))
	data := pattern(3, int(4*g))
	require.NoError(t, d.CopyToDevice(both, data))
	sameBytes(t, data, readBack(t, d, both, int(4*g)), "a 3-chunk handle and a 1-chunk one under one range")
	require.NoError(t, d.Unmap(both, 4*g), "one call over both mappings")
	require.NoError(t, d.Free(both, 4*g))
	require.NoError(t, d.Release(h))
	require.NoError(t, d.Release(small))
}

// Unmap must not pull memory from under queued work: it synchronises first, so the event recorded
// after a large fill has completed when Unmap returns.
func TestGPUUnmapWaitsForQueuedWork(t *testing.T) {
	d := newDriver(t)
	g := d.Granularity()
	size := roundTo(min(1<<30, d.TotalMem()/64), g) // 1 GiB: ~0.2 ms of fill at H200 bandwidth, repeated below
	h, err := d.Create(size)
	require.NoError(t, err)
	addr, err := d.Reserve(size)
	require.NoError(t, err)
	require.NoError(t, d.Map(addr, size, h, 0))
	require.NoError(t, d.SetAccess(addr, size))
	s, err := d.NewStream()
	require.NoError(t, err)
	defer func() { assert.NoError(t, d.DestroyStream(s)) }()

	for i := range 16 {
		require.NoError(t, d.MemsetAsync(addr, byte(i), size, s))
	}
	ev, err := d.RecordEvent(s)
	require.NoError(t, err)
	require.NoError(t, d.Unmap(addr, size))
	done, err := d.EventDone(ev)
	require.NoError(t, err)
	assert.True(t, done, "Unmap returned before the queued fills finished")
	require.NoError(t, d.DestroyEvent(ev))
	require.NoError(t, d.Synchronize(), "the context is healthy after the unmap")
	require.NoError(t, d.Free(addr, size))
	require.NoError(t, d.Release(h))
}

func TestGPUEvents(t *testing.T) {
	d := newDriver(t)
	s, err := d.NewStream()
	require.NoError(t, err)
	defer func() { assert.NoError(t, d.DestroyStream(s)) }()
	for _, stream := range []stitch.Stream{0, s} {
		for range 3 { // later rounds reuse the events handed back
			ev, err := d.RecordEvent(stream)
			require.NoError(t, err)
			require.NoError(t, d.SynchronizeStream(stream))
			done, err := d.EventDone(ev)
			require.NoError(t, err)
			assert.True(t, done, "event done after its stream synchronised")
			require.NoError(t, d.DestroyEvent(ev))
		}
	}
}

func TestGPUErrors(t *testing.T) {
	d := newDriver(t)
	g := d.Granularity()
	var ce *cuda.Error

	_, err := d.Create(g + 1)
	assert.ErrorIs(t, err, cuda.ErrGranularity)
	_, err = d.Reserve(g / 2)
	assert.ErrorIs(t, err, cuda.ErrGranularity)

	_, err = d.Create(roundTo(d.TotalMem()+g, g))
	assert.ErrorIs(t, err, stitch.ErrOutOfMemory, "more than the card has")

	_, err = d.MemAlloc(d.TotalMem() * 2)
	assert.ErrorIs(t, err, stitch.ErrOutOfMemory, "cuMemAlloc beyond the card")

	addr, err := d.Reserve(g)
	require.NoError(t, err)
	h, err := d.Create(g)
	require.NoError(t, err)
	require.NoError(t, d.Map(addr, g, h, 0))
	err = d.Map(addr, g, h, 0)
	require.True(t, errors.As(err, &ce), "second map over a mapped range: %v", err)
	assert.Equal(t, "cuMemMap", ce.Call)
	require.NoError(t, d.Unmap(addr, g))
	require.NoError(t, d.Free(addr, g))
	require.NoError(t, d.Release(h))
}

// Handles that are not (or no longer) live, and ranges beyond an allocation, are refused before
// they reach the driver.
func TestGPUInvalidHandles(t *testing.T) {
	d := newDriver(t)
	g := d.Granularity()

	addr, err := d.Reserve(2 * g)
	require.NoError(t, err)
	assert.ErrorIs(t, d.Map(addr, g, stitch.PhysHandle(0xdead0000), 0), cuda.ErrUnknownHandle)

	h, err := d.Create(g)
	require.NoError(t, err)
	assert.ErrorIs(t, d.Map(addr, 2*g, h, 0), cuda.ErrOutOfRange)
	assert.ErrorIs(t, d.Map(addr, g, h, g), cuda.ErrOutOfRange)
	require.NoError(t, d.Release(h))
	assert.ErrorIs(t, d.Release(h), cuda.ErrUnknownHandle, "double release")
	assert.ErrorIs(t, d.Map(addr, g, h, 0), cuda.ErrUnknownHandle, "map after release")
	require.NoError(t, d.Free(addr, 2*g))
}

func TestGPUClosed(t *testing.T) {
	d := newDriver(t)
	require.NoError(t, d.Close())
	_, err := d.Create(d.Granularity())
	assert.ErrorIs(t, err, cuda.ErrClosed)
	_, err = d.RecordEvent(0)
	assert.ErrorIs(t, err, cuda.ErrClosed)
	assert.ErrorIs(t, d.Synchronize(), cuda.ErrClosed)
	assert.NoError(t, d.Close(), "second close")
}

func roundTo(n, g uint64) uint64 { return (n + g - 1) / g * g }

func TestGPUOneLibraryPerProcess(t *testing.T) {
	newDriver(t) // loads the library, or skips
	_, err := cuda.New(cuda.WithLibrary("/nonexistent/libcuda.so.1"))
	assert.ErrorIs(t, err, cuda.ErrLibraryLoaded)
}
