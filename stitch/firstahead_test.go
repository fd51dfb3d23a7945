package stitch_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

// TestFirstIterationGrowsAhead: until the engine has seen an iteration, a growth far from the
// capacity creates at least 1/128 of the room below it, and the next requests take those bytes
// without a growth; near the capacity, once an iteration is seen and with WithExactGrowth, a growth
// creates what its request lacks; when the driver has less than the capacity says, the request's
// own bytes are grown.
func TestFirstIterationGrowsAhead(t *testing.T) {
	const mib = uint64(1 << 20)
	const gib = 1024 * mib
	const capacity = 64 * gib
	const req = 100 * mib
	newEngine := func(t *testing.T, driverBytes uint64, opts ...stitch.Option) (*stitch.Engine, *createLog) {
		d := &createLog{Driver: sim.New(sim.WithCapacity(driverBytes))}
		e, err := stitch.New(d, append([]stitch.Option{stitch.WithCapacity(capacity)}, opts...)...)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, e.Close()) })
		return e, d
	}
	alloc := func(t *testing.T, e *stitch.Engine, d *createLog, size uint64) (uintptr, uint64) {
		t.Helper()
		d.sizes = d.sizes[:0]
		p, err := e.Alloc(size, 0)
		require.NoError(t, err)
		require.NoError(t, e.Check())
		return p, sum(d.sizes)
	}

	t.Run("far from the capacity", func(t *testing.T) {
		e, d := newEngine(t, capacity)
		_, grown := alloc(t, e, d, req)
		assert.Equal(t, capacity/128, grown, "the first growth is 1/128 of the room")
		for i := range 4 {
			_, grown := alloc(t, e, d, req)
			assert.Zero(t, grown, "request %d takes the bytes ahead", i)
		}
		assert.Equal(t, capacity/128, e.Stats().ReservedBytes)
	})

	t.Run("near the capacity", func(t *testing.T) {
		e, d := newEngine(t, capacity)
		_, grown := alloc(t, e, d, 16*gib)
		assert.Equal(t, 16*gib, grown, "a request larger than the bytes ahead grows its own bytes")
		// 16 GiB held is more than a quarter of the 48 GiB left.
		_, grown = alloc(t, e, d, req)
		assert.Equal(t, req, grown, "near the capacity a growth is what the request lacks")
	})

	t.Run("once an iteration is seen", func(t *testing.T) {
		e, d := newEngine(t, capacity)
		e.MarkIteration()
		p, grown := alloc(t, e, d, req)
		require.Equal(t, capacity/128, grown)
		require.NoError(t, e.Free(p, req))
		e.MarkIteration() // the first iteration is remembered
		_, grown = alloc(t, e, d, capacity/128+88*mib)
		assert.Equal(t, 88*mib, grown, "past the first iteration a growth is what the request lacks")
	})

	t.Run("WithExactGrowth", func(t *testing.T) {
		e, d := newEngine(t, capacity, stitch.WithExactGrowth())
		_, grown := alloc(t, e, d, req)
		assert.Equal(t, req, grown)
	})

	t.Run("the driver has less than the capacity says", func(t *testing.T) {
		e, d := newEngine(t, 256*mib)
		alloc(t, e, d, req)
		assert.Equal(t, req, e.Stats().ReservedBytes, "the bytes ahead are refused: the request's own bytes are grown")
		alloc(t, e, d, req)
		assert.Equal(t, 2*req, e.Stats().ReservedBytes)
	})
}
