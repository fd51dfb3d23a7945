package memory

import (
	"testing"

	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake/driver/host"
	"github.com/gmlake/gmlake/stitch"
)

// BenchmarkGetPut measures steady-state Get+Put pairs through the Allocator (engine plus adapter)
// on real host memory, and reports per pair the driver calls (target 0) and the share of requests
// served by an exact match. "script" holds a training-like iteration live (all Gets, then all
// Puts); "pingpong" frees each block before asking for the next size.
func BenchmarkGetPut(b *testing.B) {
	sizes := []int64{4 << 20, 512, 3 << 20, 100 << 10, 8 << 20}
	b.Run("script", func(b *testing.B) {
		a := newBenchAllocator(b)
		mems := make([]tensor.Memory, len(sizes))
		iteration := func() {
			for i, size := range sizes {
				m, err := a.Get(size)
				if err != nil {
					b.Fatal(err)
				}
				mems[i] = m
			}
			for i, m := range mems {
				a.Put(m, sizes[i])
			}
		}
		iteration()
		measure(b, a, len(sizes), iteration)
	})
	b.Run("pingpong", func(b *testing.B) {
		a := newBenchAllocator(b)
		iteration := func() {
			for _, size := range sizes {
				m, err := a.Get(size)
				if err != nil {
					b.Fatal(err)
				}
				a.Put(m, size)
			}
		}
		iteration()
		measure(b, a, len(sizes), iteration)
	})
}

func newBenchAllocator(b *testing.B) *Allocator {
	d, err := host.New(host.WithCapacity(1 << 30))
	if err != nil {
		b.Fatal(err)
	}
	a, err := NewAllocator(d)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = a.Close() })
	return a
}

// measure runs iteration (pairs Get+Put pairs) b.N times and reports per-pair metrics.
func measure(b *testing.B, a *Allocator, pairs int, iteration func()) {
	start := a.Stats()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		iteration()
	}
	b.StopTimer()
	end := a.Stats()
	n := float64(b.N * pairs)
	b.ReportMetric(float64(end.TotalDriverCalls()-start.TotalDriverCalls())/n, "driver-calls/pair")
	exact := end.Outcomes.Exact - start.Outcomes.Exact
	b.ReportMetric(float64(exact)/n, "exact/pair")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/pair")
}

// BenchmarkExactPath measures one Get+Free of a cached size, side by side: through the engine alone
// (stitch.Engine.Alloc/Free, an address and no handle), and through the Allocator (a *Block handle,
// its freed flag claimed by Free). The difference is the adapter's cost: the handle's one heap
// allocation (tensor.Memory is an interface) and one compare-and-swap.
func BenchmarkExactPath(b *testing.B) {
	const size = 3 << 20
	b.Run("engine", func(b *testing.B) {
		d, err := host.New(host.WithCapacity(1 << 30))
		if err != nil {
			b.Fatal(err)
		}
		e, err := stitch.New(d)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = e.Close(); _ = d.Close() })
		p, _ := e.Alloc(size, 0)
		_ = e.Free(p, size)
		b.ReportAllocs()
		for b.Loop() {
			p, err := e.Alloc(size, 0)
			if err != nil {
				b.Fatal(err)
			}
			if err := e.Free(p, size); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("allocator", func(b *testing.B) {
		a := newBenchAllocator(b)
		m, _ := a.Get(size)
		_ = a.Free(m, size)
		b.ReportAllocs()
		for b.Loop() {
			m, err := a.Get(size)
			if err != nil {
				b.Fatal(err)
			}
			if err := a.Free(m, size); err != nil {
				b.Fatal(err)
			}
		}
	})
}
