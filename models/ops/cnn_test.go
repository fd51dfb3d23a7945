package ops

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake/train/vm"
)

func cnnGradCases() []gradCase {
	f := func(shape ...int) input { return input{shape: shape} }
	return []gradCase{
		{"Conv2d/3x3", []input{f(2, 3, 5, 4), f(4, 3, 3, 3)}, func(in []*gorgonia.Node) (*gorgonia.Node, error) {
			return Conv2d(in[0], in[1], 1, 1, 1, 1)
		}},
		{"Conv2d/strided", []input{f(2, 2, 7, 6), f(3, 2, 3, 2)}, func(in []*gorgonia.Node) (*gorgonia.Node, error) {
			return Conv2d(in[0], in[1], 2, 2, 1, 0)
		}},
		{"Conv2d/1x1", []input{f(1, 4, 3, 3), f(2, 4, 1, 1)}, func(in []*gorgonia.Node) (*gorgonia.Node, error) {
			return Conv2d(in[0], in[1], 2, 2, 0, 0)
		}},
		{"BatchNorm", []input{f(3, 2, 2, 3), f(2), f(2)}, func(in []*gorgonia.Node) (*gorgonia.Node, error) {
			return BatchNorm(in[0], in[1], in[2], 1e-5)
		}},
		{"ReLU", []input{f(2, 3, 2, 2)}, func(in []*gorgonia.Node) (*gorgonia.Node, error) { return ReLU(in[0]) }},
		{"MaxPool2D", []input{f(2, 2, 5, 5)}, func(in []*gorgonia.Node) (*gorgonia.Node, error) { return MaxPool2D(in[0], 3, 3, 2, 1) }},
		{"AvgPool2D", []input{f(1, 2, 5, 4)}, func(in []*gorgonia.Node) (*gorgonia.Node, error) { return AvgPool2D(in[0], 2, 2, 2, 1) }},
		{"GlobalAvgPool", []input{f(2, 3, 2, 3)}, func(in []*gorgonia.Node) (*gorgonia.Node, error) { return GlobalAvgPool(in[0]) }},
		{"ClassCrossEntropy", []input{f(4, 5), {shape: []int{4}, maxInt: 5}}, func(in []*gorgonia.Node) (*gorgonia.Node, error) {
			return ClassCrossEntropy(in[0], in[1])
		}},
	}
}

// TestCNNGradients checks the convolutional ops' symbolic gradients against central finite
// differences, as TestGradients does for the transformer ops.
func TestCNNGradients(t *testing.T) {
	for _, c := range cnnGradCases() {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(2))
			h := newHarness(t, c, rng)
			m := gorgonia.NewTapeMachine(h.g)
			defer m.Close()
			h.run(t, m)
			analytic := make([][]float32, len(h.grads))
			for i, g := range h.grads {
				d, err := asDense(g.Value())
				require.NoError(t, err)
				analytic[i] = append([]float32(nil), data(d)...)
			}
			eps := float32(1e-2)
			if c.name == "MaxPool2D" {
				eps = 1e-3 // a wider step can move a window's maximum to another element
			}
			for gi, ii := range h.wrt {
				vals := data(h.values[ii])
				for j := range vals {
					orig := vals[j]
					vals[j] = orig + eps
					up := h.run(t, m)
					vals[j] = orig - eps
					down := h.run(t, m)
					vals[j] = orig
					numeric := (up - down) / (2 * float64(eps))
					assert.InDelta(t, numeric, float64(analytic[gi][j]), 3e-3+2e-2*math.Abs(numeric), "input %d element %d", ii, j)
				}
			}
		})
	}
}

// gorgoniaCase builds the same layer with this package's op and with Gorgonia's own, from the
// same inputs.
type gorgoniaCase struct {
	name        string
	inputs      [][]int
	ours, their func(in []*gorgonia.Node) (*gorgonia.Node, error)
	gradients   bool // compare the gradients of Σ out⊙r too
}

func gorgoniaCases() []gorgoniaCase {
	return []gorgoniaCase{
		{"Conv2d", [][]int{{2, 3, 6, 5}, {4, 3, 3, 3}},
			func(in []*gorgonia.Node) (*gorgonia.Node, error) { return Conv2d(in[0], in[1], 2, 1, 1, 1) },
			func(in []*gorgonia.Node) (*gorgonia.Node, error) {
				return gorgonia.Conv2d(in[0], in[1], tensor.Shape{3, 3}, []int{1, 1}, []int{2, 1}, []int{1, 1})
			}, true},
		{"MaxPool2D", [][]int{{2, 3, 6, 6}},
			func(in []*gorgonia.Node) (*gorgonia.Node, error) { return MaxPool2D(in[0], 3, 3, 2, 1) },
			func(in []*gorgonia.Node) (*gorgonia.Node, error) {
				return gorgonia.MaxPool2D(in[0], tensor.Shape{3, 3}, []int{1, 1}, []int{2, 2})
			}, true},
		// Gorgonia's average pool divides each window's sum by the input width instead of the
		// window's area (with a 2×2 window over 4 columns the two agree), and its gradient
		// sends each window's share to one element only: forward only.
		{"AvgPool2D", [][]int{{2, 3, 6, 4}},
			func(in []*gorgonia.Node) (*gorgonia.Node, error) { return AvgPool2D(in[0], 2, 2, 2, 0) },
			func(in []*gorgonia.Node) (*gorgonia.Node, error) {
				return gorgonia.AveragePool2D(in[0], tensor.Shape{2, 2}, []int{0, 0}, []int{2, 2})
			}, false},
		{"GlobalAvgPool", [][]int{{2, 3, 4, 5}},
			func(in []*gorgonia.Node) (*gorgonia.Node, error) { return GlobalAvgPool(in[0]) },
			func(in []*gorgonia.Node) (*gorgonia.Node, error) {
				p, err := gorgonia.GlobalAveragePool2D(in[0])
				if err != nil {
					return nil, err
				}
				return gorgonia.Reshape(p, tensor.Shape{2, 3})
			}, false}, // Gorgonia's global average pool has no gradient
		{"BatchNorm", [][]int{{3, 2, 3, 3}, {1, 2, 1, 1}, {1, 2, 1, 1}},
			func(in []*gorgonia.Node) (*gorgonia.Node, error) {
				g, err := gorgonia.Reshape(in[1], tensor.Shape{2})
				if err != nil {
					return nil, err
				}
				b, err := gorgonia.Reshape(in[2], tensor.Shape{2})
				if err != nil {
					return nil, err
				}
				return BatchNorm(in[0], g, b, 1e-5)
			},
			func(in []*gorgonia.Node) (*gorgonia.Node, error) {
				y, _, _, _, err := gorgonia.BatchNorm(in[0], in[1], in[2], 0.9, 1e-5)
				return y, err
			}, false}, // Gorgonia's BatchNorm gradient ignores γ (its diff op sees only x and dy)
	}
}

// runBoth builds c twice over the same random inputs and runs each on a stock TapeMachine,
// returning the outputs and, when asked, the gradients of Σ out⊙r.
func runBoth(t *testing.T, c gorgoniaCase) (ours, their [][]float32) {
	rng := rand.New(rand.NewSource(3))
	vals := make([][]float32, len(c.inputs))
	for i, s := range c.inputs {
		vals[i] = randFloats(rng, tensor.Shape(s).TotalSize())
	}
	var r []float32
	run := func(build func([]*gorgonia.Node) (*gorgonia.Node, error)) [][]float32 {
		g := gorgonia.NewGraph()
		in := make([]*gorgonia.Node, len(vals))
		for i, s := range c.inputs {
			v := tensor.New(tensor.WithShape(s...), tensor.WithBacking(append([]float32(nil), vals[i]...)))
			in[i] = gorgonia.NewTensor(g, tensor.Float32, len(s), gorgonia.WithShape(s...), gorgonia.WithValue(v))
		}
		out, err := build(in)
		require.NoError(t, err)
		if r == nil {
			r = randFloats(rng, out.Shape().TotalSize())
		}
		res := []*gorgonia.Node{out}
		if c.gradients {
			rn := gorgonia.NewTensor(g, tensor.Float32, out.Dims(), gorgonia.WithShape(out.Shape()...),
				gorgonia.WithValue(tensor.New(tensor.WithShape(out.Shape()...), tensor.WithBacking(r))))
			prod, err := gorgonia.HadamardProd(out, rn)
			require.NoError(t, err)
			loss, err := gorgonia.Sum(prod)
			require.NoError(t, err)
			grads, err := gorgonia.Grad(loss, in...)
			require.NoError(t, err)
			res = append(res, grads...)
		}
		m := gorgonia.NewTapeMachine(g)
		defer m.Close()
		require.NoError(t, m.RunAll())
		var got [][]float32
		for _, n := range res {
			d, err := asDense(n.Value())
			require.NoError(t, err)
			got = append(got, append([]float32(nil), data(d)...))
		}
		return got
	}
	return run(c.ours), run(c.their)
}

// TestMatchesGorgonia checks each convolutional op against Gorgonia's layer of the same name
// (forward, and gradients where Gorgonia's are complete).
func TestMatchesGorgonia(t *testing.T) {
	for _, c := range gorgoniaCases() {
		t.Run(c.name, func(t *testing.T) {
			ours, their := runBoth(t, c)
			require.Len(t, ours, len(their))
			for i := range ours {
				require.Len(t, ours[i], len(their[i]))
				for j := range ours[i] {
					assert.InDelta(t, their[i][j], ours[i][j], 1e-4, "value %d element %d", i, j)
				}
			}
		})
	}
}

// TestGorgoniaBatchNormUnderVM shows why the models use this package's BatchNorm: Gorgonia's
// computes y in place over a copy of x (y = y·α + β with α = 1/σ, β = −μ/σ), so written into a
// fresh buffer from an allocator, as the project's executor does, it returns β, one constant per
// channel, instead of the normalized input. This package's op gives the same result on both
// machines.
func TestGorgoniaBatchNormUnderVM(t *testing.T) {
	build := func(ours bool) (*gorgonia.ExprGraph, *gorgonia.Node) {
		g := gorgonia.NewGraph()
		rng := rand.New(rand.NewSource(4))
		x := gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(2, 2, 2, 2),
			gorgonia.WithValue(tensor.New(tensor.WithShape(2, 2, 2, 2), tensor.WithBacking(randFloats(rng, 16)))))
		if ours {
			gm := gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(2), gorgonia.WithValue(tensor.New(tensor.WithBacking([]float32{1, 1}))))
			bt := gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(2), gorgonia.WithValue(tensor.New(tensor.WithBacking([]float32{0, 0}))))
			y, err := BatchNorm(x, gm, bt, 1e-5)
			require.NoError(t, err)
			return g, y
		}
		n, err := gorgonia.ApplyOp(gorgoniaBatchNormOp(t), x)
		require.NoError(t, err)
		return g, n
	}
	for _, ours := range []bool{true, false} {
		g, y := build(ours)
		tape := gorgonia.NewTapeMachine(g)
		require.NoError(t, tape.RunAll())
		want := append([]float32(nil), y.Value().Data().([]float32)...)
		tape.Close()
		m, err := vm.New(g, &vm.GoAllocator{}, vm.WithOutputs(y))
		require.NoError(t, err)
		require.NoError(t, m.RunAll())
		got := m.Value(y).Data().([]float32)
		if ours {
			assert.InDeltaSlice(t, want, got, 1e-6, "this package's BatchNorm under the VM")
		} else {
			assert.NotEqual(t, want, got, "Gorgonia's BatchNorm into a fresh buffer")
			for c := range 2 { // x [2, 2, 2, 2]: channel c is got[n*8+c*4 : n*8+c*4+4]
				for _, v := range append(append([]float32(nil), got[c*4:c*4+4]...), got[8+c*4:8+c*4+4]...) {
					assert.Equal(t, got[c*4], v, "channel %d is one constant", c)
				}
			}
		}
		require.NoError(t, m.Close())
	}
}

// gorgoniaBatchNormOp is the bare normalization op of gorgonia.BatchNorm (without its γ, β).
func gorgoniaBatchNormOp(t *testing.T) gorgonia.Op {
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(2, 2, 2, 2), gorgonia.WithName("x"))
	_, _, _, op, err := gorgonia.BatchNorm(x, nil, nil, 0.9, 1e-5)
	require.NoError(t, err)
	return op
}
