package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGMLakeAdapter(t *testing.T) {
	a, err := newSimGMLake(64 * MiB)
	require.NoError(t, err)
	g := a.(*GMLake)
	p, err := g.Alloc(5*MiB, 0)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, g.Reserved(), 5*MiB)
	assert.Positive(t, g.DriverCalls())
	var sum uint64
	for _, n := range g.CallsByKind() {
		sum += n
	}
	assert.Equal(t, g.DriverCalls(), sum, "the kinds add up to the total")
	require.NoError(t, g.Free(p, 5*MiB))
	require.NoError(t, g.Check())

	_, err = g.Alloc(65*MiB, 0)
	assert.ErrorIs(t, err, ErrOutOfMemory, "larger than the capacity is out-of-memory under it")
	var oom *OutOfMemoryError
	assert.ErrorAs(t, err, &oom)
	require.NoError(t, g.Close())
}

func TestGMLakeMinCapacityBetweenActiveAndReserved(t *testing.T) {
	p := build(t, "a 0 12582912 0", "f 0", "a 1 14680064 0", "a 2 100 0", "f 2", "f 1")
	rep, err := Measure(p, spec(t, "gmlake"), MeasureOptions{MinCapacity: true})
	require.NoError(t, err)
	require.NotNil(t, rep.MinCapacity)
	assert.GreaterOrEqual(t, *rep.MinCapacity, rep.PeakActive)
	assert.LessOrEqual(t, *rep.MinCapacity, roundUp(rep.PeakReserved, 2*MiB))
	assert.Zero(t, *rep.MinCapacity%(2*MiB))
}
