package stitch

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// gatedDriver is nullDriver with events that complete only when the test says so.
type gatedDriver struct {
	nullDriver
	events uint64
	done   map[Event]bool
}

func (d *gatedDriver) RecordEvent(Stream) (Event, error) {
	d.events++
	return Event(d.events), nil
}
func (d *gatedDriver) EventDone(ev Event) (bool, error) { return d.done[ev], nil }

// TestPollUnsettled checks, through random allocations and frees of large blocks on three streams
// whose events complete at random (and bursts of frees and exact takes of one block), that pollUnsettled polls exactly the streams a walk over every
// block asking settled would poll (those not polled in this slow path with a cached large block
// not yet settled), and that the search of the arena's idle windows through the rooms then finds
// the window a walk over every block finds.
func TestPollUnsettled(t *testing.T) {
	const mib = 1 << 20
	d := &gatedDriver{done: map[Event]bool{}}
	e, err := New(d, WithCapacity(1024*mib), WithWarmupGrowth(1024*mib))
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(5, 9))
	type held struct {
		ptr    uintptr
		size   uint64
		stream Stream
	}
	var live []held
	polled, searched := 0, 0
	for step := range 3000 {
		switch n := rng.IntN(100); {
		case n < 10:
			for ev := range d.events + 1 {
				if rng.IntN(3) == 0 {
					d.done[Event(ev)] = true
				}
			}
		case n < 13 && len(live) > 0:
			// A burst of frees and exact takes of one block, with no slow path: the stream's
			// record of freed blocks fills with stale entries and is compacted.
			i := rng.IntN(len(live))
			for range 3 * freedSlack {
				require.NoError(t, e.Free(live[i].ptr, live[i].size))
				ptr, err := e.Alloc(live[i].size, live[i].stream)
				require.NoError(t, err)
				live[i].ptr = ptr
			}
		case n < 50 && len(live) > 0:
			i := rng.IntN(len(live))
			require.NoError(t, e.Free(live[i].ptr, live[i].size))
			live = slices.Delete(live, i, i+1)
		default:
			size, stream := uint64(1+rng.IntN(6))*mib, Stream(rng.IntN(3))
			if ptr, err := e.Alloc(size, stream); err == nil {
				live = append(live, held{ptr, size, stream})
			}
		}
		if step%5 != 0 || !e.multiStream {
			continue
		}
		var want []Stream
		for _, s := range e.clockOrder {
			c := e.clocks[s]
			if c.polled == e.slowPaths {
				continue
			}
			unsettled := false
			e.owners.walkNodes(func(n *tnode) bool {
				b := n.b
				unsettled = !b.live && b.stream == s && b.freeEpoch >= e.epoch && b.freeSeq > c.done
				return !unsettled
			})
			if unsettled {
				want = append(want, s)
			}
		}
		before := map[Stream]uint64{}
		for s, c := range e.clocks {
			before[s] = c.polled
		}
		e.pollUnsettled()
		var got []Stream
		for _, s := range e.clockOrder {
			if c := e.clocks[s]; c.polled != before[s] {
				got = append(got, s)
			}
		}
		require.Equal(t, want, got, "step %d: the streams polled", step)
		polled += len(got)
		for _, r := range []uint64{mib, 2*mib + 512, 5 * mib} {
			checkArenaIdle(t, e, r, fmt.Sprintf("step %d", step))
			searched++
		}
		require.NoError(t, e.Check(), "step %d", step)
	}
	require.Positive(t, polled, "no stream was ever polled")
	require.Positive(t, searched)
}
