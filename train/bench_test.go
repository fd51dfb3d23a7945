package train

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/gmlake/gmlake/train/vm"
)

// BenchmarkStep measures one LoRA step of gpt2-tiny (batch 8, 64 tokens) with each memory technique
// and reports the most bytes the step's machine held at once (weights and optimizer state excluded).
func BenchmarkStep(b *testing.B) {
	for _, c := range []struct{ recompute, offload bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		b.Run(fmt.Sprintf("recompute=%v/offload=%v", c.recompute, c.offload), func(b *testing.B) {
			tr, err := New(tinyWeights(b, "gpt2-tiny"), &vm.GoAllocator{}, WithLoRA(attentionLoRA),
				WithRecompute(c.recompute), WithOffload(c.offload))
			if err != nil {
				b.Fatal(err)
			}
			defer tr.Close()
			ids := DefaultCounting.Batch(rand.New(rand.NewSource(1)), 8, 64)
			var res StepResult
			for b.Loop() {
				if res, err = tr.Step(ids); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(res.Machine.PeakLiveBytes), "peak-bytes")
			b.ReportMetric(float64(res.Machine.OffloadedBytes), "offloaded-bytes")
			b.ReportMetric(float64(res.Machine.Recomputed), "recomputed-steps")
		})
	}
}
