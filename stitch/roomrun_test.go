package stitch

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFindIdleViewsExact checks, through the workloads of TestRoomRunBoundsViewIdleRuns, that
// findIdle, with its filters (the room spans a view maps, runs that cannot beat a window that
// flushes nothing, the rooms bounded above the best cost, the loose bytes a better window in a
// room needs), finds the window a search without them
// finds: every idle run of the arena and of each view looked at, both ends of each weighed.
func TestFindIdleViewsExact(t *testing.T) {
	for _, streams := range []int{1, 3} {
		t.Run(fmt.Sprintf("streams=%d", streams), func(t *testing.T) {
			inView, flushing := 0, 0
			randomLargeWorkload(t, streams, func(e *Engine, step int) {
				const mib = 1 << 20
				for _, r := range []uint64{mib / 2, mib, 2 * mib, 3 * mib, 5 * mib, 8 * mib, 12 * mib, 20 * mib} {
					want, wantOK := exhaustiveIdle(e, r)
					got, ok := e.findIdle(r)
					require.Equal(t, wantOK, ok, "step %d: window of %d bytes", step, r)
					require.Equal(t, want, got, "step %d: window of %d bytes", step, r)
					if ok && got.v != nil {
						inView++
					}
					if ok && got.cost > 0 {
						flushing++
					}
				}
			})
			require.Positive(t, inView, "no window was ever found in a view")
			require.Positive(t, flushing, "no window ever flushed cached bytes")
		})
	}
}

// TestFindWindowExact checks, through the workloads of TestRoomRunBoundsViewIdleRuns, that
// findWindow, which gives up when the loose set holds fewer bytes than the request, finds the run
// of loose bytes in a view that a walk of every view finds, for requests up to all the loose bytes.
func TestFindWindowExact(t *testing.T) {
	const mib = 1 << 20
	near := 0 // windows found with fewer than twice their bytes loose
	randomLargeWorkload(t, 1, func(e *Engine, step int) {
		half := (e.loose.bytes/2 + alignment) &^ (alignment - 1)
		for _, r := range []uint64{mib / 2, mib, 3 * mib, 8 * mib, half, e.loose.bytes &^ (alignment - 1), e.loose.bytes + alignment} {
			if r == 0 {
				continue
			}
			wv, woff := e.scanWindows(r)
			v, off := e.findWindow(r)
			require.Equal(t, wv, v, "step %d: window of %d bytes, %d loose", step, r, e.loose.bytes)
			require.Equal(t, woff, off, "step %d: window of %d bytes", step, r)
			if v != nil && e.loose.bytes < 2*r {
				near++
			}
		}
	})
	require.Positive(t, near, "no window was found with fewer than twice its bytes loose")
}

// exhaustiveIdle is findIdle without its filters: the arena's best window, else the views'.
func exhaustiveIdle(e *Engine, r uint64) (idleWindow, bool) {
	best, found := e.arenaIdle(r, false)
	if found {
		return best, true
	}
	for v, seen := e.viewNewest, 0; v != nil && seen < maxViewScan; v, seen = v.older, seen+1 {
		e.viewIdleRuns(v, r, func(start, end uint64) {
			for _, off := range [2]uint64{start, end - r} {
				var cost uint64
				window(v, off, r, func(p span) bool { cost += e.cachedIn(p.start, p.end); return true })
				if w := (idleWindow{v: v, off: off, cost: cost, run: end - start, addr: physAt(v, off)}); !found || w.better(best) {
					best, found = w, true
				}
			}
		})
	}
	return best, found
}

// TestRoomRunBoundsViewIdleRuns checks, through random allocations and frees of large blocks under
// a capacity that makes the engine stitch, on one stream and on three whose events complete at
// random, that roomRun (findIdle's filter of the views) never passes over a view that holds an
// idle run of the requested size (a walk of every block its pieces meet), and that it does pass
// over views that hold none.
func TestRoomRunBoundsViewIdleRuns(t *testing.T) {
	for _, streams := range []int{1, 3} {
		t.Run(fmt.Sprintf("streams=%d", streams), func(t *testing.T) { testRoomRunBound(t, streams) })
	}
}

func testRoomRunBound(t *testing.T, streams int) {
	const mib = 1 << 20
	held0, pruned := 0, 0
	randomLargeWorkload(t, streams, func(e *Engine, step int) {
		for _, v := range e.views {
			for _, r := range []uint64{mib / 2, mib, 3 * mib, 8 * mib, v.cap} {
				holds := false
				e.viewIdleRuns(v, r, func(start, end uint64) { holds = true })
				if e.roomRun(v, r) {
					if holds {
						held0++
					}
					continue
				}
				require.False(t, holds, "step %d: a view holding an idle run of %d bytes passed over", step, r)
				pruned++
			}
		}
	})
	require.Positive(t, held0, "no view ever held an idle run")
	require.Positive(t, pruned, "no view was ever passed over")
}

// randomLargeWorkload runs random allocations and frees of large blocks under a capacity that
// makes the engine stitch, on streams streams whose events complete at random, and calls look
// every third step with the streams polled and the room index up to date, as findIdle has them.
func randomLargeWorkload(t *testing.T, streams int, look func(e *Engine, step int)) {
	const mib = 1 << 20
	d := &gatedDriver{done: map[Event]bool{}}
	e, err := New(d, WithCapacity(96*mib), WithHandleSize(2*mib))
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(uint64(streams), 29))
	type held struct {
		ptr    uintptr
		size   uint64
		stream Stream
	}
	var live []held
	for step := range 3000 {
		switch n := rng.IntN(100); {
		case n < 8:
			for ev := range d.events + 1 {
				if rng.IntN(2) == 0 {
					d.done[Event(ev)] = true
				}
			}
		case n < 50 && len(live) > 0:
			i := rng.IntN(len(live))
			require.NoError(t, e.Free(live[i].ptr, live[i].size))
			live = slices.Delete(live, i, i+1)
		default:
			size := uint64(1+rng.IntN(10))*mib - uint64(rng.IntN(4))*(mib/2)
			stream := Stream(rng.IntN(streams))
			if ptr, err := e.Alloc(size, stream); err == nil {
				live = append(live, held{ptr, size, stream})
			}
		}
		if step%3 != 0 {
			continue
		}
		if e.multiStream {
			e.pollUnsettled()
		}
		e.syncRoom()
		look(e, step)
		if step%300 == 0 {
			require.NoError(t, e.Check(), "step %d", step)
		}
	}
	require.NoError(t, e.Check())
}
