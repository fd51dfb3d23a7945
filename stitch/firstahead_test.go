package stitch_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

// TestFirstIterationGrowsAhead: until the engine has seen an iteration (the setup and the first
// iteration, marked or not), a growth far from the capacity creates at least 1/128 of the room below
// it, but no more than the memory held, and the next requests take those bytes without a growth;
// near the capacity, once an iteration is seen and with WithExactGrowth, a growth creates what its
// request lacks; when the driver has less than the capacity says, the request's own bytes are
// grown.
func TestFirstIterationGrowsAhead(t *testing.T) {
	const mib = uint64(1 << 20)
	const gib = 1024 * mib
	const capacity = 64 * gib
	const req = 100 * mib
	const weights = 1 * gib
	ahead := (capacity - weights) / 128 // 504 MiB: a multiple of the 2 MiB granularity
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
		e.MarkIteration()
		_, grown := alloc(t, e, d, weights)
		assert.Equal(t, weights, grown, "nothing held yet: the request's own bytes")
		_, grown = alloc(t, e, d, req)
		assert.Equal(t, ahead, grown, "1/128 of the room")
		for i := range 4 {
			_, grown := alloc(t, e, d, req)
			assert.Zero(t, grown, "request %d takes the bytes ahead", i)
		}
		assert.Equal(t, weights+ahead, e.Stats().ReservedBytes)
	})

	t.Run("a small job", func(t *testing.T) {
		e, d := newEngine(t, capacity)
		e.MarkIteration()
		alloc(t, e, d, 10*mib)
		_, grown := alloc(t, e, d, 4*mib)
		assert.Equal(t, 10*mib, grown, "no more ahead than the memory held")
	})

	t.Run("never marked", func(t *testing.T) {
		e, d := newEngine(t, capacity)
		_, grown := alloc(t, e, d, weights)
		assert.Equal(t, weights, grown, "nothing held yet: the request's own bytes")
		_, grown = alloc(t, e, d, req)
		assert.Equal(t, ahead, grown, "the setup grows ahead too: 1/128 of the room")
		for i := range 4 {
			_, grown := alloc(t, e, d, req)
			assert.Zero(t, grown, "request %d takes the bytes ahead", i)
		}
	})

	t.Run("near the capacity", func(t *testing.T) {
		e, d := newEngine(t, capacity)
		e.MarkIteration()
		_, grown := alloc(t, e, d, 16*gib)
		assert.Equal(t, 16*gib, grown)
		// 16 GiB held is more than a quarter of the 48 GiB left.
		_, grown = alloc(t, e, d, req)
		assert.Equal(t, req, grown, "near the capacity a growth is what the request lacks")
	})

	t.Run("once an iteration is seen", func(t *testing.T) {
		e, d := newEngine(t, capacity)
		e.MarkIteration()
		p, _ := alloc(t, e, d, weights)
		q, grown := alloc(t, e, d, req)
		require.Equal(t, ahead, grown)
		require.NoError(t, e.Free(q, req))
		require.NoError(t, e.Free(p, weights))
		e.MarkIteration() // the first iteration is remembered
		_, grown = alloc(t, e, d, weights+ahead+88*mib)
		assert.Equal(t, 88*mib, grown, "past the first iteration a growth is what the request lacks")
	})

	t.Run("WithExactGrowth", func(t *testing.T) {
		e, d := newEngine(t, capacity, stitch.WithExactGrowth())
		e.MarkIteration()
		alloc(t, e, d, weights)
		_, grown := alloc(t, e, d, req)
		assert.Equal(t, req, grown)
	})

	t.Run("the driver has less than the capacity says", func(t *testing.T) {
		e, d := newEngine(t, weights+256*mib)
		e.MarkIteration()
		alloc(t, e, d, weights)
		alloc(t, e, d, req)
		assert.Equal(t, weights+req, e.Stats().ReservedBytes, "the bytes ahead are refused: the request's own bytes are grown")
		alloc(t, e, d, req)
		assert.Equal(t, weights+2*req, e.Stats().ReservedBytes)
	})
}

// TestFirstIterationHandles: before the engine has seen a whole iteration (the setup and the first
// iteration, marked or not), a growth's handles hold up to the room times its share of 128 TiB
// (firstIterationHandle) where that is more than the headroom share and no more than the memory
// held: four times the headroom share's in a 63 GiB room, 128 MiB in an H200's; in a room of 16
// GiB or less, for a job that holds less and with fixed handles they are not. (Once an iteration
// is seen, a growth is a new peak's deficit and the bytes ahead of it, in deficit handles:
// deficithandle_test.go.)
func TestFirstIterationHandles(t *testing.T) {
	const mib = uint64(1 << 20)
	const gib = 1024 * mib
	const capacity = 64 * gib
	handlesIn := func(t *testing.T, capacity uint64, mark bool, held uint64, opts ...stitch.Option) []uint64 {
		d := &createLog{Driver: sim.New(sim.WithCapacity(capacity))}
		e, err := stitch.New(d, append([]stitch.Option{stitch.WithCapacity(capacity), stitch.WithExactGrowth()}, opts...)...)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, e.Close()) })
		if held > 0 {
			_, err := e.Alloc(held, 0)
			require.NoError(t, err)
		}
		if mark {
			e.MarkIteration()
		}
		d.sizes = d.sizes[:0]
		_, err = e.Alloc(gib, 0)
		require.NoError(t, err)
		require.NoError(t, e.Check())
		return append([]uint64(nil), d.sizes...)
	}
	handles := func(t *testing.T, mark bool, held uint64, opts ...stitch.Option) []uint64 {
		return handlesIn(t, capacity, mark, held, opts...)
	}
	all := func(sizes []uint64, size uint64) []uint64 {
		want := make([]uint64, len(sizes))
		for i := range want {
			want[i] = size
		}
		return want
	}

	t.Run("first marked iteration", func(t *testing.T) {
		sizes := handles(t, true, gib)
		require.Equal(t, 16*mib, firstIterationHandle(capacity, gib))
		require.Equal(t, 4*mib, headroomHandle(capacity, gib))
		assert.Equal(t, all(sizes, 16*mib), sizes, "63 GiB squared over 128 TiB: 31 MiB")
		assert.Len(t, sizes, 64)
	})
	t.Run("an H200", func(t *testing.T) {
		const h200 = 141 * gib
		sizes := handlesIn(t, h200, true, 2*gib)
		require.Equal(t, 128*mib, firstIterationHandle(h200, 2*gib))
		assert.Equal(t, all(sizes, 128*mib), sizes, "139 GiB squared over 128 TiB: 151 MiB")
		assert.Len(t, sizes, 8)
	})
	t.Run("a small job", func(t *testing.T) {
		sizes := handles(t, true, 4*mib)
		assert.Equal(t, all(sizes, headroomHandle(capacity, 4*mib)), sizes, "no larger than the memory held")
	})
	t.Run("nothing held", func(t *testing.T) {
		sizes := handles(t, false, 0)
		assert.Equal(t, all(sizes, 8*mib), sizes, "no more than the memory held: 1/8192 of the room")
	})
	t.Run("never marked", func(t *testing.T) {
		sizes := handles(t, false, 2*gib)
		require.Equal(t, 16*mib, firstIterationHandle(capacity, 2*gib))
		assert.Equal(t, all(sizes, 16*mib), sizes, "the job's first iteration, found or not")
	})
	t.Run("a room of 16 GiB", func(t *testing.T) {
		// 48 GiB held leaves 16 GiB: its square over 128 TiB is 1/8192 of it, the headroom share.
		sizes := handles(t, true, 48*gib)
		require.Equal(t, headroomHandle(capacity, 48*gib), firstIterationHandle(capacity, 48*gib))
		assert.Equal(t, all(sizes, headroomHandle(capacity, 48*gib)), sizes)
	})
	t.Run("fixed handles", func(t *testing.T) {
		sizes := handles(t, true, 0, stitch.WithHandleSize(4*mib))
		assert.Equal(t, all(sizes, 4*mib), sizes)
	})
}
