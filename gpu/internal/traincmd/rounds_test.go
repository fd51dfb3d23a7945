package traincmd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoundsOrder(t *testing.T) {
	got := Rounds{Allocators: []string{"gmlake", "gorgonia", "direct"}, N: 3}.Order()
	require.Len(t, got, 3)
	assert.Equal(t, []string{"gmlake", "gorgonia", "direct"}, got[0])
	assert.Equal(t, []string{"direct", "gorgonia", "gmlake"}, got[1])
	assert.Equal(t, []string{"gmlake", "gorgonia", "direct"}, got[2])
	assert.Equal(t, [][]string{{"a", "b"}}, Rounds{Allocators: []string{"a", "b"}}.Order(), "0 rounds is one")
}

func TestTurns(t *testing.T) {
	assert.Equal(t, []int{0, 1}, Turns(2, 0))
	assert.Equal(t, []int{1, 0}, Turns(2, 1))
	assert.Equal(t, []int{2, 0, 1}, Turns(3, 5))
	first := map[int]int{}
	for s := range 12 {
		order := Turns(3, s)
		assert.ElementsMatch(t, []int{0, 1, 2}, order, "every run steps once per step")
		first[order[0]]++
	}
	assert.Equal(t, map[int]int{0: 4, 1: 4, 2: 4}, first, "each run goes first as often as the others")
}

func TestMean(t *testing.T) {
	assert.InDelta(t, 2.5, Mean([]float64{1, 4}, func(x float64) float64 { return x }), 1e-12)
	assert.Zero(t, Mean(nil, func(x float64) float64 { return x }))
}

func TestFold(t *testing.T) {
	type run struct{ step, least, warm float64 }
	times := func(r run) (float64, float64, float64) { return r.step, r.least, r.warm }
	got := Fold([]run{{14, 11, 300}, {12, 10.5, 100}}, times)
	assert.InDelta(t, 13.0, got.StepMs, 1e-12)
	assert.InDelta(t, 10.5, got.StepMsMin, 1e-12)
	assert.InDelta(t, 100.0, got.WarmupMs, 1e-12)
	assert.Equal(t, []float64{14, 12}, got.RoundStepMs)
	assert.Equal(t, Timing{}, Fold(nil, times))
}

func TestRun(t *testing.T) {
	var ran []string
	got, err := Run(Rounds{Allocators: []string{"a", "b"}, N: 2}, func(round int, a string) (int, error) {
		ran = append(ran, a)
		return round, nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "b", "a"}, ran)
	assert.Equal(t, map[string][]int{"a": {0, 1}, "b": {0, 1}}, got)
	_, err = Run(Rounds{Allocators: []string{"a"}}, func(int, string) (int, error) { return 0, assert.AnError })
	assert.ErrorIs(t, err, assert.AnError)
}

func TestPairedRatio(t *testing.T) {
	// Round 1 runs 30% slower for both; a is 2% slower than b at every step but one outlier.
	a := [][]float64{{10.2, 20.4, 30.6}, {13.26, 26.52, 90}}
	b := [][]float64{{10, 20, 30}, {13, 26, 39}}
	got, ok := PairedRatio(a, b)
	require.True(t, ok)
	assert.InDelta(t, 1.02, got, 1e-9)

	// Even count: the mean of the middle two; steps only one side has are left out.
	got, ok = PairedRatio([][]float64{{1, 3, 5}}, [][]float64{{1, 1}})
	require.True(t, ok)
	assert.InDelta(t, 2.0, got, 1e-9)

	_, ok = PairedRatio(nil, b)
	assert.False(t, ok)
	_, ok = PairedRatio([][]float64{{1}}, [][]float64{{0}})
	assert.False(t, ok)
}
