package host_test

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/host"
	"github.com/gmlake/gmlake/stitch"
)

const g = 64 << 10

// bytesAt views n bytes of engine memory at addr (mapped outside the Go heap).
func bytesAt(addr uintptr, n uint64) []byte {
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&addr))), n)
}

func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = seed ^ byte(i) ^ byte(i>>8)
	}
}

func pattern(n uint64, seed byte) []byte {
	b := make([]byte, n)
	fill(b, seed)
	return b
}

// TestEngineStitchesRealMemory drives stitch.New(host.New(...)) into stitching two freed primitive
// blocks and checks that the stitched block is those blocks' bytes: written through the stitched
// range they read back through the primitive blocks' ranges (which stay mapped in the engine's
// arena), and the reverse, while the live block between them is untouched.
func TestEngineStitchesRealMemory(t *testing.T) {
	d, err := host.New(host.WithGranularity(g), host.WithCapacity(12*g), host.WithStrictAccess())
	require.NoError(t, err)
	e, err := stitch.New(d, stitch.WithSmallThreshold(g), stitch.WithMinStitch(g))
	require.NoError(t, err)
	defer func() {
		require.NoError(t, e.Close())
		require.NoError(t, d.Close())
	}()

	const piece = 4 * g
	var prims [3]uintptr
	for i := range prims {
		prims[i], err = e.Alloc(piece, 0)
		require.NoError(t, err)
	}
	middle := bytesAt(prims[1], piece)
	fill(middle, 0xAA)
	require.NoError(t, e.Free(prims[0], piece))
	require.NoError(t, e.Free(prims[2], piece))

	before := e.Stats().Outcomes.Stitch
	stitched, err := e.Alloc(2*piece, 0)
	require.NoError(t, err)
	require.Equal(t, before+1, e.Stats().Outcomes.Stitch, "the request was stitched")
	require.NoError(t, e.Check())

	// The stitched block's halves are the two freed blocks, in some order.
	first, second := bytesAt(prims[0], piece), bytesAt(prims[2], piece)
	s := bytesAt(stitched, 2*piece)
	fill(s, 0x11)
	if !bytes.Equal(first, s[:piece]) {
		first, second = second, first
	}
	assert.Equal(t, s[:piece], first, "stitched -> first primitive")
	assert.Equal(t, s[piece:], second, "stitched -> second primitive")

	fill(first, 0x5C)
	fill(second, 0x3E)
	assert.Equal(t, pattern(piece, 0x5C), s[:piece], "first primitive -> stitched")
	assert.Equal(t, pattern(piece, 0x3E), s[piece:], "second primitive -> stitched")
	assert.Equal(t, pattern(piece, 0xAA), middle, "the live block in between is untouched")

	require.NoError(t, e.Free(stitched, 2*piece))
	require.NoError(t, e.Free(prims[1], piece))
	require.NoError(t, e.EmptyCache())
	assert.Zero(t, e.Stats().ReservedBytes)
	free, total, err := d.MemInfo()
	require.NoError(t, err)
	assert.Equal(t, total, free, "EmptyCache gave every byte back to the driver")
	require.NoError(t, e.Check())
}
