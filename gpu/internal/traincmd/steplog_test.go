package traincmd

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/stitch"
)

// callingPool makes one driver call per request of a mebibyte or more, and counts them by kind.
type callingPool struct {
	bumpPool
	calls uint64
}

func (p *callingPool) Alloc(size uint64, s stitch.Stream) (uintptr, error) {
	if size >= 1<<20 {
		p.calls++
	}
	return p.bumpPool.Alloc(size, s)
}
func (p *callingPool) DriverCalls() uint64            { return p.calls }
func (p *callingPool) CallsByKind() map[string]uint64 { return map[string]uint64{"create": p.calls} }

// TestStepLogSplitsWarmupAndSteady: the first pass (two steps here) is the warm-up, the rest steady;
// calls, calls by kind and time in the allocator are per steady step, counted from the first one;
// a failed step is not recorded.
func TestStepLogSplitsWarmupAndSteady(t *testing.T) {
	p := &callingPool{}
	clock := NewAllocClock(p)
	l := NewStepLog(p, clock, 2)
	step := func(requests int, size uint64, loss float32) func() (float32, error) {
		return func() (float32, error) {
			for range requests {
				ptr, err := clock.Alloc(size, 0)
				if err != nil {
					return 0, err
				}
				if err := clock.Free(ptr, size); err != nil {
					return 0, err
				}
			}
			return loss, nil
		}
	}
	require.NoError(t, l.Step(0, step(5, 1<<20, 4))) // warm-up: 5 calls
	require.NoError(t, l.Step(1, step(3, 1<<20, 3))) // warm-up: 3 calls
	require.NoError(t, l.Step(2, step(2, 1<<20, 2))) // steady: 2 calls
	require.NoError(t, l.Step(3, step(4, 1<<10, 1))) // steady: no call
	boom := errors.New("boom")
	require.ErrorIs(t, l.Step(4, func() (float32, error) { return 0, boom }), boom)

	assert.Equal(t, []uint64{5, 3, 2, 0}, l.StepCalls)
	assert.Equal(t, uint64(8), l.WarmupCalls)
	assert.Len(t, l.Steady, 2)
	assert.Positive(t, l.FirstMs)
	assert.GreaterOrEqual(t, l.WarmupMs, l.FirstMs)
	assert.Equal(t, float32(4), l.FirstLoss)
	assert.Equal(t, float32(1), l.LastLoss)
	assert.InDelta(t, 1.0, l.CallsPerStep(), 1e-9)
	assert.Equal(t, map[string]float64{"create": 1}, l.CallsByKind())
	assert.LessOrEqual(t, l.MinMs(), l.MeanMs())
	ms, ns := l.AllocatorTime()
	assert.GreaterOrEqual(t, ms, 0.0)
	assert.Positive(t, ns, "12 calls were timed in the steady steps")
	_, calls := clock.Spent()
	assert.Equal(t, uint64(2*(5+3+2+4)), calls)
}

// TestStepLogWithoutSteadySteps: the figures of a run that never left the warm-up are zeros, not
// divisions by zero, and a pool without counts by kind gives none.
func TestStepLogWithoutSteadySteps(t *testing.T) {
	l := NewStepLog(&bumpPool{}, nil, 3)
	require.NoError(t, l.Step(0, func() (float32, error) { return 1, nil }))
	assert.Zero(t, l.MeanMs())
	assert.Zero(t, l.MinMs())
	assert.Zero(t, l.CallsPerStep())
	assert.Nil(t, l.CallsByKind())
	ms, ns := l.AllocatorTime()
	assert.Zero(t, ms)
	assert.Zero(t, ns)
}
