package vm

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/memory"
)

// deviceAllocator stands for an allocator of device memory: its addresses are not host memory, and
// it says so. Nothing may read or write them.
type deviceAllocator struct {
	GoAllocator
	gets int
}

func (a *deviceAllocator) HostAccessible() bool { return false }

func (a *deviceAllocator) Get(size int64) (tensor.Memory, error) {
	a.gets++
	return a.GoAllocator.Get(size)
}

// TestDeviceMemoryIsRefused: the CPU executor refuses an allocator of device memory with
// ErrDeviceMemory before it takes any memory, instead of faulting on the first read; gmlake over
// the simulated driver (no memory behind its addresses) is refused the same way.
func TestDeviceMemoryIsRefused(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(4), gorgonia.WithName("x"), gorgonia.WithInit(gorgonia.Ones()))
	y := gorgonia.Must(gorgonia.Square(x))

	dev := &deviceAllocator{}
	_, err := New(g, dev, WithOutputs(y))
	require.ErrorIs(t, err, ErrDeviceMemory)
	assert.Zero(t, dev.gets, "nothing was allocated")

	a, err := memory.NewAllocator(sim.New(sim.WithCapacity(1<<30), sim.WithGranularity(2<<20)))
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Close()) }()
	_, err = New(g, a, WithOutputs(y))
	require.ErrorIs(t, err, ErrDeviceMemory)
	assert.NoError(t, a.Check())
	assert.Zero(t, a.Stats().LiveBytes)

	m, err := New(g, &GoAllocator{}, WithOutputs(y))
	require.NoError(t, err, "host memory runs")
	require.NoError(t, m.RunAll())
	require.NoError(t, m.Close())
}
