package gpu

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// Offload and restore through pinned memory, freeing the device block in between, as activation
// offload does: the data must come back bit for bit.
func TestOffloadRestore(t *testing.T) {
	d := newDevice(t)
	r := rand.New(rand.NewPCG(37, 38))
	h := normalSlice(r, 1<<20)
	x, err := d.FromHost(h, 1024, 1024)
	require.NoError(t, err)
	buf, err := d.NewPinned(len(h))
	require.NoError(t, err)
	t.Cleanup(func() { buf.Free() })

	require.NoError(t, d.Offload(buf, x))
	require.NoError(t, x.Free())
	require.NoError(t, d.Synchronize())

	y := empty(t, d, 1024, 1024)
	require.NoError(t, d.Restore(y, buf))
	assertClose(t, to64(h), download(t, y), 0, "restored")
}
