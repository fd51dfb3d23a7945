package ops

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func dense(shape []int, v []float32) *tensor.Dense {
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))
}

// TestPreallocOverwrites: for every node of every test graph (forward and
// backward kernels alike), UsePreallocDo fully overwrites a NaN-poisoned
// buffer and equals Do.
func TestPreallocOverwrites(t *testing.T) {
	for _, c := range gradCases() {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, c, rand.New(rand.NewSource(4)))
			m := gorgonia.NewTapeMachine(h.g)
			defer m.Close()
			h.run(t, m)
			checked := 0
			for _, n := range h.g.AllNodes() {
				o, ok := n.Op().(op)
				if !ok || n.IsScalar() {
					continue
				}
				var in []gorgonia.Value
				for it := h.g.From(n.ID()); it.Next(); {
					in = append(in, it.Node().(*gorgonia.Node).Value())
				}
				want, err := o.Do(in...)
				require.NoError(t, err, "%v", o)
				buf := tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(n.Shape()...))
				for i := range data(buf) {
					data(buf)[i] = float32(math.NaN())
				}
				got, err := o.UsePreallocDo(buf, in...)
				require.NoError(t, err, "%v", o)
				assert.Same(t, buf, got)
				assert.Equal(t, data(want.(*tensor.Dense)), data(buf), "%v", o)
				checked++
			}
			assert.Positive(t, checked)
		})
	}
}

func TestActivationValues(t *testing.T) {
	x := dense([]int{3}, []float32{-1, 0, 1})
	for _, tc := range []struct {
		k    activation
		want []float64
	}{
		{activation{name: "gelu_new", dims: 1}, []float64{-0.15880801, 0, 0.84119199}},
		{activation{name: "silu", dims: 1}, []float64{-0.26894142, 0, 0.73105858}},
	} {
		out := make([]float32, 3)
		require.NoError(t, tc.k.forward(out, []*tensor.Dense{x}))
		for i, w := range tc.want {
			assert.InDelta(t, w, out[i], 1e-6, "%v(%v)", tc.k.name, data(x)[i])
		}
	}
}

func TestCausalProbabilities(t *testing.T) {
	s := AttentionShape{Batch: 2, Seq: 5, Heads: 4, KVHeads: 2, HeadDim: 3}
	rng := rand.New(rand.NewSource(1))
	q := dense([]int{10, 12}, randFloats(rng, 120))
	k := dense([]int{10, 6}, randFloats(rng, 60))
	p := make([]float32, s.probsShape().TotalSize())
	require.NoError(t, attention{s, attnProbs}.forward(p, []*tensor.Dense{q, k}))
	for row := 0; row < len(p)/s.Seq; row++ {
		i := row % s.Seq
		var sum float64
		for j, v := range p[row*s.Seq : (row+1)*s.Seq] {
			if j > i {
				assert.Zero(t, v, "future position %d of query %d", j, i)
			}
			sum += float64(v)
		}
		assert.InDelta(t, 1, sum, 1e-6)
	}
	// Query 0 of a sequence can only attend to key 0.
	assert.Equal(t, float32(1), p[0])
}

func TestRoPE(t *testing.T) {
	k := rope{seq: 3, heads: 1, headDim: 4, theta: 100}
	x := dense([]int{3, 4}, []float32{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4})
	out := make([]float32, 12)
	require.NoError(t, k.forward(out, []*tensor.Dense{x}))
	assert.Equal(t, []float32{1, 2, 3, 4}, out[:4], "position 0 is not rotated")
	// Position 2, pair i=1: frequency 100^(-2/4) = 0.1, angle 0.2.
	a := 0.2
	assert.InDelta(t, 2*math.Cos(a)-4*math.Sin(a), out[9], 1e-6)
	assert.InDelta(t, 4*math.Cos(a)+2*math.Sin(a), out[11], 1e-6)

	inv := k
	inv.inverse = true
	back := make([]float32, 12)
	require.NoError(t, inv.forward(back, []*tensor.Dense{dense([]int{3, 4}, out)}))
	assert.InDeltaSlice(t, data(x), back, 1e-6)
}

func TestBadInputs(t *testing.T) {
	ids := tensor.New(tensor.WithShape(1, 2), tensor.WithBacking([]int{0, 9}))
	table := dense([]int{4, 2}, make([]float32, 8))
	_, err := op{embedding{rows: 4}}.Do(ids, table)
	assert.ErrorIs(t, err, ErrInput, "id outside the table")

	_, err = op{crossEntropy{batch: 1, seq: 2}}.Do(dense([]int{2, 4}, make([]float32, 8)), ids)
	assert.ErrorIs(t, err, ErrInput, "label outside the vocabulary")

	_, err = op{matMul{}}.Do(dense([]int{2, 3}, make([]float32, 6)), dense([]int{2, 3}, make([]float32, 6)))
	assert.ErrorIs(t, err, ErrInput, "inner dimensions differ")

	_, err = op{add{2}}.UsePreallocDo(dense([]int{1, 1}, []float32{0}), dense([]int{2, 1}, []float32{1, 2}), dense([]int{2, 1}, []float32{1, 2}))
	assert.ErrorIs(t, err, ErrInput, "prealloc too small")

	_, err = op{add{2}}.Do(dense([]int{2, 1}, []float32{1, 2}))
	assert.ErrorIs(t, err, ErrInput, "arity")

	g := gorgonia.NewGraph()
	x := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(2, 3))
	_, err = RoPE(x, 2, 1, 3, 10000)
	assert.ErrorIs(t, err, ErrInput, "odd head size")
	_, err = CrossEntropy(x, gorgonia.NewMatrix(g, tensor.Int, gorgonia.WithShape(2, 1)), 2, 1)
	assert.ErrorIs(t, err, ErrInput, "sequence of one token")
}
