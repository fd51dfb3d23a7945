package usergraph

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	G "gorgonia.org/gorgonia"
)

// TestNetsTrainOnTheGoHeap: each Net trains with Gorgonia's TapeMachine and Adam on the Go heap
// (the loss falls), and two builds from one Spec give the same losses bit for bit.
func TestNetsTrainOnTheGoHeap(t *testing.T) {
	for name, build := range map[string]func(Spec) (*Net, error){"mlp": MLP, "transformer": TransformerBlock} {
		t.Run(name, func(t *testing.T) {
			run := func() []float32 {
				n, err := build(Spec{Seed: 7})
				require.NoError(t, err)
				m := G.NewTapeMachine(n.G, G.BindDualValues(n.Learnables...))
				defer m.Close()
				solver := G.NewAdamSolver(G.WithLearnRate(0.01))
				var losses []float32
				for range 100 {
					require.NoError(t, m.RunAll())
					losses = append(losses, n.Loss.Value().Data().(float32))
					require.NoError(t, solver.Step(G.NodesToValueGrads(n.Learnables)))
					m.Reset()
				}
				return losses
			}
			first := run()
			assert.Less(t, first[len(first)-1], first[0]/2, "the loss falls: %v -> %v", first[0], first[len(first)-1])
			assert.Equal(t, first, run())
		})
	}
}
