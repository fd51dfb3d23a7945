package stitch_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

// BenchmarkMissLiveBlocks measures a miss through the engine's public Alloc and Free (a request of
// a size never seen, so the exact path cannot answer and the slow path searches) with n live 2 MiB
// blocks, every tenth of them cached, on the simulated device: the slow path's time must not grow
// with the live blocks. Metric: ns/miss (the Alloc alone; every request a miss). Run with a fixed
// count, e.g. -benchtime=2000x, so that every request is a new size.
func BenchmarkMissLiveBlocks(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("live=%d", n), func(b *testing.B) {
			const chunk = 2 << 20
			capacity := uint64(n+64) * chunk
			// One growth makes the arena the blocks are carved from.
			e, err := stitch.New(sim.New(sim.WithCapacity(capacity)), stitch.WithCapacity(capacity),
				stitch.WithWarmupGrowth(uint64(n)*chunk))
			if err != nil {
				b.Fatal(err)
			}
			ptrs := make([]uintptr, n)
			for i := range ptrs {
				if ptrs[i], err = e.Alloc(chunk, 0); err != nil {
					b.Fatal(err)
				}
			}
			for i := 0; i < n; i += 10 {
				if err := e.Free(ptrs[i], chunk); err != nil {
					b.Fatal(err)
				}
			}
			before := e.Stats()
			var elapsed time.Duration
			k := 0
			for b.Loop() {
				// A fresh size per iteration keeps the exact path from answering; no idle run
				// holds 3 MiB, so the slow path searches the arena.
				size := uint64(3<<20) - uint64(k%1600+1)*512
				k++
				start := time.Now()
				p, err := e.Alloc(size, 0)
				elapsed += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				if err := e.Free(p, size); err != nil {
					b.Fatal(err)
				}
			}
			after := e.Stats()
			misses := after.Outcomes.Total() - before.Outcomes.Total() - (after.Outcomes.Exact - before.Outcomes.Exact)
			if misses != uint64(k) {
				b.Fatalf("%d of %d requests missed the exact path", misses, k)
			}
			b.ReportMetric(float64(elapsed.Nanoseconds())/float64(max(1, misses)), "ns/miss")
		})
	}
}
