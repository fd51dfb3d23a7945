package stitch_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

// BenchmarkMissManyViews measures a miss (a request of a size never seen, so no exact match and no
// home) with n cached stitched views, each holding a cached block: the search looks through views
// for one to reuse. The per-miss cost must not grow with n. Metric: ns/miss. Run with a fixed
// count, e.g. -benchtime=500x, so that every request is a new size.
func BenchmarkMissManyViews(b *testing.B) {
	cases := []struct {
		name string
		base uint64 // sizes are base - 512, base - 1024, ...
	}{
		// Fits a 2G view: the idle-window search of the views answers, one view's window.
		{"fits", 2 * g},
		// Smaller than a view: the same search, a window of a view.
		{"smaller", 3 * g / 2},
	}
	for _, c := range cases {
		for _, n := range []int{100, 5000} {
			b.Run(fmt.Sprintf("%s/views=%d", c.name, n), func(b *testing.B) {
				benchMiss(b, n, c.base)
			})
		}
	}
}

func benchMiss(b *testing.B, n int, base uint64) {
	e := manyViews(b, n)
	before := e.Stats()
	var elapsed time.Duration
	k := 0
	for b.Loop() {
		// A fresh size per iteration keeps the cache and the homes from answering.
		size := base - uint64(k%1600+1)*512
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
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(max(1, misses)), "ns/miss")
	b.ReportMetric(float64(after.StitchedBlocks), "views")
}

// manyViews returns an engine at its capacity whose free memory is n cached 2G stitched blocks, each
// in its own view over two chunks that live blocks separate, and n cached 1G blocks.
func manyViews(b *testing.B, n int) *stitch.Engine {
	b.Helper()
	capacity := uint64(4*n) * g
	e, err := stitch.New(sim.New(sim.WithCapacity(capacity)), stitch.WithCapacity(capacity),
		stitch.WithStitchBudget(2*n, 0))
	if err != nil {
		b.Fatal(err)
	}
	// live, gap, live, gap ...: no two gaps are adjacent, so a 2G request stitches two of them.
	var gaps []uintptr
	for i := range 4 * n {
		p, err := e.Alloc(g, 0)
		if err != nil {
			b.Fatal(err)
		}
		if i%2 == 1 {
			gaps = append(gaps, p)
		}
	}
	for _, p := range gaps {
		if err := e.Free(p, g); err != nil {
			b.Fatal(err)
		}
	}
	var stitched []uintptr
	for range n {
		p, err := e.Alloc(2*g, 0)
		if err != nil {
			b.Fatal(err)
		}
		stitched = append(stitched, p)
	}
	for _, p := range stitched {
		if err := e.Free(p, 2*g); err != nil {
			b.Fatal(err)
		}
	}
	if got := e.Stats().StitchedBlocks; got < n/2 {
		b.Fatalf("setup made %d views, want about %d", got, n)
	}
	return e
}
