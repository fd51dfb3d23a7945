package cuda_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/stitch"
)

// What the driver's calls cost on the device, per 2 MiB chunk, and what the engine's exact-fit path
// costs on it. Without a GPU they skip (or run on the fake library, which says nothing about a GPU).

// BenchmarkGPUMapRange: reserve a range over n existing chunks, map them, set access once, unmap
// and free it: the driver side of building (and dropping) a stitched block of n chunks.
func BenchmarkGPUMapRange(b *testing.B) {
	for _, n := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("chunks=%d", n), func(b *testing.B) {
			d := newDriverB(b)
			g := d.Granularity()
			hs := make([]stitch.PhysHandle, n)
			for i := range hs {
				h, err := d.Create(g)
				require.NoError(b, err)
				hs[i] = h
			}
			size := uint64(n) * g
			b.ResetTimer()
			for range b.N {
				addr, err := d.Reserve(size)
				require.NoError(b, err)
				for i, h := range hs {
					require.NoError(b, d.Map(addr+uintptr(uint64(i)*g), g, h, 0))
				}
				require.NoError(b, d.SetAccess(addr, size))
				require.NoError(b, d.Unmap(addr, size))
				require.NoError(b, d.Free(addr, size))
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/chunk")
			for _, h := range hs {
				require.NoError(b, d.Release(h))
			}
		})
	}
}

// BenchmarkGPUCreateRelease: one handle of n granules, created and released.
func BenchmarkGPUCreateRelease(b *testing.B) {
	for _, n := range []int{1, 64} {
		b.Run(fmt.Sprintf("chunks=%d", n), func(b *testing.B) {
			d := newDriverB(b)
			size := uint64(n) * d.Granularity()
			for range b.N {
				h, err := d.Create(size)
				require.NoError(b, err)
				require.NoError(b, d.Release(h))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/chunk")
		})
	}
}

// BenchmarkGPUEngineExactFit: the steady-state path, an alloc and a free of a size seen before,
// on real device memory. It must make no driver call.
func BenchmarkGPUEngineExactFit(b *testing.B) {
	d := newDriverB(b)
	e, err := stitch.New(d)
	require.NoError(b, err)
	defer e.Close()
	const size = 48 << 20
	p, err := e.Alloc(size, 0)
	require.NoError(b, err)
	require.NoError(b, e.Free(p, size))
	before := e.Stats().TotalDriverCalls()
	b.ResetTimer()
	for range b.N {
		p, err := e.Alloc(size, 0)
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Free(p, size); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(e.Stats().TotalDriverCalls()-before)/float64(b.N), "driver-calls/op")
}
