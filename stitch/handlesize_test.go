package stitch_test

import (
	"fmt"
	"math/bits"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

// createLog is a simulated driver that records the size of every handle created.
type createLog struct {
	*sim.Driver
	sizes []uint64
}

func (d *createLog) Create(size uint64) (stitch.PhysHandle, error) {
	h, err := d.Driver.Create(size)
	if err == nil {
		d.sizes = append(d.sizes, size)
	}
	return h, err
}

// headroomHandle is the largest handle a growth may create with reserved bytes held under capacity:
// the largest power-of-two multiple of G within 1/8192 of the headroom, at most 1 GiB, at least G.
func headroomHandle(capacity, reserved uint64) uint64 { return shareHandle(capacity, reserved, 8192) }

// firstIterationHandle is headroomHandle before the engine has seen a whole iteration (the setup
// and the first iteration, marked or not): within the headroom times its share of 128 TiB where
// that is more than 1/8192 of it and no more than the bytes reserved.
func firstIterationHandle(capacity, reserved uint64) uint64 {
	room := capacity - reserved
	quad := uint64(float64(room) * float64(room) / (1 << 47))
	return handleWithin(max(room/8192, min(quad, reserved)))
}

// shareHandle is the largest power-of-two multiple of G within 1/share of the headroom, at most 1
// GiB, at least G.
func shareHandle(capacity, reserved, share uint64) uint64 {
	return handleWithin((capacity - reserved) / share)
}

// handleWithin is the largest power-of-two multiple of G within bound bytes, at most 1 GiB, at
// least G.
func handleWithin(bound uint64) uint64 {
	const g = 2 << 20
	limit := min(bound, 1<<30) / g
	if limit == 0 {
		return g
	}
	return g << (bits.Len64(limit) - 1)
}

// handleRun checks that sizes are one run of a growth's handles of size bound (what, in messages):
// all but the last of size bound; the last no larger than bound plus a quarter of it (a short end
// joined to it) and, after others, no smaller than a quarter of it (a shorter end is joined).
func handleRun(t *testing.T, sizes []uint64, bound uint64, what string) {
	t.Helper()
	for j, s := range sizes {
		if j < len(sizes)-1 {
			assert.Equal(t, bound, s, "%s handle %d: only a growth's last handle differs", what, j)
			continue
		}
		assert.Less(t, s, bound+bound/4, "%s handle %d: the last one holds less than a quarter more", what, j)
		if j > 0 {
			assert.GreaterOrEqual(t, s, bound/4, "%s handle %d: a shorter end joins the handle before it", what, j)
		}
	}
}

// TestHandlesSizedToHeadroom: without WithHandleSize, a growth creates handles of the size
// headroomHandle gives for the memory held before it (before an iteration is seen,
// firstIterationHandle, no smaller), the last one of a growth short or, where it would be under a
// quarter of the size, joined to the one before, so that far from the capacity a growth is a few
// large handles and near it handles of one chunk.
func TestHandlesSizedToHeadroom(t *testing.T) {
	const g, mib, gib = 2 << 20, uint64(1 << 20), uint64(1 << 30)
	for _, tc := range []struct {
		capacity, block uint64
		largest         uint64 // the first growth's handle size
		allocs          int    // allocations made, 0: until the capacity is reached
	}{
		{capacity: 64 * gib, block: 100 * mib, largest: 8 * mib},
		{capacity: 256 * mib, block: 100 * mib, largest: g},
		{capacity: 16 << 40, block: 3 * gib, largest: gib, allocs: 3},
	} {
		t.Run(fmt.Sprintf("capacity=%dMiB", tc.capacity>>20), func(t *testing.T) {
			d := &createLog{Driver: sim.New(sim.WithCapacity(tc.capacity))}
			e, err := stitch.New(d)
			require.NoError(t, err)
			defer func() { require.NoError(t, e.Close()) }()
			var shrank bool
			for i := 0; ; i++ {
				reserved := e.Stats().ReservedBytes
				if reserved+tc.block > tc.capacity || tc.allocs > 0 && i == tc.allocs {
					break
				}
				d.sizes = d.sizes[:0]
				_, err := e.Alloc(tc.block, 0)
				require.NoError(t, err)
				bound := firstIterationHandle(tc.capacity, reserved) // never marked, no iteration seen
				if i == 0 {
					require.NotEmpty(t, d.sizes)
					assert.Equal(t, tc.largest, d.sizes[0], "the first growth's first handle")
				}
				var sum uint64
				for _, s := range d.sizes {
					sum += s
				}
				handleRun(t, d.sizes, bound, fmt.Sprintf("alloc %d", i))
				assert.Equal(t, e.Stats().ReservedBytes-reserved, sum, "alloc %d: the handles are the growth", i)
				shrank = shrank || bound < tc.largest
				require.NoError(t, e.Check())
			}
			if tc.largest > g && tc.allocs == 0 {
				assert.True(t, shrank, "handles shrink as the capacity nears")
			}
		})
	}
}

// TestHandleSizeFixed: WithHandleSize fixes the handle size whatever the headroom.
func TestHandleSizeFixed(t *testing.T) {
	const mib = uint64(1 << 20)
	d := &createLog{Driver: sim.New(sim.WithCapacity(64 << 30))}
	e, err := stitch.New(d, stitch.WithHandleSize(64*mib))
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	_, err = e.Alloc(200*mib, 0)
	require.NoError(t, err)
	assert.Equal(t, []uint64{64 * mib, 64 * mib, 64 * mib, 8 * mib}, d.sizes)
}
