package stitch_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

// callsSince is how many calls of each kind d has had since before.
func callsSince(d *sim.Driver, before [stitch.NumCallKinds]uint64) map[stitch.CallKind]uint64 {
	now := d.Calls()
	delta := map[stitch.CallKind]uint64{}
	for k := range now {
		if now[k] != before[k] {
			delta[stitch.CallKind(k)] = now[k] - before[k]
		}
	}
	return delta
}

// TestStitchCostsPerHandle: a growth creates its bytes as handles of the handle size, and a stitch
// over two freed blocks maps each handle they lie in once, so that what memory costs in the driver
// is the number of handles it is made of, whatever their size.
func TestStitchCostsPerHandle(t *testing.T) {
	for _, handle := range []uint64{g, 50 * MiB} {
		t.Run(fmt.Sprintf("handle=%dMiB", handle/MiB), func(t *testing.T) {
			h := newHarness(t, []sim.Option{sim.WithCapacity(1 << 30)}, stitch.WithHandleSize(handle))
			before := h.d.Calls()
			x, err := h.alloc(100*MiB, 0)
			require.NoError(t, err)
			require.Equal(t, uint64(100*MiB/handle), callsSince(h.d, before)[stitch.CallCreate], "handles created for one 100 MiB block")
			_, err = h.alloc(50*MiB, 0)
			require.NoError(t, err)
			z, err := h.alloc(100*MiB, 0)
			require.NoError(t, err)
			require.NoError(t, h.free(x))
			require.NoError(t, h.free(z))
			before = h.d.Calls()
			_, err = h.alloc(200*MiB, 0)
			require.NoError(t, err)
			calls := callsSince(h.d, before)
			require.Equal(t, uint64(200*MiB/handle), calls[stitch.CallMap], "maps of the stitch over the two freed blocks")
			require.Zero(t, calls[stitch.CallCreate], "the stitch needs no new memory")
			h.check("after the stitch")
			h.closeAndCheckLeaks()
		})
	}
}
