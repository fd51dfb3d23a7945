package models

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
)

// BenchmarkStep times one forward+backward pass of a small GPT-2 (the size
// the CPU demo fine-tunes) and a small Llama with a stock TapeMachine.
func BenchmarkStep(b *testing.B) {
	small := map[string]Config{
		"gpt2": {Arch: ArchGPT2, Vocab: 1024, Hidden: 128, Layers: 4, Heads: 4, KVHeads: 4, Intermediate: 512,
			MaxPositions: 128, Eps: 1e-5, TiedEmbeddings: true, Activation: "gelu_new"},
		"llama": {Arch: ArchLlama, Vocab: 1024, Hidden: 128, Layers: 4, Heads: 4, KVHeads: 2, Intermediate: 352,
			MaxPositions: 128, Eps: 1e-5, RopeTheta: 10000, Activation: "silu"},
	}
	for _, name := range []string{"gpt2", "llama"} {
		b.Run(name, func(b *testing.B) {
			w, err := InitWeights(small[name], 1, nil)
			require.NoError(b, err)
			const batch, seq = 8, 64
			g, err := Build(w, BuildOptions{Batch: batch, Seq: seq})
			require.NoError(b, err)
			var ids []int
			for _, row := range randomIDs(rand.New(rand.NewSource(1)), batch, seq, w.Config.Vocab) {
				ids = append(ids, row...)
			}
			require.NoError(b, g.SetIDs(ids))
			m := gorgonia.NewTapeMachine(g.G)
			defer m.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m.Reset()
				require.NoError(b, m.RunAll())
			}
			b.ReportMetric(float64(batch*seq)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}
