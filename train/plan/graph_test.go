package plan

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// tiny is loss = Σ((x×w + c)²) with its gradient for w; block 0 is {x×w, +c, x (a leaf, put in
// BlockOf to show leaves stay out of blocks), the gradient's first node (not forward)}.
type tiny struct {
	g                *gorgonia.ExprGraph
	x, w, c, xw, sum *gorgonia.Node
	loss, grad       *gorgonia.Node
	blockOf          map[int64]int
}

func newTiny(t *testing.T) *tiny {
	t.Helper()
	g := gorgonia.NewGraph()
	x := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(2, 2), gorgonia.WithName("x"))
	w := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(2, 2), gorgonia.WithName("w"))
	c := gorgonia.NewConstant(1.5, gorgonia.WithName("c"))
	xw := gorgonia.Must(gorgonia.Mul(x, w))
	sum := gorgonia.Must(gorgonia.Add(xw, c))
	loss := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(sum))))
	grads, err := gorgonia.Grad(loss, w)
	require.NoError(t, err)
	for _, n := range g.AllNodes() { // the graph's own copy of the constant
		if _, ok := n.Op().(interface{ Value() gorgonia.Value }); ok && n.Name() == c.Name() {
			c = n
		}
	}
	tn := &tiny{g: g, x: x, w: w, c: c, xw: xw, sum: sum, loss: loss, grad: grads[0],
		blockOf: map[int64]int{x.ID(): 0, xw.ID(): 0, sum.ID(): 0}}
	for _, n := range g.AllNodes() {
		if n.ID() > loss.ID() { // a gradient node
			tn.blockOf[n.ID()] = 0
			break
		}
	}
	return tn
}

func (tn *tiny) spec() Spec {
	return Spec{Outputs: []*gorgonia.Node{tn.loss, tn.grad}, Forward: []*gorgonia.Node{tn.loss},
		BlockOf: tn.blockOf, BlockInputs: []*gorgonia.Node{tn.x}}
}

func TestAnalyse(t *testing.T) {
	tn := newTiny(t)
	gr, err := Analyse(tn.g, tn.spec())
	require.NoError(t, err)
	require.Len(t, gr.Nodes, len(tn.g.AllNodes()))
	require.Equal(t, gr.Len(), len(gr.Nodes))
	at := func(n *gorgonia.Node) int {
		i, ok := gr.Index[n.ID()]
		require.True(t, ok && gr.Nodes[i] == n, "%v indexed", n)
		return i
	}
	for i, n := range gr.Nodes {
		assert.Equal(t, i, at(n))
		for k, c := range gr.Inputs[i] {
			assert.Less(t, c, i, "%v: input %d comes first", n, k)
		}
	}
	assert.Equal(t, []int{at(tn.x), at(tn.w)}, gr.Inputs[at(tn.xw)], "inputs in argument order")

	for _, tc := range []struct {
		node                  *gorgonia.Node
		leaf, output, forward bool
		block, inputOf        int
	}{
		{tn.x, true, false, true, -1, 0}, // a leaf is in no block, even when BlockOf says so
		{tn.w, true, false, true, -1, -1},
		{tn.c, false, false, true, -1, -1}, // by default a constant is an op node
		{tn.xw, false, false, true, 0, -1},
		{tn.sum, false, false, true, 0, -1},
		{tn.loss, false, true, true, -1, -1},
		{tn.grad, false, true, false, -1, -1},
	} {
		i := at(tc.node)
		assert.Equal(t, tc.leaf, gr.Leaf[i], "%v leaf", tc.node)
		assert.Equal(t, tc.output, gr.Output[i], "%v output", tc.node)
		assert.Equal(t, tc.forward, gr.Forward[i], "%v forward", tc.node)
		assert.Equal(t, tc.block, gr.Block[i], "%v block", tc.node)
		assert.Equal(t, tc.inputOf, gr.InputOf[i], "%v input of", tc.node)
	}
	for i := range gr.Nodes {
		if !gr.Forward[i] {
			assert.Equal(t, -1, gr.Block[i], "backward node %v is in no block", gr.Nodes[i])
		}
	}
}

func TestAnalyseSpecOptions(t *testing.T) {
	tn := newTiny(t)
	isConst := func(n *gorgonia.Node) bool {
		_, ok := n.Op().(interface{ Value() gorgonia.Value })
		return n.Op() == nil || ok
	}
	for _, tc := range []struct {
		name  string
		spec  func(Spec) Spec
		check func(t *testing.T, gr *Graph)
	}{
		{"IsLeaf makes constants leaves", func(s Spec) Spec { s.IsLeaf = isConst; return s },
			func(t *testing.T, gr *Graph) { assert.True(t, gr.Leaf[gr.Index[tn.c.ID()]]) }},
		{"without forward roots every node is forward", func(s Spec) Spec { s.Forward = nil; return s },
			func(t *testing.T, gr *Graph) {
				for i := range gr.Nodes {
					assert.True(t, gr.Forward[i], "%v", gr.Nodes[i])
				}
				assert.Equal(t, 0, gr.Block[gr.Index[tn.xw.ID()]])
			}},
		{"a block input outside the graph is ignored", func(s Spec) Spec {
			s.BlockInputs = append(s.BlockInputs, gorgonia.NewScalar(gorgonia.NewGraph(), tensor.Float64))
			return s
		}, func(t *testing.T, gr *Graph) { assert.Equal(t, 0, gr.InputOf[gr.Index[tn.x.ID()]]) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gr, err := Analyse(tn.g, tc.spec(tn.spec()))
			require.NoError(t, err)
			tc.check(t, gr)
		})
	}
}

func TestAnalyseRejectsForeignNodes(t *testing.T) {
	tn := newTiny(t)
	// Node IDs are per graph: the foreign node has ID 0, like tn.x.
	foreign := gorgonia.NewScalar(gorgonia.NewGraph(), tensor.Float64, gorgonia.WithName("foreign"))
	require.Equal(t, tn.x.ID(), foreign.ID())
	for _, tc := range []struct {
		name string
		spec func(Spec) Spec
	}{
		{"output", func(s Spec) Spec { s.Outputs = append(s.Outputs, foreign); return s }},
		{"forward root", func(s Spec) Spec { s.Forward = append(s.Forward, foreign); return s }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Analyse(tn.g, tc.spec(tn.spec()))
			assert.ErrorIs(t, err, ErrNotInGraph)
			assert.ErrorContains(t, err, tc.name)
		})
	}
}

func TestAncestorsAndDroppable(t *testing.T) {
	gr := oneBlock()
	for _, tc := range []struct {
		from []int
		want []int
	}{
		{nil, nil},
		{[]int{0}, []int{0}},
		{[]int{5}, []int{0, 1, 2, 3, 4, 5}},
		{[]int{3, 7}, []int{0, 1, 2, 3, 4, 5, 7}},
	} {
		var got []int
		for i, in := range gr.Ancestors(tc.from) {
			if in {
				got = append(got, i)
			}
		}
		assert.Equal(t, tc.want, got, "ancestors of %v", tc.from)
	}
	var droppable []int
	for i := range gr.Len() {
		if gr.Droppable(i) {
			droppable = append(droppable, i)
		}
	}
	assert.Equal(t, []int{3, 4, 5}, droppable, "the block's values but its input")
	gr.Output[4] = true
	assert.False(t, gr.Droppable(4), "an output is kept")
}
