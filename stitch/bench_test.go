package stitch_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gmlake/gmlake/trace/tracetest"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

// periodicSizes is the allocation pattern of the pair benchmarks: a mix of small and large sizes.
var periodicSizes = []uint64{256, 4 * KiB, 100 * KiB, 900 * KiB, 1 * MiB, 3 * MiB, 5*MiB + 512, 16 * MiB,
	768, 64 * KiB, 2 * MiB, 40 * MiB, 12 * KiB, 7 * MiB, 300 * KiB, 24 * MiB}

// BenchmarkExactPair measures one alloc+free pair in the steady state of a periodic pattern, beside
// a bare Go map insert+delete of the same keys (the least any pointer-keyed allocator does).
// Metrics: engine-ns/pair, map-ns/pair and their ratio (target ≤ 2), driver-calls/pair (target 0).
func BenchmarkExactPair(b *testing.B) { benchExactPair(b, false) }

// BenchmarkExactPairMarked is BenchmarkExactPair with an iteration mark before every period of
// the pattern: the cost of memos on the exact path (the followed memo's place is checked).
func BenchmarkExactPairMarked(b *testing.B) { benchExactPair(b, true) }

func benchExactPair(b *testing.B, marked bool) {
	d := sim.New()
	e, err := stitch.New(d)
	if err != nil {
		b.Fatal(err)
	}
	ptrs := make([]uintptr, len(periodicSizes))
	for i, s := range periodicSizes { // warm-up: one block of each size
		if ptrs[i], err = e.Alloc(s, 0); err != nil {
			b.Fatal(err)
		}
	}
	for i, s := range periodicSizes {
		if err := e.Free(ptrs[i], s); err != nil {
			b.Fatal(err)
		}
	}
	calls := d.TotalCalls()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		k := i % len(periodicSizes)
		if marked && k == 0 {
			e.MarkIteration()
		}
		p, err := e.Alloc(periodicSizes[k], 0)
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Free(p, periodicSizes[k]); err != nil {
			b.Fatal(err)
		}
		ptrs[k] = p
	}
	engine := time.Since(start)
	b.StopTimer()

	m := make(map[uintptr]uint64, len(ptrs))
	start = time.Now()
	for i := 0; i < b.N; i++ {
		k := i % len(ptrs)
		m[ptrs[k]] = periodicSizes[k]
		delete(m, ptrs[k])
	}
	baseline := time.Since(start)
	n := float64(b.N)
	b.ReportMetric(float64(engine.Nanoseconds())/n, "engine-ns/pair")
	b.ReportMetric(float64(baseline.Nanoseconds())/n, "map-ns/pair")
	b.ReportMetric(float64(engine)/float64(max(baseline, 1)), "ratio")
	b.ReportMetric(float64(d.TotalCalls()-calls)/n, "driver-calls/pair")
}

// trainingIteration is a synthetic training step: weights stay, activations are allocated in the
// forward pass and freed in reverse in the backward pass, with temporaries and gradients between.
func trainingIteration(rng *rand.Rand) []op {
	var ops []op
	layers := 24
	for l := 0; l < layers; l++ {
		ops = append(ops, op{kind: opAlloc, size: uint64(8+rng.IntN(40)) * MiB / 3}) // activation
		ops = append(ops, op{kind: opAlloc, size: uint64(1+rng.IntN(900)) * KiB})    // temporary
		ops = append(ops, op{kind: opFree, pick: -1})                                // the temporary
	}
	for l := 0; l < layers; l++ {
		ops = append(ops, op{kind: opAlloc, size: uint64(2+rng.IntN(30)) * MiB / 2}) // gradient
		ops = append(ops, op{kind: opFree, pick: -2})                                // the activation under it
		ops = append(ops, op{kind: opFree, pick: -1})                                // the gradient
	}
	return ops
}

// BenchmarkSteadyDriverCalls replays the same synthetic training iteration again and again under a
// capacity close to its peak; it reports driver calls per iteration after three warm-up
// iterations (target 0) and the fragmentation.
func BenchmarkSteadyDriverCalls(b *testing.B) {
	script := trainingIteration(rand.New(rand.NewPCG(7, 7)))
	d := sim.New(sim.WithCapacity(512 * MiB))
	e, err := stitch.New(d)
	if err != nil {
		b.Fatal(err)
	}
	var stack []uintptr
	var sizes []uint64
	iteration := func() {
		for _, o := range script {
			switch o.kind {
			case opAlloc:
				p, err := e.Alloc(o.size, 0)
				if err != nil {
					b.Fatal(err)
				}
				stack, sizes = append(stack, p), append(sizes, o.size)
			case opFree:
				i := len(stack) + o.pick
				if err := e.Free(stack[i], sizes[i]); err != nil {
					b.Fatal(err)
				}
				stack, sizes = append(stack[:i], stack[i+1:]...), append(sizes[:i], sizes[i+1:]...)
			}
		}
	}
	for range 3 {
		iteration()
	}
	calls := d.TotalCalls()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		iteration()
	}
	b.StopTimer()
	st := e.Stats()
	b.ReportMetric(float64(d.TotalCalls()-calls)/float64(b.N), "driver-calls/iter")
	b.ReportMetric(st.Fragmentation(), "fragmentation")
	b.ReportMetric(float64(st.Outcomes.Exact)/float64(max(1, st.Outcomes.Total())), "exact-share")
}

func sum(xs []uint64) uint64 {
	var n uint64
	for _, x := range xs {
		n += x
	}
	return n
}

// BenchmarkTracePeriodic repeats one real iteration of a shared trace (see periodic) and reports
// driver calls per iteration after three warm-up iterations, the share of exact matches and the
// fragmentation. Skipped without ../shared/traces.
func BenchmarkTracePeriodic(b *testing.B) {
	for _, name := range []string{"opt1.3b-lora-ckpt.trace.gz", "gpt2xl-full-ckpt.noweights.trace.gz"} {
		b.Run(name, func(b *testing.B) {
			tr := periodic(tracetest.Load(b, name), 2, 3+b.N)
			b.ResetTimer()
			res := replay(b, tr, 0, 0)
			if res.oom != nil {
				b.Fatal(res.oom)
			}
			var steady uint64
			for _, c := range res.callsPerIter[3:] {
				steady += c
			}
			b.ReportMetric(float64(steady)/float64(b.N), "driver-calls/iter")
			b.ReportMetric(res.stats.Fragmentation(), "fragmentation")
			b.ReportMetric(float64(res.stats.Outcomes.Exact)/float64(res.stats.Outcomes.Total()), "exact-share")
		})
	}
}
