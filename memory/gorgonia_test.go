package memory

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// smallGraph is a one-layer network with a scalar loss and the gradient of its weights.
func smallGraph(t *testing.T) (g *G.ExprGraph, loss, w *G.Node) {
	t.Helper()
	g = G.NewGraph()
	x := G.NewMatrix(g, tensor.Float32, G.WithShape(4, 3), G.WithName("x"), G.WithInit(G.RangedFrom(0)))
	w = G.NewMatrix(g, tensor.Float32, G.WithShape(3, 2), G.WithName("w"), G.WithInit(G.RangedFrom(-3)))
	h := G.Must(G.Tanh(G.Must(G.Mul(x, w))))
	out := G.Must(G.Sigmoid(G.Must(G.Add(h, h))))
	loss = G.Must(G.Mean(G.Must(G.Square(out))))
	_, err := G.Grad(loss, w)
	require.NoError(t, err)
	return g, loss, w
}

// TestTapeMachineRunsOnGmlake runs the same graph on Go's heap and with gorgonia.WithEngine(e):
// the loss and gradient agree, and part of the buffers came from gmlake. Gorgonia allocates the
// tape's preallocated outputs (MatMul, Add, reductions, scalars) on the Go heap and only re-engines
// them; what reaches Alloc are the outputs of ops that clone their input (here Tanh, Sigmoid,
// Square and their gradients). Nothing in Gorgonia calls Free, and ResetAllocator frees nothing.
func TestTapeMachineRunsOnGmlake(t *testing.T) {
	var graphBytes uintptr // bytes of every node's value and gradient, wherever they live
	run := func(opts ...G.VMOpt) (float32, []float32) {
		g, loss, w := smallGraph(t)
		m := G.NewTapeMachine(g, opts...)
		defer m.Close()
		require.NoError(t, m.RunAll())
		grad, err := w.Grad()
		require.NoError(t, err)
		graphBytes = 0
		for _, n := range g.AllNodes() {
			if v := n.Value(); v != nil {
				graphBytes += v.MemSize()
			}
			if d, err := n.Grad(); err == nil && d != nil {
				graphBytes += d.MemSize()
			}
		}
		return loss.Value().Data().(float32), append([]float32(nil), grad.Data().([]float32)...)
	}
	wantLoss, wantGrad := run()

	e := newHostTensorEngine(t)
	before := e.Allocator().Stats()
	gotLoss, gotGrad := run(G.WithEngine(e))
	after := e.Allocator().Stats()

	assert.Equal(t, wantLoss, gotLoss)
	assert.Equal(t, wantGrad, gotGrad)
	assert.Greater(t, after.LiveBlocks, before.LiveBlocks, "some buffers came from gmlake")
	assert.Greater(t, after.LiveBytes, before.LiveBytes)
	t.Logf("gmlake served %d blocks, %d bytes; the graph's values and gradients hold %d bytes",
		after.LiveBlocks-before.LiveBlocks, after.LiveBytes-before.LiveBytes, graphBytes)

	e.Allocator().ResetAllocator()
	assert.Equal(t, after.LiveBytes, e.Allocator().Stats().LiveBytes, "ResetAllocator frees nothing live")
	assert.NoError(t, e.Allocator().Check())
}
