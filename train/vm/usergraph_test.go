package vm

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	G "gorgonia.org/gorgonia"

	"github.com/gmlake/gmlake/driver/host"
	"github.com/gmlake/gmlake/internal/usergraph"
	"github.com/gmlake/gmlake/memory"
	"github.com/gmlake/gmlake/stitch"
)

var userNets = map[string]func(usergraph.Spec) (*usergraph.Net, error){
	"mlp": usergraph.MLP, "transformer": usergraph.TransformerBlock,
}

// userRun is what a training run of a user graph saw.
type userRun struct {
	losses []float32
	stats  Stats
}

// trainUserGraph trains a user net for steps steps with Adam, every buffer from alloc: the graph
// as gorgonia.Grad left it, no outputs named, the solver on m.ValueGrads.
func trainUserGraph(t *testing.T, build func(usergraph.Spec) (*usergraph.Net, error), alloc Allocator, memTech bool, steps int) userRun {
	t.Helper()
	n, err := build(usergraph.Spec{Seed: 3})
	require.NoError(t, err)
	var opts []Option
	if memTech {
		opts = append(opts, WithBlockBoundaries(n.BlockInputs...), WithRecompute(true), WithOffload(true))
	}
	m, err := New(n.G, alloc, opts...)
	require.NoError(t, err)
	solver := G.NewAdamSolver(G.WithLearnRate(0.01))
	var run userRun
	for range steps {
		require.NoError(t, m.RunAll())
		run.losses = append(run.losses, m.Value(n.Loss).Data().(float32))
		require.NoError(t, solver.Step(m.ValueGrads(n.Learnables...)))
	}
	run.stats = m.Stats()
	require.NoError(t, m.Close())
	return run
}

// trainOnTape is the same run on Gorgonia's TapeMachine over the Go heap.
func trainOnTape(t *testing.T, build func(usergraph.Spec) (*usergraph.Net, error), steps int) []float32 {
	t.Helper()
	n, err := build(usergraph.Spec{Seed: 3})
	require.NoError(t, err)
	m := G.NewTapeMachine(n.G, G.BindDualValues(n.Learnables...))
	defer m.Close()
	solver := G.NewAdamSolver(G.WithLearnRate(0.01))
	var losses []float32
	for range steps {
		require.NoError(t, m.RunAll())
		losses = append(losses, n.Loss.Value().Data().(float32))
		require.NoError(t, solver.Step(G.NodesToValueGrads(n.Learnables)))
		m.Reset()
	}
	return losses
}

// TestUserGraphsTrain: a user MLP and a user transformer block, written with Gorgonia ops only and
// differentiated with gorgonia.Grad, train through a Machine with no outputs listed and Gorgonia's
// Adam on m.ValueGrads, 200 steps: on gmlake memory with recompute and offload on (blocks named
// by WithBlockBoundaries) the losses are bit-identical to the plain program, to the Go heap (freed
// memory poisoned) and to Gorgonia's TapeMachine.
func TestUserGraphsTrain(t *testing.T) {
	const steps = 200
	for name, build := range userNets {
		t.Run(name, func(t *testing.T) {
			tape := trainOnTape(t, build, steps)
			require.Less(t, tape[steps-1], tape[0], "the net trains")
			heap := trainUserGraph(t, build, &GoAllocator{Poison: true}, false, steps)
			assert.Equal(t, tape, heap.losses, "Go heap, plain program: the TapeMachine's losses")
			for _, memTech := range []bool{false, true} {
				a := newGmlake(t)
				got := trainUserGraph(t, build, a, memTech, steps)
				label := fmt.Sprintf("gmlake, recompute and offload %v", memTech)
				assert.Equal(t, heap.losses, got.losses, label)
				if memTech {
					assert.Positive(t, got.stats.Recomputed, "recompute took effect")
					assert.Positive(t, got.stats.OffloadedBytes, "offload took effect")
				}
				assert.Zero(t, a.Stats().LiveBytes, "%s: everything freed at Close", label)
				require.NoError(t, a.Check())
				t.Logf("%s: peak live %d B in a step, %d recomputed steps, %d B offloaded over %d steps",
					label, got.stats.PeakLiveBytes, got.stats.Recomputed, got.stats.OffloadedBytes, steps)
			}
		})
	}
}

// TestMemoryTechniquesThatCannotTakeEffect: recompute or offload without blocks, or without a
// forward pass, is an error, not a silent no-op; so are boundaries that do not chain.
func TestMemoryTechniquesThatCannotTakeEffect(t *testing.T) {
	n, err := usergraph.TransformerBlock(usergraph.Spec{})
	require.NoError(t, err)
	for name, opts := range map[string][]Option{
		"recompute without blocks":       {WithRecompute(true)},
		"offload without blocks":         {WithOffload(true)},
		"boundaries out of order":        {WithBlockBoundaries(n.BlockInputs[1], n.BlockInputs[0]), WithRecompute(true)},
		"a boundary named twice":         {WithBlockBoundaries(n.BlockInputs[0], n.BlockInputs[0])},
		"a boundary from no graph":       {WithBlockBoundaries(G.NewScalar(G.NewGraph(), G.Float32))},
		"blocks and boundaries together": {WithBlocks(Blocks{Of: map[int64]int{n.Loss.ID(): 0}}), WithBlockBoundaries(n.BlockInputs...)},
	} {
		_, err := New(n.G, &GoAllocator{}, opts...)
		assert.ErrorIs(t, err, ErrBlocks, name)
	}
	plain := G.NewGraph()
	x := G.NewVector(plain, G.Float32, G.WithShape(3), G.WithName("x"), G.WithInit(G.Ones()))
	y := G.Must(G.Square(x))
	_, err = New(plain, &GoAllocator{}, WithOutputs(y), WithBlockBoundaries(x), WithRecompute(true))
	assert.ErrorIs(t, err, ErrBlocks, "no forward pass: the graph has no gradients and no WithForward")
}

// TestGradAndValueGrads: gradients are read per learnable; a learnable that was not differentiated,
// or a gradient released by Reset, is ErrNoGradient, and a solver step then fails instead of
// reading freed memory.
func TestGradAndValueGrads(t *testing.T) {
	n, err := usergraph.MLP(usergraph.Spec{})
	require.NoError(t, err)
	m, err := New(n.G, &GoAllocator{Poison: true})
	require.NoError(t, err)
	defer m.Close()
	require.NoError(t, m.RunAll())
	for _, w := range n.Learnables {
		g, err := m.Grad(w)
		require.NoError(t, err)
		assert.Equal(t, w.Shape(), g.Shape())
	}
	_, err = m.Grad(n.Input)
	assert.ErrorIs(t, err, ErrNoGradient, "the input was not differentiated")
	m.Reset()
	_, err = m.Grad(n.Learnables[0])
	assert.ErrorIs(t, err, ErrNoGradient)
	assert.Error(t, G.NewAdamSolver().Step(m.ValueGrads(n.Learnables...)))
}

func newGmlake(t *testing.T) *memory.Allocator {
	t.Helper()
	d, err := host.New(host.WithGranularity(64<<10), host.WithCapacity(64<<20))
	require.NoError(t, err)
	a, err := memory.NewAllocator(d, memory.WithEngineOptions(stitch.WithSmallThreshold(32<<10)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	return a
}
