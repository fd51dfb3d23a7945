package baseline

import (
	"testing"

	"github.com/gmlake/gmlake/internal/units"
	"github.com/gmlake/gmlake/stitch"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newTestCaching(t *testing.T, opts ...CachingOption) *Caching {
	t.Helper()
	c := NewCaching(NewSimDevice(), opts...)
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	return c
}

func cAlloc(t *testing.T, c *Caching, size uint64, s stitch.Stream) uintptr {
	t.Helper()
	p, err := c.Alloc(size, s)
	require.NoError(t, err)
	return p
}

func TestCachingSegmentSizes(t *testing.T) {
	tests := []struct {
		name    string
		size    uint64
		segment uint64
	}{
		{"tiny request: small pool, 2 MiB segment", 1, 2 * units.MiB},
		{"1 MiB is still small", 1 * units.MiB, 2 * units.MiB},
		{"just over 1 MiB: 20 MiB segment", 1*units.MiB + 1, 20 * units.MiB},
		{"under 10 MiB: 20 MiB segment", 10*units.MiB - 512, 20 * units.MiB},
		{"10 MiB: its own segment", 10 * units.MiB, 10 * units.MiB},
		{"over 10 MiB: rounded to 2 MiB", 10*units.MiB + 1, 12 * units.MiB},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCaching(t)
			p := cAlloc(t, c, tc.size, 0)
			assert.Equal(t, tc.segment, c.Reserved())
			assert.Equal(t, uint64(1), c.DriverCalls())
			require.NoError(t, c.Free(p, tc.size))
		})
	}
}

func TestCachingSmallPoolSplitsDownTo512(t *testing.T) {
	c := newTestCaching(t)
	a := cAlloc(t, c, 1, 0)
	b := cAlloc(t, c, 1, 0)
	assert.Equal(t, a+512, b, "requests round to 512 and split the 2 MiB segment")
	cAlloc(t, c, 2*units.MiB-3*512, 0) // larger than 1 MiB: large pool, a new 20 MiB segment
	assert.Equal(t, 22*units.MiB, c.Reserved())
	cAlloc(t, c, 1*units.MiB, 0)
	cAlloc(t, c, 1*units.MiB-3*512, 0) // leaves exactly 512 bytes: split off
	cAlloc(t, c, 512, 0)               // and used
	assert.Equal(t, 22*units.MiB, c.Reserved(), "everything fit in the first small segment")
	_, err := c.Alloc(1, 0)
	require.NoError(t, err)
	assert.Equal(t, 24*units.MiB, c.Reserved(), "the small segment is full")
}

func TestCachingLargePoolSplitsOnlyAboveOneMiB(t *testing.T) {
	c := newTestCaching(t)
	cAlloc(t, c, 19*units.MiB, 0) // 20 MiB segment, 1 MiB left: not split
	cAlloc(t, c, 2*units.MiB, 0)
	assert.Equal(t, 40*units.MiB, c.Reserved(), "the unsplit 1 MiB tail cannot serve anything")

	c2 := newTestCaching(t)
	cAlloc(t, c2, 19*units.MiB-512, 0) // 1 MiB + 512 left: split
	cAlloc(t, c2, 1*units.MiB+512, 0)
	assert.Equal(t, 20*units.MiB, c2.Reserved())
}

func TestCachingBestFitAndMerge(t *testing.T) {
	c := newTestCaching(t)
	big := cAlloc(t, c, 30*units.MiB, 0)
	small := cAlloc(t, c, 12*units.MiB, 0)
	require.NoError(t, c.Free(big, 30*units.MiB))
	require.NoError(t, c.Free(small, 12*units.MiB))
	assert.Equal(t, small, cAlloc(t, c, 11*units.MiB, 0), "best fit: the 12 MiB block, not the first or largest")

	a := cAlloc(t, c, 3*units.MiB, 0) // from the 30 MiB block: split
	b := cAlloc(t, c, 3*units.MiB, 0)
	assert.Equal(t, a+uintptr(3*units.MiB), b)
	require.NoError(t, c.Free(a, 3*units.MiB))
	require.NoError(t, c.Free(b, 3*units.MiB))
	whole := c.pools[cachePool{}].Ceil(30*units.MiB, 0)
	require.NotNil(t, whole, "the pieces merged back into one 30 MiB block")
	assert.Equal(t, big, whole.Value.ptr)
	assert.Equal(t, uint64(42*units.MiB), c.Reserved())
	assert.Equal(t, uint64(2), c.DriverCalls())
}

func TestCachingStreamsDoNotShareBlocks(t *testing.T) {
	c := newTestCaching(t)
	p := cAlloc(t, c, 12*units.MiB, 0)
	require.NoError(t, c.Free(p, 12*units.MiB))
	q := cAlloc(t, c, 12*units.MiB, 1)
	assert.NotEqual(t, p, q)
	assert.Equal(t, 24*units.MiB, c.Reserved())
}

func TestCachingFreesCacheAndRetriesBeforeOOM(t *testing.T) {
	c := newTestCaching(t, WithLimit(24*units.MiB))
	p := cAlloc(t, c, 12*units.MiB, 0)
	require.NoError(t, c.Free(p, 12*units.MiB))
	cAlloc(t, c, 14*units.MiB, 0) // 12 + 14 > 24: the cached 12 MiB segment goes back first
	assert.Equal(t, 14*units.MiB, c.Reserved())
	assert.Equal(t, uint64(3), c.DriverCalls(), "malloc, free of the cached segment, malloc")

	_, err := c.Alloc(12*units.MiB, 0) // 14 live + 12 > 24 and nothing cached
	var oom *OutOfMemoryError
	require.ErrorAs(t, err, &oom)
	assert.ErrorIs(t, err, ErrOutOfMemory)
	assert.Equal(t, 12*units.MiB, oom.Requested)
	assert.Equal(t, 14*units.MiB, oom.Reserved)
}

func TestCachingDeviceOOMAlsoRetries(t *testing.T) {
	c := NewCaching(NewSimDevice(WithDeviceCapacity(24 * units.MiB)))
	p := cAlloc(t, c, 12*units.MiB, 0)
	require.NoError(t, c.Free(p, 12*units.MiB))
	cAlloc(t, c, 14*units.MiB, 0)
	assert.Equal(t, 14*units.MiB, c.Reserved())
	assert.Equal(t, uint64(4), c.DriverCalls(), "failed malloc, free, malloc again")
	require.NoError(t, c.Close())
}

func TestCachingBadFrees(t *testing.T) {
	c := newTestCaching(t)
	p := cAlloc(t, c, 1000, 0)
	assert.ErrorIs(t, c.Free(p+512, 1000), ErrUnknownPointer)
	assert.ErrorIs(t, c.Free(p, 999), ErrSizeMismatch)
	require.NoError(t, c.Free(p, 1000))
	assert.ErrorIs(t, c.Free(p, 1000), ErrUnknownPointer)
}
