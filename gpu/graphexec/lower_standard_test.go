package graphexec

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// gorgoniaRun evaluates every node of g with each op's own Do on the CPU, in topological order.
func gorgoniaRun(t *testing.T, g *gorgonia.ExprGraph) map[int64][]float32 {
	t.Helper()
	sorted, err := gorgonia.Sort(g)
	require.NoError(t, err)
	slices.Reverse(sorted)
	vals := map[int64]gorgonia.Value{}
	out := map[int64][]float32{}
	for _, n := range sorted {
		v := n.Value()
		if n.Op() != nil {
			var in []gorgonia.Value
			for it := g.From(n.ID()); it.Next(); {
				in = append(in, vals[it.Node().ID()])
			}
			v, err = n.Op().Do(in...)
			require.NoError(t, err, "CPU %v", n)
		}
		vals[n.ID()] = v
		switch x := v.Data().(type) {
		case []float32:
			out[n.ID()] = slices.Clone(x)
		case float32:
			out[n.ID()] = []float32{x}
		default:
			t.Fatalf("%v: value of type %T", n, x)
		}
	}
	return out
}

// diff is the largest absolute difference of got from want, and the relative L2 error.
func diff(got, want []float32) (maxAbs, rel float64) {
	var num, den float64
	for i := range want {
		d := float64(got[i]) - float64(want[i])
		if math.IsNaN(d) {
			return math.NaN(), math.NaN()
		}
		maxAbs = math.Max(maxAbs, math.Abs(d))
		num += d * d
		den += float64(want[i]) * float64(want[i])
	}
	return maxAbs, math.Sqrt(num) / math.Max(math.Sqrt(den), 1e-30)
}

// setInputs gives the graph's inputs seeded values: x normal, y one-hot rows, a causal mask.
func setInputs(t *testing.T, ug *userGraph, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 9))
	for _, n := range ug.Inputs {
		s := []int(n.Shape())
		data := make([]float32, count(s))
		switch n.Name() {
		case "y":
			for row := range s[0] {
				data[row*s[1]+r.IntN(s[1])] = 1
			}
		case "mask":
			for q := range s[0] {
				for k := q + 1; k < s[1]; k++ {
					data[q*s[1]+k] = -1e9
				}
			}
		default:
			for i := range data {
				data[i] = float32(r.NormFloat64())
			}
		}
		require.NoError(t, gorgonia.Let(n, tensor.New(tensor.WithShape(s...), tensor.WithBacking(data))))
	}
}

// miscGraph exercises the forms the two user graphs do not: reductions over non-adjacent and
// all axes, slices of a range and of a single index, 3-D transposes, Concat along axis 0, every
// elementwise function and comparison, a softmax along axis 0, batched products with both
// operands transposed, matrix-vector, dot and outer products.
func miscGraph(seed uint64) (*userGraph, error) {
	r := rand.New(rand.NewPCG(seed, 3))
	g := gorgonia.NewGraph()
	x := param(g, r, "x", 1, 3, 4, 5)
	v := param(g, r, "v", 1, 5)
	w := param(g, r, "w", 1, 4, 5)
	pos := param(g, r, "pos", 0.1, 3, 4)
	var err error
	must := func(n *gorgonia.Node, e error) *gorgonia.Node {
		if err == nil && e != nil {
			err = e
		}
		return n
	}
	p := must(gorgonia.Add(must(gorgonia.Square(pos)), scalar(g, 0.5))) // positive, for the functions that need it
	terms := []*gorgonia.Node{
		must(gorgonia.Sum(x, 0, 2)),
		must(gorgonia.Max(x, 1, 2)),
		must(gorgonia.Sum(x)),
		must(gorgonia.Mean(must(gorgonia.Slice(x, gorgonia.S(1, 3))))),
		must(gorgonia.Sum(must(gorgonia.Slice(x, nil, gorgonia.S(2))))),
		must(gorgonia.Sum(must(gorgonia.Transpose(x, 2, 0, 1)), 0)),
		must(gorgonia.Sum(must(gorgonia.Concat(0, x, x)), 0, 1)),
		must(gorgonia.Sum(must(gorgonia.SoftMax(must(gorgonia.Reshape(x, tensor.Shape{12, 5})), 0)), 1)),
		must(gorgonia.Mul(w, v)),
		must(gorgonia.Mul(v, must(gorgonia.Transpose(w)))),
		must(gorgonia.Mul(v, v)),
		must(gorgonia.Sum(must(gorgonia.OuterProd(v, v)), 1)),
		must(gorgonia.Sum(must(gorgonia.BatchedMatMul(x, must(gorgonia.Transpose(x, 0, 2, 1)), true, true)), 0, 1)),
		must(gorgonia.Sum(must(gorgonia.BatchedMatMul(x, x, false, true)), 0, 1)),
	}
	for _, f := range []func(*gorgonia.Node) (*gorgonia.Node, error){gorgonia.Exp, gorgonia.Log, gorgonia.Neg,
		gorgonia.Square, gorgonia.Sqrt, gorgonia.Tanh, gorgonia.Sigmoid, gorgonia.Inverse, gorgonia.InverseSqrt,
		gorgonia.Cube, gorgonia.Log1p, gorgonia.Expm1, gorgonia.Softplus, gorgonia.Sin, gorgonia.Cos,
		gorgonia.Log2, gorgonia.Abs} {
		terms = append(terms, must(f(p)))
	}
	for _, f := range []func(a, b *gorgonia.Node, same bool) (*gorgonia.Node, error){gorgonia.Lt, gorgonia.Gt,
		gorgonia.Lte, gorgonia.Gte, gorgonia.Eq, gorgonia.Ne} {
		terms = append(terms, must(gorgonia.HadamardProd(must(f(pos, must(gorgonia.Neg(pos)), true)), pos)))
	}
	terms = append(terms, must(gorgonia.Pow(p, scalar(g, 1.5))), must(gorgonia.Div(scalar(g, 2), p)))
	loss := scalar(g, 0)
	for _, tm := range terms {
		loss = must(gorgonia.Add(loss, must(gorgonia.Sum(tm))))
	}
	if err != nil {
		return nil, err
	}
	return finish(&userGraph{G: g, Loss: loss, Params: []*gorgonia.Node{x, v, w, pos}})
}

func userGraphs(t *testing.T) map[string]*userGraph {
	t.Helper()
	mlp, err := userMLP(16, 12, 32, 5, 1)
	require.NoError(t, err)
	block, err := userBlock(2, 8, 16, 2, 6, 1)
	require.NoError(t, err)
	misc, err := miscGraph(1)
	require.NoError(t, err)
	setInputs(t, mlp, 1)
	setInputs(t, block, 1)
	return map[string]*userGraph{"mlp": mlp, "block": block, "misc": misc}
}

// Every op of the user graphs and their gradients is described, and together they use every
// kind the lowering has but dropout (which has its own test).
func TestCheckGraphCoversUserGraphs(t *testing.T) {
	kinds, names := map[Kind]int{}, map[string]int{}
	for name, ug := range userGraphs(t) {
		require.NoError(t, CheckGraph(ug.G), name)
		for _, n := range ug.G.AllNodes() {
			if n.Op() != nil {
				d, err := Describe(n.Op())
				require.NoError(t, err)
				kinds[d.Kind]++
				names[d.Name]++
			}
		}
	}
	for _, k := range []Kind{KindBinary, KindUnary, KindMatMul, KindBatchedMatMul, KindMatVec, KindVecDot, KindOuter,
		KindSum, KindMax, KindSoftmax, KindSoftmaxGrad, KindTranspose, KindSlice, KindSliceGrad, KindConcat,
		KindRepeat, KindConstant, KindReshape} {
		assert.Positive(t, kinds[k], "no %v op", k)
	}
	for _, n := range []string{"add", "sub", "mul", "div", "pow", "gte", "eq", "exp", "log", "neg", "square", "sqrt",
		"tanh", "sigmoid"} {
		assert.Positive(t, names[n], "no %s op", n)
	}
}

func TestDescribeStandardOps(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(4, 6), gorgonia.WithName("x"))
	must := func(n *gorgonia.Node, err error) gorgonia.Op {
		require.NoError(t, err)
		return n.Op()
	}
	mk := nodeMaker(t)
	xt := mk(gorgonia.Transpose(x))
	for _, tt := range []struct {
		op   gorgonia.Op
		want Desc
	}{
		{must(gorgonia.Sub(x, x)), Desc{Kind: KindBinary, Name: "sub"}},
		{must(gorgonia.Gte(x, x, true)), Desc{Kind: KindBinary, Name: "gte"}},
		{must(gorgonia.Log(x)), Desc{Kind: KindUnary, Name: "log"}},
		{must(gorgonia.Sum(x, 0, 1)), Desc{Kind: KindSum, Axes: []int{0, 1}}},
		{must(gorgonia.Max(x, 1)), Desc{Kind: KindMax, Axes: []int{1}}},
		{must(gorgonia.SoftMax(x, 0)), Desc{Kind: KindSoftmax, Axis: 0}},
		{must(gorgonia.LogSoftMax(x)), Desc{Kind: KindSoftmax, Axis: -1, Log: true}},
		{must(gorgonia.Transpose(x)), Desc{Kind: KindTranspose, Perm: []int{1, 0}}},
		{must(gorgonia.Slice(x, gorgonia.S(1, 4))), Desc{Kind: KindSlice, Start: 1, End: 4, Step: 1}},
		{must(gorgonia.Concat(1, x, x)), Desc{Kind: KindConcat, Axis: 1}},
		{must(gorgonia.Mul(x, xt)), Desc{Kind: KindMatMul}},
		{must(gorgonia.Dropout(x, 0.25)), Desc{Kind: KindDropout, Prob: 0.25}},
		{must(gorgonia.Dropout(xt, 0)), Desc{Kind: KindReshape}}, // not x: Gorgonia merges dropouts of one input
	} {
		got, err := Describe(tt.op)
		require.NoError(t, err, "%v", tt.op)
		assert.Equal(t, tt.want, got, "%v", tt.op)
	}
}

// nodeMaker returns a function that checks a graph constructor's error and returns its node.
func nodeMaker(t *testing.T) func(*gorgonia.Node, error) *gorgonia.Node {
	return func(n *gorgonia.Node, err error) *gorgonia.Node {
		t.Helper()
		require.NoError(t, err)
		return n
	}
}

// An op the GPU path has no lowering for, a comparison with a boolean result and a float64 graph
// are each reported by CheckGraph (which Compile runs first), by node and op.
func TestCheckGraphNamesUnsupportedOps(t *testing.T) {
	mk := nodeMaker(t)
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(1, 1, 4, 4), gorgonia.WithName("img"))
	pool := mk(gorgonia.MaxPool2D(x, tensor.Shape{2, 2}, []int{0, 0}, []int{2, 2}))
	cmp := mk(gorgonia.Gt(x, x, false))
	err := CheckGraph(g)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrUnsupported)
	var ue *UnsupportedOpError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, pool.Name(), ue.Node)
	assert.Equal(t, "*gorgonia.maxPoolOp", ue.Type)
	assert.Contains(t, err.Error(), cmp.Name(), "every unsupported node is named")
	assert.Contains(t, err.Error(), "boolean result")

	g64 := gorgonia.NewGraph()
	y := gorgonia.NewMatrix(g64, tensor.Float64, gorgonia.WithShape(2, 2), gorgonia.WithName("y"))
	mk(gorgonia.Exp(y))
	err = CheckGraph(g64)
	require.ErrorAs(t, err, &ue)
	assert.Contains(t, ue.Reason, "float64")
}

// The lowering on host arrays (the Device's primitives computed on the host) matches Gorgonia's
// own CPU ops on every node of the user graphs: forward, gradients and every intermediate.
func TestLoweringMatchesGorgonia(t *testing.T) {
	for name, ug := range userGraphs(t) {
		t.Run(name, func(t *testing.T) {
			want := gorgoniaRun(t, ug.G)
			h := &hostArrays{}
			got, err := hostRun(ug.G, h)
			require.NoError(t, err)
			assert.Zero(t, h.live, "temporaries freed")
			compared := 0
			for _, n := range ug.G.AllNodes() {
				if n.Op() == nil {
					continue
				}
				w, g := want[n.ID()], got[n.ID()]
				require.Len(t, g, len(w), "%v", n)
				maxAbs, rel := diff(g, w)
				assert.False(t, math.IsNaN(maxAbs), "%v: NaN", n)
				if rel > 1e-5 && maxAbs > 1e-6 {
					t.Errorf("%v %v (%v): max abs %.3g, relative %.3g", n.Op(), n.Shape(), n.Name(), maxAbs, rel)
				}
				compared++
			}
			t.Logf("%d op nodes match", compared)
		})
	}
}

// Dropout keeps each element with probability 1-p, scaled by 1/(1-p), drawn by the graph's own
// op; its gradient is Gorgonia's (dy / p where the output is non-zero).
func TestDropoutLowering(t *testing.T) {
	mk := nodeMaker(t)
	g := gorgonia.NewGraph()
	r := rand.New(rand.NewPCG(4, 4))
	x := param(g, r, "x", 1, 64, 64)
	y := mk(gorgonia.Dropout(x, 0.25))
	w := param(g, r, "w", 1, 64, 64)
	loss := mk(gorgonia.Sum(mk(gorgonia.HadamardProd(y, w))))
	grads, err := gorgonia.Grad(loss, x)
	require.NoError(t, err)
	got, err := hostRun(g, &hostArrays{})
	require.NoError(t, err)
	xs, ys, ws, dx := got[x.ID()], got[y.ID()], got[w.ID()], got[grads[0].ID()]
	kept := 0
	for i := range xs {
		if ys[i] != 0 {
			kept++
			assert.Equal(t, xs[i]/float32(0.75), ys[i])
			assert.Equal(t, ws[i]/float32(0.25), dx[i])
		} else {
			assert.Zero(t, dx[i])
		}
	}
	assert.InDelta(t, 0.75, float64(kept)/float64(len(xs)), 0.05, "kept fraction")
}

func TestUnsupportedOpErrorIs(t *testing.T) {
	var err error = &UnsupportedOpError{Type: "T", Op: "op"}
	assert.True(t, errors.Is(err, ErrUnsupported))
	assert.Contains(t, err.Error(), `T "op"`)
}

// The user graphs train with SGD through the lowering on host arrays as they do with Gorgonia's
// TapeMachine, step for step: the CPU half of the GPU training test, and a check of its tolerances.
func TestUserGraphsTrainOnHostArrays(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func() (*userGraph, error)
		steps int
		lr    float32
	}{
		{"mlp", func() (*userGraph, error) { return userMLP(64, 32, 64, 10, 7) }, 30, 0.1},
		{"transformer-block", func() (*userGraph, error) { return userBlock(4, 16, 32, 4, 8, 7) }, 20, 0.05},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cpu, err := tc.build()
			require.NoError(t, err)
			host, err := tc.build()
			require.NoError(t, err)
			setInputs(t, cpu, 11)
			setInputs(t, host, 11)
			vm := gorgonia.NewTapeMachine(cpu.G)
			defer vm.Close()
			var first, last float32
			worstLoss, worstGrad := 0.0, 0.0
			for step := range tc.steps {
				require.NoError(t, vm.RunAll())
				h := &hostArrays{}
				vals, err := hostRun(host.G, h)
				require.NoError(t, err)
				cpuLoss, hostLoss := cpu.Loss.Value().Data().(float32), vals[host.Loss.ID()][0]
				if step == 0 {
					first = hostLoss
				}
				last = hostLoss
				worstLoss = math.Max(worstLoss, math.Abs(float64(hostLoss-cpuLoss))/math.Abs(float64(cpuLoss)))
				for i := range cpu.Params {
					cg := cpu.Grads[i].Value().Data().([]float32)
					hg := vals[host.Grads[i].ID()]
					_, rel := diff(hg, cg)
					worstGrad = math.Max(worstGrad, rel)
					cw := cpu.Params[i].Value().Data().([]float32)
					hw := host.Params[i].Value().Data().([]float32)
					for j := range cw {
						cw[j] -= tc.lr * cg[j]
						hw[j] -= tc.lr * hg[j]
					}
				}
				vm.Reset()
			}
			t.Logf("%s: loss %.5f -> %.5f over %d steps; worst loss relative diff %.2e, gradient %.2e",
				tc.name, first, last, tc.steps, worstLoss, worstGrad)
			assert.Less(t, last, first*0.9, "it trains")
			assert.LessOrEqual(t, worstLoss, 1e-5)
			assert.LessOrEqual(t, worstGrad, 1e-4)
		})
	}
}
