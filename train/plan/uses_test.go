package plan

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestUseAnalysis checks the instances and readers of a hand-written program over
// 0 x (leaf), 1 = f(x, x), 2 = g(1) (the output), with 1 offloaded and restored in between.
func TestUseAnalysis(t *testing.T) {
	gr := &Graph{
		Inputs: [][]int{nil, {0, 0}, {1}},
		Leaf:   []bool{true, false, false},
		Output: []bool{false, false, true},
	}
	for _, tc := range []struct {
		name  string
		prog  []Step
		nodes []int   // instance -> node
		reads [][]int // instance -> reading steps
		final []bool
		dead  []bool // per step
	}{
		{
			name:  "a step reading a value twice reads it once",
			prog:  []Step{{Op: Load, Node: 0}, {Op: Exec, Node: 1}, {Op: Exec, Node: 2}},
			nodes: []int{0, 1, 2},
			reads: [][]int{{1}, {2}, nil},
			final: []bool{true, true, true},
			dead:  []bool{false, false, false},
		},
		{
			name: "an offload reads and ends an instance; a restore makes the next",
			prog: []Step{{Op: Load, Node: 0}, {Op: Exec, Node: 1}, {Op: Offload, Node: 1},
				{Op: Restore, Node: 1}, {Op: Exec, Node: 2}},
			nodes: []int{0, 1, 1, 2},
			reads: [][]int{{1}, {2}, {4}, nil},
			final: []bool{true, false, true, true},
			dead:  []bool{false, false, false, false, false},
		},
		{
			name:  "an unread value is dead unless it is a kept output",
			prog:  []Step{{Op: Load, Node: 0}, {Op: Exec, Node: 1}, {Op: Exec, Node: 1}, {Op: Exec, Node: 2}},
			nodes: []int{0, 1, 1, 2},
			reads: [][]int{{1, 2}, nil, {3}, nil},
			final: []bool{true, false, true, true},
			dead:  []bool{false, true, false, false},
		},
		{
			name:  "an output made twice: the first instance is dead",
			prog:  []Step{{Op: Load, Node: 0}, {Op: Exec, Node: 1}, {Op: Exec, Node: 2}, {Op: Exec, Node: 2}},
			nodes: []int{0, 1, 2, 2},
			reads: [][]int{{1}, {2, 3}, nil, nil},
			final: []bool{true, true, false, true},
			dead:  []bool{false, false, true, false},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := gr.useAnalysis(tc.prog)
			assert.Equal(t, tc.nodes, u.node, "nodes")
			assert.Equal(t, tc.reads, u.reads, "reads")
			assert.Equal(t, tc.final, u.final, "final")
			assert.Equal(t, tc.dead, u.dead, "dead")
		})
	}
}

func TestReadsAfterAndLastBefore(t *testing.T) {
	u := &uses{reads: [][]int{{3, 5, 9, 12}}, at: []int{0}}
	for _, tc := range []struct {
		cut      int
		after    []int
		lastRead int
	}{
		{0, []int{3, 5, 9, 12}, 0},
		{5, []int{5, 9, 12}, 3},
		{10, []int{12}, 9},
		{13, nil, 12},
	} {
		assert.Equal(t, tc.after, u.readsAfter(0, tc.cut), "readsAfter %d", tc.cut)
		assert.Equal(t, tc.lastRead, u.lastBefore(0, tc.cut), "lastBefore %d", tc.cut)
	}
}
