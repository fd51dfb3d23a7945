package gmlake

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake/baseline"
)

// steadyScript is one training-like iteration of Gets and Puts: per layer an activation kept for
// the backward pass, a temporary and a small tensor freed at once; the backward pass frees the
// activations in reverse, with a gradient each. Layers share shapes, so several cached blocks of
// one size wait for reuse at once, as in a real network.
func steadyScript() (sizes []int64, frees [][]int) {
	const layers = 24
	act := []int64{3 << 20, 6 << 20, 3 << 20, 12 << 20}
	for l := range layers {
		sizes = append(sizes, act[l%len(act)], 100<<10, 512)
		frees = append(frees, nil, nil, []int{len(sizes) - 2, len(sizes) - 1})
	}
	for l := layers - 1; l >= 0; l-- {
		sizes = append(sizes, act[(l+1)%len(act)]/2)
		frees = append(frees, []int{3 * l, len(sizes) - 1})
	}
	return sizes, frees
}

// devicePtr is what Gorgonia's CUDA engine hands out from its pool (cu.DevicePtr): an address, boxed
// into a tensor.Memory by every Get.
type devicePtr uintptr

func (p devicePtr) Uintptr() uintptr { return uintptr(p) }
func (p devicePtr) MemSize() uintptr { return 0 }

// poolArena is Gorgonia's Get/Put over its pool (baseline.FirstFit), as gorgonia/cuda's Engine does.
type poolArena struct{ pool *baseline.FirstFit }

func (a poolArena) Get(size int64) (tensor.Memory, error) {
	p, err := a.pool.Alloc(uint64(size), 0)
	return devicePtr(p), err
}

func (a poolArena) Put(mem tensor.Memory, size int64) { _ = a.pool.Free(mem.Uintptr(), uint64(size)) }

// getPutter is the part of Gorgonia's cuda.Arena an iteration uses.
type getPutter interface {
	Get(size int64) (tensor.Memory, error)
	Put(mem tensor.Memory, size int64)
}

// BenchmarkSteadyPair measures the CPU cost of one Get+Put pair in steady iterations, where no
// driver is called and Gets are exact matches of cached blocks, through the whole stack a user
// hits (NewAllocator's handle, generation check and engine), side by side with Gorgonia's pool on
// the same script in the same run, the two alternating iteration by iteration so that both see
// the same machine load. Metrics: gmlake-ns/pair, pool-ns/pair, their ratio, and gmlake's
// driver-calls/pair (0) and exact/pair (the share of exact matches: 94 of the 96 requests; the
// iteration memo sends two to a place it splits, with no driver call).
func BenchmarkSteadyPair(b *testing.B) {
	sizes, frees := steadyScript()
	a, err := NewAllocator(WithHostMemory(), WithCapacity(1<<30))
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, a.Close()) })
	pool, err := baseline.NewFirstFit(baseline.NewSimDevice(), 1<<30)
	require.NoError(b, err)
	mems := make([]tensor.Memory, len(sizes))
	iteration := func(arena getPutter, mark func()) time.Duration {
		start := time.Now()
		mark()
		for i, size := range sizes {
			m, err := arena.Get(size)
			if err != nil {
				b.Fatal(err)
			}
			mems[i] = m
			for _, j := range frees[i] {
				arena.Put(mems[j], sizes[j])
			}
		}
		return time.Since(start)
	}
	noMark := func() {}
	for range 4 { // warm-up: gmlake creates its memory and remembers the iteration
		iteration(a, a.MarkIteration)
	}
	start := a.Stats()
	var engine, gorgonia time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		engine += iteration(a, a.MarkIteration)
		gorgonia += iteration(poolArena{pool}, noMark)
	}
	b.StopTimer()
	end := a.Stats()
	pairs := float64(b.N * len(sizes))
	b.ReportMetric(float64(engine.Nanoseconds())/pairs, "gmlake-ns/pair")
	b.ReportMetric(float64(gorgonia.Nanoseconds())/pairs, "pool-ns/pair")
	b.ReportMetric(float64(engine)/float64(max(gorgonia, 1)), "ratio")
	b.ReportMetric(float64(end.TotalDriverCalls()-start.TotalDriverCalls())/pairs, "driver-calls/pair")
	b.ReportMetric(float64(end.Outcomes.Exact-start.Outcomes.Exact)/pairs, "exact/pair")
}
