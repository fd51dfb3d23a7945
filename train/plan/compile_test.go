package plan

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oneBlock is a hand-written graph of one transformer block and its gradient:
//
//	0 ids, 1 w (leaves); 2 x = emb(ids), the block's input; block 0: 3 a = f(x, w), 4 b = g(a),
//	5 h = x + b; 6 loss = L(h); backward: 7 dh = L'(h), 8 db = (dh, b), 9 da = (db, a),
//	10 dw = (da, x). Outputs: loss and dw.
func oneBlock() *Graph {
	return &Graph{
		Inputs:  [][]int{nil, nil, {0}, {2, 1}, {3}, {2, 4}, {5}, {5}, {7, 4}, {8, 3}, {9, 2}},
		Leaf:    []bool{true, true, false, false, false, false, false, false, false, false, false},
		Output:  []bool{false, false, false, false, false, false, true, false, false, false, true},
		Forward: []bool{true, true, true, true, true, true, true, false, false, false, false},
		Block:   []int{-1, -1, -1, 0, 0, 0, -1, -1, -1, -1, -1},
		InputOf: []int{-1, -1, 0, -1, -1, -1, -1, -1, -1, -1, -1},
	}
}

func allNodes(gr *Graph) []int {
	order := make([]int, gr.Len())
	for i := range order {
		order[i] = i
	}
	return order
}

// listing prints a program one step a line: "exec 4 (recompute) free [3 6]".
func listing(prog []Step) []string {
	out := make([]string, len(prog))
	for p, s := range prog {
		var b strings.Builder
		fmt.Fprintf(&b, "%v %d", s.Op, s.Node)
		if s.Recompute {
			b.WriteString(" (recompute)")
		}
		if len(s.Release) > 0 {
			fmt.Fprintf(&b, " free %v", s.Release)
		}
		out[p] = b.String()
	}
	return out
}

func TestCompileOneBlock(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want []string
	}{
		{"plain", Options{Prune: true}, []string{
			"load 0", "load 1", "exec 2 free [0]", "exec 3 free [1]", "exec 4", "exec 5", "exec 6",
			"exec 7 free [5]", "exec 8 free [4 7]", "exec 9 free [3 8]", "exec 10 free [2 9]",
		}},
		{"recompute", Options{Recompute: true, Prune: true}, []string{
			"load 0", "load 1", "exec 2 free [0]", "exec 3", "exec 4 free [3]", "exec 5 free [4]",
			"exec 6 free [5]", // the forward instances of a, b and h die at their last forward read
			"exec 3 (recompute) free [1]", "exec 4 (recompute)", "exec 5 (recompute)",
			"exec 7 free [5]", "exec 8 free [4 7]", "exec 9 free [3 8]", "exec 10 free [2 9]",
		}},
		{"offload", Options{Offload: true, Prune: true}, []string{
			"load 0", "load 1", "exec 2 free [0]", "exec 3 free [1]", "exec 4", "exec 5",
			"offload 2 free [2]", "offload 3 free [3]", "offload 4 free [4]", // after the block
			"exec 6", "offload 5 free [5]", // after its last forward read
			"restore 2", "restore 3", "restore 4", "restore 5", // the group, before backward's first read
			"exec 7 free [5]", "exec 8 free [4 7]", "exec 9 free [3 8]", "exec 10 free [2 9]",
		}},
		{"recompute and offload", Options{Recompute: true, Offload: true, Prune: true}, []string{
			"load 0", "load 1", "exec 2 free [0]", "exec 3", "exec 4 free [3]", "exec 5 free [4]",
			"offload 2 free [2]", "exec 6 free [5]", // only the block input travels
			"restore 2", "exec 3 (recompute) free [1]", "exec 4 (recompute)", "exec 5 (recompute)",
			"exec 7 free [5]", "exec 8 free [4 7]", "exec 9 free [3 8]", "exec 10 free [2 9]",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gr := oneBlock()
			prog := gr.Compile(allNodes(gr), tc.opts)
			assert.Equal(t, tc.want, listing(prog))
			_, err := gr.Simulate(prog, func(int) int64 { return 1 }, func(int) bool { return false })
			assert.NoError(t, err)
		})
	}
}

// chain is n blocks like oneBlock's in a row (block k's output is block k+1's input), each with
// its own weight, followed by the backward pass; the weights' gradients are the outputs.
func chain(n int) *Graph {
	gr := &Graph{}
	add := func(inputs []int, leaf, forward bool, block int) int {
		gr.Inputs = append(gr.Inputs, inputs)
		gr.Leaf = append(gr.Leaf, leaf)
		gr.Output = append(gr.Output, false)
		gr.Forward = append(gr.Forward, forward)
		gr.Block = append(gr.Block, block)
		gr.InputOf = append(gr.InputOf, -1)
		return len(gr.Inputs) - 1
	}
	x := add(nil, false, true, -1)
	x = add([]int{x}, false, true, -1)
	type saved struct{ x, a, b int }
	var blocks []saved
	for k := range n {
		w := add(nil, true, true, -1)
		gr.InputOf[x] = k
		a := add([]int{x, w}, false, true, k)
		b := add([]int{a}, false, true, k)
		blocks = append(blocks, saved{x, a, b})
		x = add([]int{x, b}, false, true, k)
	}
	gr.Leaf[0] = true
	gr.Output[add([]int{x}, false, true, -1)] = true
	dh := add([]int{x}, false, false, -1)
	for k := n - 1; k >= 0; k-- {
		db := add([]int{dh, blocks[k].b}, false, false, -1)
		da := add([]int{db, blocks[k].a}, false, false, -1)
		gr.Output[add([]int{da, blocks[k].x}, false, false, -1)] = true
		dh = add([]int{dh, da}, false, false, -1)
	}
	return gr
}

// TestCompileLowersPeak: with every activation the same size, recompute and offload each hold
// fewer values at once than the plain program, and together no more than recompute alone; every
// program is valid.
func TestCompileLowersPeak(t *testing.T) {
	for _, n := range []int{2, 3, 6} {
		t.Run(fmt.Sprint(n, " blocks"), func(t *testing.T) {
			gr := chain(n)
			peak := map[Options]int64{}
			for _, o := range []Options{{}, {Recompute: true}, {Offload: true}, {Recompute: true, Offload: true}} {
				o.Prune = true
				p, err := gr.Simulate(gr.Compile(allNodes(gr), o), func(int) int64 { return 10 }, func(int) bool { return false })
				require.NoError(t, err, "%+v", o)
				peak[o] = p
			}
			plain := peak[Options{Prune: true}]
			assert.Less(t, peak[Options{Recompute: true, Prune: true}], plain)
			assert.Less(t, peak[Options{Offload: true, Prune: true}], plain)
			assert.LessOrEqual(t, peak[Options{Recompute: true, Offload: true, Prune: true}], peak[Options{Recompute: true, Prune: true}])
			t.Logf("peaks: %v", peak)
		})
	}
}

// deadEnds: 0 p (leaf), 4 q (leaf, unread); 1 = f(p), 2 = g(1) read by nobody, 3 = h(p) the output.
func deadEnds() *Graph {
	return &Graph{
		Inputs:  [][]int{nil, {0}, {1}, {0}, nil},
		Leaf:    []bool{true, false, false, false, true},
		Output:  []bool{false, false, false, true, false},
		Forward: []bool{true, true, true, true, true},
		Block:   []int{-1, -1, -1, -1, -1},
		InputOf: []int{-1, -1, -1, -1, -1},
	}
}

func TestCompilePrune(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order []int
		prune bool
		want  []string
	}{
		{"kept: each value dies right after it is made or read", []int{0, 4, 1, 2, 3}, false, []string{
			"load 0", "load 4 free [4]", "exec 1", "exec 2 free [1 2]", "exec 3 free [0]",
		}},
		{"pruned repeatedly: 2, then 1 that only 2 read, and the unread leaf", []int{0, 4, 1, 2, 3}, true, []string{
			"load 0", "exec 3 free [0]",
		}},
		{"leaves left out of the order are read in place", []int{1, 2, 3}, true, []string{
			"exec 3",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gr := deadEnds()
			prog := gr.Compile(tc.order, Options{Prune: tc.prune})
			assert.Equal(t, tc.want, listing(prog))
			_, err := gr.Simulate(prog, func(int) int64 { return 1 }, func(int) bool { return false })
			assert.NoError(t, err)
		})
	}
}

// TestCompileWithoutBlocks: the rewrites change nothing on a graph without blocks.
func TestCompileWithoutBlocks(t *testing.T) {
	gr := oneBlock()
	for i := range gr.Block {
		gr.Block[i], gr.InputOf[i] = -1, -1
	}
	plain := listing(gr.Compile(allNodes(gr), Options{Prune: true}))
	for _, o := range []Options{{Recompute: true, Prune: true}, {Offload: true, Prune: true}, {Recompute: true, Offload: true, Prune: true}} {
		assert.Equal(t, plain, listing(gr.Compile(allNodes(gr), o)), "%+v", o)
	}
}

// TestCompileLeavesRunFirst: a leaf in the order is loaded in the forward part even when it is no
// ancestor of a forward root.
func TestCompileLeavesRunFirst(t *testing.T) {
	gr := oneBlock()
	gr.Forward[1] = false
	prog := gr.Compile(allNodes(gr), Options{Prune: true})
	assert.Equal(t, Step{Op: Load, Node: 1}, prog[1])
}

// TestCompileGathered: a gathered weight is loaded before the block's forward and again before its
// recomputation, and released after each; the others stay loaded once.
func TestCompileGathered(t *testing.T) {
	gr := oneBlock()
	prog := gr.CompileGathered(allNodes(gr), Options{Recompute: true, Prune: true}, [][]int{{1}})
	assert.Equal(t, []string{
		"load 0", "exec 2 free [0]", "load 1", "exec 3 free [1]", "exec 4 free [3]", "exec 5 free [4]",
		"exec 6 free [5]",
		"load 1", "exec 3 (recompute) free [1]", "exec 4 (recompute)", "exec 5 (recompute)",
		"exec 7 free [5]", "exec 8 free [4 7]", "exec 9 free [3 8]", "exec 10 free [2 9]",
	}, listing(prog))
	_, err := gr.Simulate(prog, func(int) int64 { return 1 }, func(int) bool { return false })
	require.NoError(t, err)
	// Not a leaf, out of range: ignored.
	assert.Equal(t, listing(gr.Compile(allNodes(gr), Options{Prune: true})),
		listing(gr.CompileGathered(allNodes(gr), Options{Prune: true}, [][]int{{3, -1, 99}})))
}

// TestCompileGatheredPerBlock: in a chain of blocks, each block's weight is read in forward and
// in backward (as a matmul's weight is), so with one group per block every weight is loaded once
// per pass and at most two are live at once however many blocks there are; one group of all
// weights is loaded together, before the first block, and again before the last block's backward.
func TestCompileGatheredPerBlock(t *testing.T) {
	for _, n := range []int{2, 5} {
		gr := chain(n)
		var weights []int
		for i := range gr.Leaf {
			if gr.Leaf[i] && i != 0 {
				weights = append(weights, i)
			}
		}
		for k := range gr.Inputs { // da = (db, a) reads a's weight too
			if in := gr.Inputs[k]; !gr.Forward[k] && len(in) == 2 && gr.Block[in[1]] >= 0 && len(gr.Inputs[in[1]]) == 2 {
				if w := gr.Inputs[in[1]][1]; gr.Leaf[w] {
					gr.Inputs[k] = append(gr.Inputs[k], w)
				}
			}
		}
		isWeight := func(i int) bool { return slices.Contains(weights, i) }
		perBlock := make([][]int, n)
		for k, w := range weights {
			perBlock[k] = []int{w}
		}
		for _, o := range []Options{{Prune: true}, {Recompute: true, Prune: true}} {
			for _, tc := range []struct {
				groups   [][]int
				maxLive  int
				together bool
			}{{perBlock, 2, false}, {[][]int{weights}, n, true}} {
				prog := gr.CompileGathered(allNodes(gr), o, tc.groups)
				loads := map[int]int{}
				live, peak := 0, 0
				var loadRuns []int // lengths of runs of consecutive weight loads
				for p, s := range prog {
					if s.Op == Load && isWeight(s.Node) {
						loads[s.Node]++
						live++
						peak = max(peak, live)
						if p > 0 && prog[p-1].Op == Load && isWeight(prog[p-1].Node) {
							loadRuns[len(loadRuns)-1]++
						} else {
							loadRuns = append(loadRuns, 1)
						}
					}
					for _, r := range s.Release {
						if isWeight(r) {
							live--
						}
					}
				}
				for _, w := range weights {
					assert.Equal(t, 2, loads[w], "weight %d: one load per pass (%+v)", w, o)
				}
				assert.Zero(t, live, "every gathered instance is released")
				assert.LessOrEqual(t, peak, tc.maxLive, "%d blocks %+v", n, o)
				if tc.together {
					assert.Equal(t, []int{n, n}, loadRuns, "the group is loaded at once, once per pass")
				}
				_, err := gr.Simulate(prog, func(int) int64 { return 10 }, func(int) bool { return false })
				require.NoError(t, err)
			}
		}
	}
}
