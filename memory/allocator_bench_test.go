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
	exact := end.Outcomes[stitch.OutcomeExact] - start.Outcomes[stitch.OutcomeExact]
	b.ReportMetric(float64(exact)/n, "exact/pair")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/pair")
}
