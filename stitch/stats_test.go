package stitch_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

// Stats' named counts agree with the kinds they stand for, and String labels every figure.
func TestStatsNamedCounts(t *testing.T) {
	drv := sim.New(sim.WithGranularity(2 << 20))
	e, err := stitch.New(drv, stitch.WithExactGrowth())
	require.NoError(t, err)
	const mib = 1 << 20
	a, err := e.Alloc(8*mib, 0)
	require.NoError(t, err)
	b, err := e.Alloc(8*mib, 0)
	require.NoError(t, err)
	require.NoError(t, e.Free(a, 8*mib))
	require.NoError(t, e.Free(b, 8*mib))
	c, err := e.Alloc(16*mib, 0) // from the two free blocks
	require.NoError(t, err)
	require.NoError(t, e.Free(c, 16*mib))
	d, err := e.Alloc(16*mib, 0) // the cached block, reused as it is
	require.NoError(t, err)

	st := e.Stats()
	assert.Equal(t, uint64(4), st.Outcomes.Total(), "four requests")
	assert.Equal(t, uint64(1), st.Outcomes.Exact, "the last request")
	var sum uint64
	for o := range stitch.NumOutcomes {
		sum += st.Outcomes.Of(o)
	}
	assert.Equal(t, st.Outcomes.Total(), sum)
	assert.Equal(t, st.Outcomes.Exact, st.Outcomes.Of(stitch.OutcomeExact))
	assert.Zero(t, st.Outcomes.Of(stitch.NumOutcomes), "no such outcome")

	calls := drv.Calls()
	sum = 0
	for k := range stitch.NumCallKinds {
		assert.Equal(t, calls[k], st.DriverCalls.Of(k), "%s", k)
		sum += st.DriverCalls.Of(k)
	}
	assert.Equal(t, sum, st.DriverCalls.Total())
	assert.Equal(t, st.DriverCalls.Total(), st.TotalDriverCalls())
	assert.Equal(t, calls[stitch.CallMap], st.DriverCalls.Map)
	assert.Equal(t, calls[stitch.CallCreate], st.DriverCalls.Create)

	s := st.String()
	for _, want := range []string{"live 16.00 MiB in 1 blocks", "reserved 16.00 MiB", "stitched views",
		fmt.Sprintf("requests 4: exact 1, split %d, stitch %d, new chunks %d", st.Outcomes.Split, st.Outcomes.Stitch, st.Outcomes.NewChunks),
		fmt.Sprintf("driver calls %d: create %d, ", st.DriverCalls.Total(), st.DriverCalls.Create),
		fmt.Sprintf("map %d", st.DriverCalls.Map), "rejected frees 0"} {
		assert.Contains(t, s, want)
	}
	assert.NotContains(t, s, "[", "no unlabeled arrays")
	require.NoError(t, e.Free(d, 16*mib))
	require.NoError(t, e.Close())
}
