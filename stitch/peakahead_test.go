package stitch_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

// TestPeakAheadOnceIterationSeen: once an iteration is remembered, an iteration that passes the
// job's peak grows ahead of its requests, as much as it has grown so far (within 1/1024 of the
// headroom), so that a new peak made of many requests costs a few handles instead of one per
// request. The first growth of an iteration, and (WithExactGrowth: no first-iteration bytes ahead,
// firstahead_test.go) every growth of the first iteration, create what the request lacks and no
// more.
func TestPeakAheadOnceIterationSeen(t *testing.T) {
	const mib = uint64(1 << 20)
	const capacity = uint64(1 << 40)
	const req = 100 * mib
	d := &createLog{Driver: sim.New(sim.WithCapacity(capacity))}
	e, err := stitch.New(d, stitch.WithExactGrowth())
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()

	// The first iteration: every growth is exactly what its request lacks.
	e.MarkIteration()
	var ptrs []uintptr
	for i := range 4 {
		d.sizes = d.sizes[:0]
		p, err := e.Alloc(req, 0)
		require.NoError(t, err)
		ptrs = append(ptrs, p)
		assert.Equal(t, req, sum(d.sizes), "first iteration, request %d grows its own bytes only", i)
	}
	for _, p := range ptrs {
		require.NoError(t, e.Free(p, req))
	}
	ptrs = ptrs[:0]
	e.MarkIteration() // the first iteration is remembered

	// A new peak: 16 requests held, 12 of them past the memory held.
	reserved := e.Stats().ReservedBytes
	require.Equal(t, 4*req, reserved)
	creates, grown := 0, 0
	var first []uint64
	for i := range 16 {
		d.sizes = d.sizes[:0]
		p, err := e.Alloc(req, 0)
		require.NoError(t, err)
		require.NoError(t, e.Check())
		ptrs = append(ptrs, p)
		if len(d.sizes) > 0 {
			if grown == 0 {
				first = append(first, d.sizes...)
			}
			grown++
			creates += len(d.sizes)
			for j, s := range d.sizes {
				assert.LessOrEqual(t, s, deficitHandle(capacity, reserved, true), "request %d, handle %d", i, j)
			}
		}
	}
	assert.Equal(t, req, sum(first), "the iteration's first growth is what its request lacks")
	assert.LessOrEqual(t, grown, 4, "the growths double: 100, 200, 400, 800 MiB hold 12 requests")
	assert.Equal(t, grown, creates, "each growth is one handle")
	held := e.Stats().ReservedBytes - reserved
	assert.GreaterOrEqual(t, held, 12*req)
	assert.Less(t, held, 2*12*req, "ahead of the requests by less than they needed")
	for _, p := range ptrs {
		require.NoError(t, e.Free(p, req))
	}
	require.NoError(t, e.Check())
}

// TestPeakAheadWithinCapacity: near the capacity the bytes ahead shrink with the headroom to
// nothing, so that a new peak that fits the capacity exactly is served.
func TestPeakAheadWithinCapacity(t *testing.T) {
	const mib = uint64(1 << 20)
	const capacity = 1024 * mib
	const req = 100 * mib
	d := &createLog{Driver: sim.New(sim.WithCapacity(capacity))}
	e, err := stitch.New(d, stitch.WithCapacity(capacity))
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	e.MarkIteration()
	p, err := e.Alloc(req, 0)
	require.NoError(t, err)
	require.NoError(t, e.Free(p, req))
	e.MarkIteration()
	for i := range 10 { // 1000 MiB of the 1024
		_, err := e.Alloc(req, 0)
		require.NoError(t, err, "request %d", i)
		require.NoError(t, e.Check())
	}
	assert.LessOrEqual(t, e.Stats().ReservedBytes, capacity)
}
