package host

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/stitch"
)

func eventDone(t *testing.T, d *Driver, e stitch.Event) bool {
	t.Helper()
	done, err := d.EventDone(e)
	require.NoError(t, err)
	return done
}

// TestManualEvents: with WithManualEvents an event completes only when the test says so, with
// every earlier event of its stream, or at Synchronize.
func TestManualEvents(t *testing.T) {
	d := newTestDriver(t, WithManualEvents())
	a1, err := d.RecordEvent(1)
	require.NoError(t, err)
	b1, err := d.RecordEvent(2)
	require.NoError(t, err)
	a2, err := d.RecordEvent(1)
	require.NoError(t, err)
	a3, err := d.RecordEvent(1)
	require.NoError(t, err)
	for range 10 {
		require.False(t, eventDone(t, d, a1))
	}
	require.NoError(t, d.CompleteEvent(a2))
	assert.True(t, eventDone(t, d, a1), "an earlier event of the stream completes with it")
	assert.True(t, eventDone(t, d, a2))
	assert.False(t, eventDone(t, d, a3))
	assert.False(t, eventDone(t, d, b1), "another stream's does not")
	require.NoError(t, d.Synchronize())
	assert.True(t, eventDone(t, d, a3))
	assert.True(t, eventDone(t, d, b1))
	assert.ErrorIs(t, d.CompleteEvent(99), ErrUnknownEvent)
}

// TestEventLatency: an event completes once its latency has passed; Synchronize waits for it.
func TestEventLatency(t *testing.T) {
	const latency = 40 * time.Millisecond
	d := newTestDriver(t, WithEventLatency(latency))
	start := time.Now()
	e, err := d.RecordEvent(1)
	require.NoError(t, err)
	assert.False(t, eventDone(t, d, e))
	for !eventDone(t, d, e) {
		time.Sleep(time.Millisecond)
	}
	assert.GreaterOrEqual(t, time.Since(start), latency)

	start = time.Now()
	e, err = d.RecordEvent(1)
	require.NoError(t, err)
	require.NoError(t, d.Synchronize())
	assert.GreaterOrEqual(t, time.Since(start), latency, "Synchronize waits for queued work")
	assert.True(t, eventDone(t, d, e))
}
