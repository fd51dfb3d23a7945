package vm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

var techniques = []struct{ recompute, offload bool }{
	{false, false}, {true, false}, {false, true}, {true, true},
}

func newMachine(t testing.TB, net *testNet, alloc Allocator, recompute, offload bool) *Machine {
	t.Helper()
	m, err := New(net.g, alloc, WithOutputs(net.outputs()...), WithForward(net.loss),
		WithBlocks(net.blocks), WithRecompute(recompute), WithOffload(offload))
	require.NoError(t, err)
	return m
}

func TestMachineMatchesTapeMachine(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		want := buildNet(t, dt, 3, 1, tapeSafe).reference(t)
		for _, c := range techniques {
			t.Run(fmt.Sprintf("%v/recompute=%v/offload=%v", dt, c.recompute, c.offload), func(t *testing.T) {
				net := buildNet(t, dt, 3, 1, tapeSafe)
				alloc := &GoAllocator{Poison: true}
				m := newMachine(t, net, alloc, c.recompute, c.offload)
				for run := 0; run < 2; run++ { // the second run must find nothing stale
					require.NoError(t, m.RunAll())
					assert.Equal(t, want, net.read(t, m.Value), "run %d: bit for bit", run)
				}
				st := m.Stats()
				assert.Equal(t, st.LiveBytes, alloc.LiveBytes(), "machine and allocator agree on live bytes")
				assert.Equal(t, c.recompute, st.Recomputed > 0, "recomputed steps")
				assert.Equal(t, c.offload, st.OffloadedBytes > 0, "offloaded bytes")
				require.NoError(t, m.Close())
				assert.Zero(t, alloc.LiveBytes(), "everything returned after Close")
			})
		}
	}
}

func TestTechniquesAreBitIdentical(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		plainNet := buildNet(t, dt, 3, 7, allParts)
		plain := newMachine(t, plainNet, &GoAllocator{Poison: true}, false, false)
		require.NoError(t, plain.RunAll())
		want := plainNet.read(t, plain.Value)
		require.NoError(t, plain.Close())
		for _, c := range techniques[1:] {
			t.Run(fmt.Sprintf("%v/recompute=%v/offload=%v", dt, c.recompute, c.offload), func(t *testing.T) {
				net := buildNet(t, dt, 3, 7, allParts)
				alloc := &GoAllocator{Poison: true}
				m := newMachine(t, net, alloc, c.recompute, c.offload)
				require.NoError(t, m.RunAll())
				assert.Equal(t, want, net.read(t, m.Value))
				require.NoError(t, m.Close())
				assert.Zero(t, alloc.LiveBytes())
			})
		}
	}
}

// TestFiniteDifferences checks the gradients on the graph with aliases and views, where the
// TapeMachine is no reference, against central differences of the loss.
func TestFiniteDifferences(t *testing.T) {
	const eps = 1e-6
	net := buildNet(t, tensor.Float64, 2, 3, allParts)
	m := newMachine(t, net, &GoAllocator{Poison: true}, true, true)
	defer m.Close()
	require.NoError(t, m.RunAll())
	loss := func() float64 {
		require.NoError(t, m.RunAll())
		return m.Value(net.loss).Data().(float64)
	}
	grads := make([][]float64, len(net.grads))
	for p := range net.grads {
		grads[p] = append([]float64(nil), m.Value(net.grads[p]).Data().([]float64)...)
	}
	for p, param := range net.params {
		w := param.Value().Data().([]float64)
		for _, i := range []int{0, 5, len(w) - 1} {
			orig := w[i]
			w[i] = orig + eps
			up := loss()
			w[i] = orig - eps
			down := loss()
			w[i] = orig
			assert.InDelta(t, (up-down)/(2*eps), grads[p][i], 1e-7, "%v[%d]", param, i)
		}
	}
}

func TestRecomputeAndOffloadLowerPeak(t *testing.T) {
	peak := func(recompute, offload bool) int64 {
		net := buildNet(t, tensor.Float32, 6, 2, allParts)
		m := newMachine(t, net, &GoAllocator{}, recompute, offload)
		defer m.Close()
		require.NoError(t, m.RunAll())
		return m.Stats().PeakLiveBytes
	}
	plain := peak(false, false)
	assert.Less(t, peak(true, false), plain, "recompute")
	assert.Less(t, peak(false, true), plain, "offload")
	assert.Less(t, peak(true, true), plain, "recompute+offload")
}

func TestProgramShape(t *testing.T) {
	net := buildNet(t, tensor.Float32, 2, 3, allParts)
	m := newMachine(t, net, &GoAllocator{}, true, true)
	defer m.Close()
	prog := strings.Join(m.Program(), "\n")
	assert.Contains(t, prog, "(recompute)")
	assert.Contains(t, prog, "offload ")
	assert.Contains(t, prog, "restore ")
}

func TestOutputsOnlyRunWhatTheyNeed(t *testing.T) {
	net := buildNet(t, tensor.Float64, 2, 4, tapeSafe)
	m, err := New(net.g, &GoAllocator{}, WithOutputs(net.loss), WithGradients(false))
	require.NoError(t, err)
	defer m.Close()
	require.NoError(t, m.RunAll())
	want := net.reference(t)
	assert.Equal(t, want[0], cloneData(m.Value(net.loss)))
	assert.Less(t, len(m.Program()), len(net.g.AllNodes())/2, "gradient steps are not run for the loss alone")

	withGrads, err := New(net.g, &GoAllocator{}, WithOutputs(net.loss))
	require.NoError(t, err)
	defer withGrads.Close()
	assert.Greater(t, len(withGrads.Program()), len(m.Program()), "gorgonia.Grad's gradients are outputs by default")
}

func TestLeafWithoutValue(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("x"))
	y := gorgonia.Must(gorgonia.Square(x))
	m, err := New(g, &GoAllocator{}, WithOutputs(y))
	require.NoError(t, err)
	err = m.RunAll()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no value bound")
}

func TestClosedMachine(t *testing.T) {
	net := buildNet(t, tensor.Float64, 1, 5, tapeSafe)
	m, err := New(net.g, &GoAllocator{}, WithOutputs(net.loss))
	require.NoError(t, err)
	require.NoError(t, m.Close())
	assert.ErrorIs(t, m.RunAll(), ErrClosed)
}

// TestTapeMachineMishandlesAliases records why the Machine counts references per buffer: on the
// graph with a Reshape whose input is read again (allParts), Gorgonia's TapeMachine reuses the
// aliased register and returns wrong gradients, while the Machine's match finite differences
// (TestFiniteDifferences). If this starts failing, upstream fixed it and tapeSafe can go.
func TestTapeMachineMishandlesAliases(t *testing.T) {
	net := buildNet(t, tensor.Float64, 2, 3, allParts)
	m := newMachine(t, net, &GoAllocator{}, false, false)
	defer m.Close()
	require.NoError(t, m.RunAll())
	ours := net.read(t, m.Value)
	tape := buildNet(t, tensor.Float64, 2, 3, allParts).reference(t)
	assert.Equal(t, ours[0], tape[0], "the loss agrees")
	assert.NotEqual(t, ours[1:], tape[1:], "the TapeMachine's gradients do not")
}

// markingAllocator is the Go heap, counting iteration marks.
type markingAllocator struct {
	GoAllocator
	marks int
}

func (a *markingAllocator) MarkIteration() { a.marks++ }

// TestRunAllMarksIterations: each RunAll tells an allocator that takes marks that an iteration
// begins, unless WithIterationMarks(false).
func TestRunAllMarksIterations(t *testing.T) {
	for _, on := range []bool{true, false} {
		g := gorgonia.NewGraph()
		x := gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(4), gorgonia.WithName("x"), gorgonia.WithValue(tensor.New(tensor.WithBacking([]float32{1, 2, 3, 4}))))
		y := gorgonia.Must(gorgonia.Mul(x, x))
		a := &markingAllocator{}
		m, err := New(g, a, WithOutputs(y), WithIterationMarks(on))
		require.NoError(t, err)
		for range 3 {
			require.NoError(t, m.RunAll())
		}
		want := 0
		if on {
			want = 3
		}
		assert.Equal(t, want, a.marks)
		require.NoError(t, m.Close())
	}
}
