package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNeeds(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  []IterationNeeds
	}{
		{
			name: "the setup counts as earlier; bytes live at the start count",
			lines: []string{
				"a 0 100 0",              // setup: peak 100, largest 100
				"i 0", "a 1 50 0", "f 1", // 150: a new peak
				"i 1", "a 2 40 0", "f 2", // 140: nothing new
				"i 2", "a 3 120 0", "f 3", // 220 and a block of 120: both new
				"i 3", "f 0", "a 4 110 0", "f 4", // starts at 100, then 110: nothing new
			},
			want: []IterationNeeds{
				{Iteration: 0, PeakActive: 150, PeakBefore: 100, Largest: 50, NewPeak: true, Forced: true},
				{Iteration: 1, PeakActive: 140, PeakBefore: 150, Largest: 40},
				{Iteration: 2, PeakActive: 220, PeakBefore: 150, Largest: 120, NewPeak: true, NewLargest: true, Forced: true},
				{Iteration: 3, PeakActive: 110, PeakBefore: 220, Largest: 110},
			},
		},
		{
			name: "a larger block under a lower peak is new",
			lines: []string{
				"i 0", "a 0 100 0", "a 1 100 0", "f 0", "f 1",
				"i 1", "a 2 150 0", "f 2",
				"i 2", "a 3 150 0", "f 3", // equal is not more
				"i 3", // nothing asked
			},
			want: []IterationNeeds{
				{Iteration: 0, PeakActive: 200, Largest: 100, NewPeak: true, NewLargest: true, Forced: true},
				{Iteration: 1, PeakActive: 150, PeakBefore: 200, Largest: 150, NewLargest: true},
				{Iteration: 2, PeakActive: 150, PeakBefore: 200, Largest: 150},
				{Iteration: 3, PeakBefore: 200},
			},
		},
		{
			name: "allocations live across a marker",
			lines: []string{
				"i 0", "a 0 100 0",
				"i 1", "a 1 10 0", "f 0", // 110 at once, in iteration 1
				"i 2", "f 1",
			},
			want: []IterationNeeds{
				{Iteration: 0, PeakActive: 100, Largest: 100, NewPeak: true, NewLargest: true, Forced: true},
				{Iteration: 1, PeakActive: 110, PeakBefore: 100, Largest: 10, NewPeak: true, Forced: true},
				{Iteration: 2, PeakActive: 10, PeakBefore: 110},
			},
		},
		{name: "no markers", lines: []string{"a 0 100 0", "f 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, build(t, tt.lines...).Needs())
		})
	}
}

func TestIterationNeedsNovel(t *testing.T) {
	assert.False(t, IterationNeeds{}.Novel())
	assert.True(t, IterationNeeds{NewPeak: true}.Novel())
	assert.True(t, IterationNeeds{NewLargest: true}.Novel())
}

// Steady calls split into novel and repeat iterations. Under direct every allocation and free is
// one call, so the figures are known: iteration 3 (novel) makes 2 allocations and 2 frees, 4 and 5
// (repeats) one of each.
func TestMeasureNoveltySplit(t *testing.T) {
	p := build(t,
		"i 0", "a 0 1000 0", "f 0",
		"i 1", "a 1 1000 0", "f 1",
		"i 2", "a 2 500 0", "f 2",
		"i 3", "a 3 1000 0", "a 4 200 0", "f 3", "f 4", // 1200 live: a new peak
		"i 4", "a 5 900 0", "f 5",
		"i 5", "a 6 1000 0", "f 6",
	)
	rep, err := Measure(p, spec(t, "direct"), MeasureOptions{})
	require.NoError(t, err)
	assert.Equal(t, []int{0, 3}, rep.NovelIterations)
	require.NotNil(t, rep.SteadyNovelIters)
	assert.Equal(t, 1, *rep.SteadyNovelIters)
	require.NotNil(t, rep.SteadyIters)
	assert.Equal(t, 3, *rep.SteadyIters)
	require.NotNil(t, rep.SteadyNovelCallsPerIter)
	assert.InDelta(t, 4.0, *rep.SteadyNovelCallsPerIter, 1e-12)
	require.NotNil(t, rep.SteadyRepeatCallsPerIter)
	assert.InDelta(t, 2.0, *rep.SteadyRepeatCallsPerIter, 1e-12)
	assert.InDelta(t, 8.0/3, *rep.SteadyDriverCallsPerIter, 1e-12, "the split averages to the whole")

	noSteady, err := Measure(build(t, "i 0", "a 0 10 0", "f 0", "i 1"), spec(t, "direct"), MeasureOptions{})
	require.NoError(t, err)
	assert.Equal(t, []int{0}, noSteady.NovelIterations)
	assert.Nil(t, noSteady.SteadyNovelIters)
	assert.Nil(t, noSteady.SteadyIters)
	assert.Nil(t, noSteady.SteadyNovelCallsPerIter)
	assert.Nil(t, noSteady.SteadyRepeatCallsPerIter)

	allRepeat, err := Measure(build(t, "i 0", "a 0 10 0", "f 0", "i 1", "i 2", "i 3", "a 1 10 0", "f 1"),
		spec(t, "direct"), MeasureOptions{})
	require.NoError(t, err)
	require.NotNil(t, allRepeat.SteadyNovelIters)
	assert.Zero(t, *allRepeat.SteadyNovelIters)
	assert.Nil(t, allRepeat.SteadyNovelCallsPerIter, "no novel steady iteration")
	require.NotNil(t, allRepeat.SteadyRepeatCallsPerIter)
	assert.InDelta(t, 2.0, *allRepeat.SteadyRepeatCallsPerIter, 1e-12)
}
