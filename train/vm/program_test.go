package vm

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake/train/plan"
)

// TestProgramIsValid replays each compiled program with package plan's simulator: every step
// reads live values only, leaves (read in place) included, and no step is a Load.
func TestProgramIsValid(t *testing.T) {
	for _, c := range techniques {
		t.Run(fmt.Sprintf("recompute=%v/offload=%v", c.recompute, c.offload), func(t *testing.T) {
			net := buildNet(t, tensor.Float32, 3, 1, allParts)
			m := newMachine(t, net, &GoAllocator{}, c.recompute, c.offload)
			defer m.Close()
			bytes := func(i int) int64 { return int64(m.info.Nodes[i].Shape().TotalSize()) * 4 }
			_, err := m.info.Simulate(m.prog, bytes, func(int) bool { return false })
			require.NoError(t, err)
			for _, s := range m.prog {
				assert.NotEqual(t, plan.Load, s.Op, "leaves are read in place")
			}
		})
	}
}
