package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestForcedPeak(t *testing.T) {
	const big = 1 << 40 // products of this size need the 128-bit comparison
	tests := []struct {
		name         string
		before, peak uint64
		want         bool
	}{
		{"exactly the target (1 - 98/100 = 0.02) is met", 98, 100, false},
		{"just past the target (1 - 97/100)", 97, 100, true},
		{"exactly the target in large numbers", 49 * big, 50 * big, false},
		{"one byte past the target in large numbers", 49 * big, 50*big + 1, true},
		{"a new peak under 2% above the old one", 1000, 1010, false},
		{"a peak twice the old one", 1000, 2000, true},
		{"nothing before: any peak forces", 0, 1, true},
		{"nothing asked", 0, 0, false},
		{"a peak lower than before", 2000, 1000, false},
		{"the same peak again", 1000, 1000, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ForcedPeak(tt.before, tt.peak))
		})
	}
	assert.InDelta(t, 0.02, FragmentationTarget, 1e-15, "issue 3's target")
}

// Forced iterations from the trace alone: a new peak far above the old one forces, a new peak
// within the target or a larger block does not, and the target itself is met.
func TestNeedsForced(t *testing.T) {
	tests := []struct {
		name   string
		lines  []string
		forced []bool // per marker
		novel  []bool
	}{
		{
			name:   "a forced iteration",
			lines:  []string{"a 0 1000 0", "i 0", "a 1 1000 0", "f 1"}, // 2000 after 1000
			forced: []bool{true}, novel: []bool{true},
		},
		{
			name:   "novel by a new peak within 2%",
			lines:  []string{"a 0 1000 0", "f 0", "i 0", "a 1 1010 0", "f 1"}, // 1 - 1000/1010 < 0.02
			forced: []bool{false}, novel: []bool{true},
		},
		{
			name:   "novel by a larger block under a lower peak",
			lines:  []string{"a 0 500 0", "a 1 500 0", "f 0", "f 1", "i 0", "a 2 800 0", "f 2"},
			forced: []bool{false}, novel: []bool{true},
		},
		{
			name:   "the boundary: 1 - 4900/5000 is exactly 0.02",
			lines:  []string{"a 0 4900 0", "f 0", "i 0", "a 1 5000 0", "f 1"},
			forced: []bool{false}, novel: []bool{true},
		},
		{
			name:   "one byte past the boundary",
			lines:  []string{"a 0 4900 0", "f 0", "i 0", "a 1 5001 0", "f 1"},
			forced: []bool{true}, novel: []bool{true},
		},
		{
			name: "the peak before is the highest of every earlier iteration, not the last",
			lines: []string{
				"i 0", "a 0 1000 0", "f 0",
				"i 1", "a 1 100 0", "f 1",
				"i 2", "a 2 1015 0", "f 2", // within 2% of iteration 0, far above iteration 1
			},
			forced: []bool{true, false, false}, novel: []bool{true, false, true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			needs := build(t, tt.lines...).Needs()
			require.Len(t, needs, len(tt.forced))
			for i, n := range needs {
				assert.Equal(t, tt.forced[i], n.Forced, "marker %d forced", i)
				assert.Equal(t, tt.novel[i], n.Novel(), "marker %d novel", i)
				assert.False(t, n.Forced && !n.NewPeak, "marker %d: forced without a new peak", i)
			}
		})
	}
}

// Steady calls and estimated driver time split into forced and unforced iterations. Under direct
// every allocation is one Malloc (requests under 2 MiB: 0.25 ms each at the H200's costs) and every
// free one Free (0.6 ms): iteration 3 is novel but not forced (1% above the old peak), 4 is forced
// (twice the old peak), 5 repeats.
func TestMeasureForcedSplit(t *testing.T) {
	p := build(t,
		"i 0", "a 0 1000 0", "f 0",
		"i 1", "a 1 1000 0", "f 1",
		"i 2", "a 2 1000 0", "f 2",
		"i 3", "a 3 1010 0", "f 3",
		"i 4", "a 4 1010 0", "a 5 1010 0", "f 4", "f 5",
		"i 5", "a 6 1000 0", "f 6",
	)
	rep, err := Measure(p, spec(t, "direct"), MeasureOptions{})
	require.NoError(t, err)
	assert.Equal(t, []int{0, 4}, rep.ForcedIterations)
	assert.Equal(t, []int{0, 3, 4}, rep.NovelIterations)
	require.NotNil(t, rep.SteadyForcedIters)
	assert.Equal(t, 1, *rep.SteadyForcedIters)
	require.NotNil(t, rep.SteadyForcedCallsPerIter)
	assert.InDelta(t, 4.0, *rep.SteadyForcedCallsPerIter, 1e-12)
	require.NotNil(t, rep.SteadyUnforcedCallsPerIter)
	assert.InDelta(t, 2.0, *rep.SteadyUnforcedCallsPerIter, 1e-12)

	const pairMs = 0.25 + 0.6 // one Malloc and one Free
	for name, tc := range map[string]struct {
		got  *float64
		want float64
	}{
		"setup":            {rep.SetupDriverMs, 0},
		"warm-up":          {rep.WarmupDriverMsPerIter, pairMs},
		"steady":           {rep.SteadyDriverMsPerIter, 4 * pairMs / 3},
		"steady forced":    {rep.SteadyForcedDriverMsPerIter, 2 * pairMs},
		"steady unforced":  {rep.SteadyUnforcedDriverMsPerIter, pairMs},
		"steady novel":     {rep.SteadyNovelDriverMsPerIter, 3 * pairMs / 2},
		"steady repeat":    {rep.SteadyRepeatDriverMsPerIter, pairMs},
		"steady mem_alloc": {ptr(rep.SteadyDriverMsByKind[KindMalloc]), 4 * 0.25 / 3},
		"steady mem_free":  {ptr(rep.SteadyDriverMsByKind[KindMallocFree]), 4 * 0.6 / 3},
	} {
		require.NotNil(t, tc.got, name)
		assert.InDelta(t, tc.want, *tc.got, 1e-9, name)
	}

	noForced, err := Measure(build(t, "i 0", "a 0 10 0", "f 0", "i 1", "i 2", "i 3", "a 1 10 0", "f 1"),
		spec(t, "direct"), MeasureOptions{})
	require.NoError(t, err)
	require.NotNil(t, noForced.SteadyForcedIters)
	assert.Zero(t, *noForced.SteadyForcedIters)
	assert.Nil(t, noForced.SteadyForcedCallsPerIter, "no forced steady iteration")
	assert.Nil(t, noForced.SteadyForcedDriverMsPerIter)
	require.NotNil(t, noForced.SteadyUnforcedCallsPerIter)
	assert.InDelta(t, 2.0, *noForced.SteadyUnforcedCallsPerIter, 1e-12)
}
