package memory

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/host"
	"github.com/gmlake/gmlake/stitch"
)

// g is the test granularity: 64 KiB keeps every test small.
const g = 64 << 10

// newHostAllocator is an Allocator over a host driver of granularity g, with the small pool and the
// stitch threshold lowered to one granule so that small tests exercise stitching.
func newHostAllocator(t *testing.T, capacity uint64, opts ...stitch.Option) *Allocator {
	t.Helper()
	d, err := host.New(host.WithGranularity(g), host.WithCapacity(capacity))
	require.NoError(t, err)
	engineOpts := append([]stitch.Option{stitch.WithSmallThreshold(g), stitch.WithMinStitch(g)}, opts...)
	a, err := NewAllocator(d, WithEngineOptions(engineOpts...))
	require.NoError(t, err)
	t.Cleanup(func() {
		if !a.closed.Load() {
			require.NoError(t, a.Check())
			require.NoError(t, a.Close())
		}
	})
	return a
}

// view is the n bytes of host memory at m.
func view(m interface{ Uintptr() uintptr }, n uintptr) []byte { return bytesOf(m.Uintptr(), n) }

// fillPattern writes seed-derived bytes into b.
func fillPattern(b []byte, seed byte) {
	for i := range b {
		b[i] = seed ^ byte(i) ^ byte(i>>8)
	}
}

// pattern is what fillPattern writes into n bytes.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	fillPattern(b, seed)
	return b
}

// bytesAddr is the address of b's first byte (Go heap memory: never gmlake's).
func bytesAddr(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }
