package shardsim

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/dataparallel/zero"
	"github.com/gmlake/gmlake/trace"
)

func TestRanksToMeasure(t *testing.T) {
	assert.Equal(t, []int{0, 1, 2}, ranksToMeasure(3, 0))
	assert.Equal(t, []int{0, 1, 2}, ranksToMeasure(3, 5))
	assert.Equal(t, []int{0, 5, 10, 15}, ranksToMeasure(16, 4))
	assert.Equal(t, []int{0}, ranksToMeasure(16, 1))
	assert.Equal(t, []int{0, 1}, ranksToMeasure(2, 2))
}

// TestStudyTakesTheWorstRank checks the rows against each rank's own replay.
func TestStudyTakesTheWorstRank(t *testing.T) {
	specs, err := bench.SimSpecs([]string{"gmlake", "caching"})
	require.NoError(t, err)
	base := small(zero.Stage2, false, true, 0, 0)
	dir := t.TempDir()
	st := Study{Workloads: []Workload{base}, WorldSizes: []int{1, 3}, Allocators: specs, Workers: 2, TraceDir: dir}
	rows, err := st.Run()
	require.NoError(t, err)
	require.Len(t, rows, 4)
	for _, row := range rows {
		assert.Equal(t, base.Name(), row.Workload)
		require.Len(t, row.Measured, row.Ranks)
		spec, err := bench.SimSpec(row.Allocator)
		require.NoError(t, err)
		var worstActive, worstReserved uint64
		for _, me := range row.Measured {
			w := base
			w.Ranks, w.Me = row.Ranks, me
			tr, _, err := Generate(w)
			require.NoError(t, err)
			written, err := trace.ReadFile(filepath.Join(dir, TraceFile(w)))
			require.NoError(t, err, "the study wrote every trace it replayed")
			assert.Equal(t, tr.Events, written.Events)
			p, err := bench.Prepare("t", tr)
			require.NoError(t, err)
			rep, err := bench.Measure(p, spec, bench.MeasureOptions{})
			require.NoError(t, err)
			worstActive, worstReserved = max(worstActive, rep.PeakActive), max(worstReserved, rep.PeakReserved)
		}
		assert.Equal(t, worstActive, row.PeakActive, "%s N=%d", row.Allocator, row.Ranks)
		assert.Equal(t, worstReserved, row.PeakReserved, "%s N=%d", row.Allocator, row.Ranks)
		assert.GreaterOrEqual(t, row.CapacityOverActive, 1.0)
		assert.GreaterOrEqual(t, row.MinCapacity, row.PeakActive)
		assert.True(t, row.Exact)
	}
}
