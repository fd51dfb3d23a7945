package bench

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/trace"
)

// BenchmarkReplay replays a real trace through each allocator: ns/pair is the cost of one
// allocation and its free including the replay loop; fragmentation and calls/iter come along.
func BenchmarkReplay(b *testing.B) {
	t, err := Load(filepath.Join(sharedTraces, "opt1.3b-lora-ckpt.trace.gz"))
	if err != nil {
		b.Skip("../shared/traces not present")
	}
	p, err := Prepare("opt1.3b-lora-ckpt", t)
	require.NoError(b, err)
	for _, name := range AllocatorNames {
		s, err := SimSpec(name)
		require.NoError(b, err)
		b.Run(name, func(b *testing.B) {
			if a, err := s.New(0); err != nil {
				b.Skip(err) // gmlake before the engine lands
			} else {
				require.NoError(b, a.Close())
			}
			var run *Run
			for b.Loop() {
				a, err := s.New(0)
				require.NoError(b, err)
				run, err = Replay(p, a, 0)
				require.NoError(b, err)
				require.NoError(b, a.Close())
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(p.Allocs()), "ns/pair")
			b.ReportMetric(1-float64(run.PeakActive)/float64(run.PeakReserved), "fragmentation")
			if steady, ok := run.CallsPerIteration(SteadyFrom, 1<<30); ok {
				b.ReportMetric(steady, "steady-calls/iter")
			}
		})
	}
}

// BenchmarkTrainingLoop replays the training loop of a recorded multi-scale ResNet run (the H200
// traces in results/cnn: 18 steps over four image sizes) 20 times in a row through gmlake and the
// Gorgonia pool, one after the other in each round, and reports the CPU time per alloc+free pair
// of each in the steady repetitions (the fourth on), and gmlake's over the pool's: the engine's
// cost where a training loop's shapes vary and blocks are re-carved every step, the time the GPU
// executor spends inside the allocator on the step's critical path.
func BenchmarkTrainingLoop(b *testing.B) {
	for _, name := range []string{"resnet18-multiscale-h200", "resnet50-multiscale-h200"} {
		b.Run(name, func(b *testing.B) {
			t, err := Load(filepath.Join("..", "results", "cnn", name+".trace.gz"))
			require.NoError(b, err)
			rep, err := trace.RepeatIterations(t, 20)
			require.NoError(b, err)
			p, err := Prepare(name, rep.Trace)
			require.NoError(b, err)
			steadyFrom := int(3 * rep.IterStride)
			names := []string{"gmlake", "gorgonia"}
			ns := make([]float64, len(names))
			for b.Loop() {
				for i, n := range names {
					s, err := SimSpec(n)
					require.NoError(b, err)
					a, err := s.New(0)
					require.NoError(b, err)
					run, err := Replay(p, a, 0)
					require.NoError(b, err)
					require.NoError(b, a.Close())
					v, ok := run.NsPerPair(steadyFrom, 1<<30)
					require.True(b, ok)
					ns[i] += v
				}
			}
			n := float64(b.N)
			b.ReportMetric(ns[0]/n, "gmlake-ns/pair")
			b.ReportMetric(ns[1]/n, "gorgonia-ns/pair")
			b.ReportMetric(ns[0]/ns[1], "ratio")
		})
	}
}
