package shardsim

import (
	"fmt"
	"testing"

	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/dataparallel/zero"
)

// BenchmarkGenerate measures trace generation for one rank of a 1.3B-parameter model.
func BenchmarkGenerate(b *testing.B) {
	w := Workload{Preset: "opt-1.3b", Stage: zero.Stage2, Ranks: 8, Me: 3, Recompute: true, Seed: 1}
	var events int
	for b.Loop() {
		t, _, err := Generate(w)
		if err != nil {
			b.Fatal(err)
		}
		events = len(t.Events)
	}
	b.ReportMetric(float64(events), "events/trace")
}

// BenchmarkFragmentationByWorldSize replays rank 0 of ZeRO-2 full fine-tuning of OPT-1.3B at each
// world size through gmlake and the caching allocator and reports their uncapped fragmentation:
// the scale-out effect the paper describes (shards shrink, transient buffers stay) as metrics.
func BenchmarkFragmentationByWorldSize(b *testing.B) {
	for _, n := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			t, _, err := Generate(Workload{Preset: "opt-1.3b", Stage: zero.Stage2, Ranks: n, Recompute: true, Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			p, err := bench.Prepare("opt-1.3b", t)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				for _, name := range []string{"gmlake", "caching"} {
					spec, err := bench.SimSpec(name)
					if err != nil {
						b.Fatal(err)
					}
					rep, err := bench.Measure(p, spec, bench.MeasureOptions{})
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(rep.Fragmentation, "frag-"+name)
				}
			}
		})
	}
}
