package bench

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
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
