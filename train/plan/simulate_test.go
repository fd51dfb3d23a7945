package plan

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// viewGraph: 0 x (leaf); 1 = f(x); 2 = a view of 1; 3 = g(1, 2), the output.
func viewGraph() *Graph {
	return &Graph{
		Inputs: [][]int{nil, {0}, {1}, {1, 2}},
		Leaf:   []bool{true, false, false, false},
		Output: []bool{false, false, false, true},
	}
}

func TestSimulate(t *testing.T) {
	four := func(int) int64 { return 4 }
	for _, tc := range []struct {
		name   string
		prog   []Step
		isView func(int) bool
		peak   int64
		err    error
	}{
		{
			name: "a view shares its input's buffer",
			prog: []Step{{Op: Load, Node: 0}, {Op: Exec, Node: 1, Release: []int{0}}, {Op: Exec, Node: 2},
				{Op: Exec, Node: 3, Release: []int{1, 2}}},
			isView: func(i int) bool { return i == 2 },
			peak:   8,
		},
		{
			name: "without views every exec takes a buffer",
			prog: []Step{{Op: Load, Node: 0}, {Op: Exec, Node: 1, Release: []int{0}}, {Op: Exec, Node: 2},
				{Op: Exec, Node: 3, Release: []int{1, 2}}},
			isView: func(int) bool { return false },
			peak:   12,
		},
		{
			name:   "a leaf the program never loads is read in place",
			prog:   []Step{{Op: Exec, Node: 1}, {Op: Exec, Node: 2}, {Op: Exec, Node: 3, Release: []int{1, 2}}},
			isView: func(i int) bool { return i == 2 },
			peak:   8,
		},
		{
			name: "offload frees, restore takes a fresh buffer",
			prog: []Step{{Op: Exec, Node: 1}, {Op: Offload, Node: 1, Release: []int{1}}, {Op: Restore, Node: 1},
				{Op: Exec, Node: 2}, {Op: Exec, Node: 3, Release: []int{1, 2}}},
			isView: func(int) bool { return false },
			peak:   12,
		},
		{
			name:   "reading a released value",
			prog:   []Step{{Op: Exec, Node: 1, Release: []int{1}}, {Op: Exec, Node: 2}},
			isView: func(int) bool { return false },
			err:    ErrNotLive,
		},
		{
			name:   "reading a loaded leaf after its release",
			prog:   []Step{{Op: Load, Node: 0, Release: []int{0}}, {Op: Exec, Node: 1}},
			isView: func(int) bool { return false },
			err:    ErrNotLive,
		},
		{
			name:   "offloading a value that is not live",
			prog:   []Step{{Op: Offload, Node: 1}},
			isView: func(int) bool { return false },
			err:    ErrNotLive,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			peak, err := viewGraph().Simulate(tc.prog, four, tc.isView)
			if tc.err != nil {
				assert.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.peak, peak)
		})
	}
}

func TestOpString(t *testing.T) {
	for op, want := range map[Op]string{Load: "load", Exec: "exec", Offload: "offload", Restore: "restore", Op(9): "Op(9)"} {
		assert.Equal(t, want, op.String())
	}
}
