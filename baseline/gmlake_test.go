package baseline

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/internal/units"
)

func TestGMLakeAdapter(t *testing.T) {
	a, err := New(NameGMLake, Config{Capacity: 64 * units.MiB, Driver: sim.New(sim.WithCapacity(64 * units.MiB))})
	require.NoError(t, err)
	g := a.(*GMLake)
	p, err := g.Alloc(5*units.MiB, 0)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, g.Reserved(), 5*units.MiB)
	assert.Positive(t, g.DriverCalls())
	var sum uint64
	for _, n := range g.CallsByKind() {
		sum += n
	}
	assert.Equal(t, g.DriverCalls(), sum, "the kinds add up to the total")
	require.NoError(t, g.Free(p, 5*units.MiB))
	require.NoError(t, g.Check())

	_, err = g.Alloc(65*units.MiB, 0)
	assert.ErrorIs(t, err, ErrOutOfMemory, "larger than the capacity is out-of-memory under it")
	var oom *OutOfMemoryError
	assert.ErrorAs(t, err, &oom)
	require.NoError(t, g.Close())
}
