package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/baseline"
	"github.com/gmlake/gmlake/internal/units"
	"github.com/gmlake/gmlake/stitch"
	"github.com/gmlake/gmlake/trace"
)

func TestGMLakeMinCapacityBetweenActiveAndReserved(t *testing.T) {
	p := build(t, "a 0 12582912 0", "f 0", "a 1 14680064 0", "a 2 100 0", "f 2", "f 1")
	rep, err := Measure(p, spec(t, "gmlake"), MeasureOptions{MinCapacity: true})
	require.NoError(t, err)
	require.NotNil(t, rep.MinCapacity)
	assert.GreaterOrEqual(t, *rep.MinCapacity, rep.PeakActive)
	assert.LessOrEqual(t, *rep.MinCapacity, units.RoundUp(rep.PeakReserved, 2*units.MiB))
	assert.Zero(t, *rep.MinCapacity%(2*units.MiB))
}

// The replay marks each iteration before its first request, in the repeated trace too.
func TestReplayMarksIterations(t *testing.T) {
	p := build(t, "a 0 100 0", "i 0", "a 1 100 0", "f 1", "i 1", "a 2 100 0", "f 2")
	m := &markingDirect{Direct: baseline.NewDirect(baseline.NewSimDevice())}
	_, err := Replay(p, m, 0)
	require.NoError(t, err)
	assert.Equal(t, []uint64{1, 3}, m.callsAtMark, "marks after the setup's call and after iteration 0's two")

	rep, err := trace.RepeatIterations(p.Trace, 2)
	require.NoError(t, err)
	rp, err := Prepare("repeated", rep.Trace)
	require.NoError(t, err)
	m = &markingDirect{Direct: baseline.NewDirect(baseline.NewSimDevice())}
	_, err = Replay(rp, m, 0)
	require.NoError(t, err)
	assert.Equal(t, []uint64{1, 3, 5, 7}, m.callsAtMark)
}

// markingDirect records the driver calls made before each mark.
type markingDirect struct {
	*baseline.Direct
	callsAtMark []uint64
}

func (m *markingDirect) MarkIteration() { m.callsAtMark = append(m.callsAtMark, m.DriverCalls()) }

func TestGMLakeMarkedAndUnmarked(t *testing.T) {
	p := build(t, "i 0", "a 0 12582912 0", "f 0", "i 1", "a 1 12582912 0", "f 1")
	for _, name := range []string{"gmlake", "gmlake-unmarked"} {
		t.Run(name, func(t *testing.T) {
			s := spec(t, name)
			a, err := s.New(0)
			require.NoError(t, err)
			assert.Equal(t, name, a.Name())
			_, ok := a.(baseline.IterationMarker)
			assert.True(t, ok)
			require.NoError(t, a.Close())
			rep, err := Measure(p, s, MeasureOptions{Repeat: 2})
			require.NoError(t, err)
			assert.Equal(t, name, rep.Allocator)
			assert.Equal(t, 12*units.MiB, rep.PeakActive)
		})
	}
}

// TestSlackSpec: gmlake with growth slack is a spec of its own, named after the fraction, whose
// growths leave headroom (more reserved than the default engine on a growing script); other
// allocators and fractions outside [0, 1) are refused.
func TestSlackSpec(t *testing.T) {
	// Requests of 2 GiB, more than the first iteration's bytes ahead (1/128 of the simulated
	// device): the default engine grows each one's own bytes.
	p := build(t, "i 0", "a 0 2147483648 0", "a 1 2147483648 0", "a 2 2147483648 0", "f 0", "f 1", "f 2")
	plain, err := Measure(p, spec(t, "gmlake"), MeasureOptions{})
	require.NoError(t, err)
	s, err := SlackSpec("gmlake", 0.5)
	require.NoError(t, err)
	assert.Equal(t, "gmlake/slack=0.5", s.Name)
	slack, err := Measure(p, s, MeasureOptions{})
	require.NoError(t, err)
	assert.Equal(t, "gmlake/slack=0.5", slack.Allocator)
	assert.Equal(t, plain.PeakActive, slack.PeakActive)
	assert.Greater(t, slack.PeakReserved, plain.PeakReserved)

	_, err = SlackSpec("caching", 0.1)
	assert.ErrorIs(t, err, baseline.ErrUnknown)
	_, err = SlackSpec("gmlake", 1.5)
	assert.ErrorIs(t, err, stitch.ErrBadOption)
}
