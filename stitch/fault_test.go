package stitch_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

// faultScript uses every kind of driver call: growth, small pages, stitches (several maps each),
// view release beyond a budget of one, a second stream (events), EmptyCache and Reset.
var faultScript = []op{
	{kind: opAlloc, size: 3 * MiB},
	{kind: opAlloc, size: 5 * MiB},
	{kind: opAlloc, size: 100},
	{kind: opAlloc, size: 4 * MiB},
	{kind: opAlloc, size: 6 * MiB, stream: 1},
	{kind: opAlloc, size: 3 * MiB},
	{kind: opFree, pick: 0},
	{kind: opFree, pick: 2}, // the 4 MiB block: two free ranges apart
	{kind: opAlloc, size: 9 * MiB},
	{kind: opAlloc, size: 2 * MiB},
	{kind: opFree, pick: 1},
	{kind: opFree, pick: 3},
	{kind: opAlloc, size: 11 * MiB},
	{kind: opFree, pick: 0},
	{kind: opAlloc, size: 7*MiB + 3, stream: 1},
	{kind: opEmptyCache},
	{kind: opAlloc, size: 15 * MiB},
	{kind: opFree, pick: 1},
	{kind: opAlloc, size: 700 * KiB},
	{kind: opReset},
	{kind: opAlloc, size: 20 * MiB},
}

// TestDriverFaults makes the n-th call of each kind fail, for several n, and requires after every
// op that the engine is consistent and accounts for every driver object, that the failed call
// changed nothing the engine does not track, that the rest of the script then succeeds, and that
// Close leaves the driver holding nothing.
func TestDriverFaults(t *testing.T) {
	kinds := []stitch.CallKind{stitch.CallCreate, stitch.CallRelease, stitch.CallReserve, stitch.CallFree,
		stitch.CallMap, stitch.CallUnmap, stitch.CallSetAccess, stitch.CallRecordEvent, stitch.CallEventDone,
		stitch.CallDestroyEvent, stitch.CallSynchronize}
	for _, kind := range kinds {
		for _, n := range []int{1, 2, 3, 5, 8} {
			for _, big := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s#%d/big-handles=%v", kind, n, big), func(t *testing.T) {
					h := newHarness(t, []sim.Option{sim.WithCapacity(64 * MiB), sim.WithEventDelay(1)},
						faultOptions(big, stitch.WithStitchBudget(1, 0))...)
					h.d.FailNth(kind, n+countAtNew(kind), nil)
					failed := false
					for i, o := range faultScript {
						ctx := fmt.Sprintf("op %d: %v", i, o)
						var err error
						switch o.kind {
						case opAlloc:
							_, err = h.alloc(o.size, o.stream)
						case opFree:
							if len(h.ptrs) > 0 {
								err = h.free(h.ptrs[o.pick%len(h.ptrs)])
							}
						case opEmptyCache:
							err = h.e.EmptyCache()
						case opReset:
							err = h.e.Reset()
							if err == nil {
								h.forgetAll()
							}
						}
						if err != nil {
							require.ErrorIs(t, err, sim.ErrInjected, ctx)
							require.False(t, failed, "%s: a second failure: %v", ctx, err)
							failed = true
							if o.kind == opReset {
								h.forgetAll() // Reset frees every block before it releases memory
							}
						}
						h.check(ctx)
						st, live := h.e.Stats(), h.d.Live()
						require.Equal(t, live.PhysicalBytes, st.ReservedBytes, "%s: physical memory the engine does not know of", ctx)
						require.Equal(t, live.VirtualBytes, st.VirtualBytes, "%s: virtual ranges the engine does not know of", ctx)
					}
					h.closeAndCheckLeaks()
					if n <= 2 {
						require.GreaterOrEqual(t, h.d.Calls()[kind], uint64(n+countAtNew(kind)), "the fault never fired")
					}
				})
			}
		}
	}
}

// faultOptions adds handles of four chunks (stitch.WithHandleSize) to opts when big is set: the
// fault tests run with the handles the engine sizes (one chunk at these capacities) and with
// handles that several blocks share and whose tails a stitch maps.
func faultOptions(big bool, opts ...stitch.Option) []stitch.Option {
	if big {
		opts = append(opts, stitch.WithHandleSize(4*g))
	}
	return opts
}

// TestDoubleDriverFaults: a call fails and so does the first call of its rollback. What cannot be
// given back is kept (its slots and chunks stay blocked), the engine stays consistent and usable,
// and EmptyCache or Close gives it back later.
func TestDoubleDriverFaults(t *testing.T) {
	pairs := []struct{ first, rollback stitch.CallKind }{
		{stitch.CallSetAccess, stitch.CallUnmap},
		{stitch.CallMap, stitch.CallUnmap},
		{stitch.CallMap, stitch.CallFree},
		{stitch.CallSetAccess, stitch.CallRelease},
		{stitch.CallMap, stitch.CallRelease},
	}
	for _, p := range pairs {
		for _, n := range []int{1, 2, 4, 7} {
			for _, big := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s#%d then %s/big-handles=%v", p.first, n, p.rollback, big), func(t *testing.T) {
					h := newHarness(t, []sim.Option{sim.WithCapacity(64 * MiB)}, faultOptions(big, stitch.WithStitchBudget(1, 0))...)
					h.d.FailNth(p.first, n, nil)
					h.d.FailNth(p.rollback, 1+int(h.d.Calls()[p.rollback]), nil)
					for i, o := range faultScript {
						ctx := fmt.Sprintf("op %d: %v", i, o)
						var err error
						switch o.kind {
						case opAlloc:
							_, err = h.alloc(o.size, o.stream)
						case opFree:
							if len(h.ptrs) > 0 {
								err = h.free(h.ptrs[o.pick%len(h.ptrs)])
							}
						case opEmptyCache:
							err = h.e.EmptyCache()
						case opReset:
							err = h.e.Reset()
							h.forgetAll()
						}
						if err != nil {
							require.ErrorIs(t, err, sim.ErrInjected, ctx)
						}
						h.check(ctx)
					}
					h.closeAndCheckLeaks()
				})
			}
		}
	}
}

// countAtNew is how many calls of kind stitch.New makes itself (it asks MemInfo and reserves the arena).
func countAtNew(kind stitch.CallKind) int {
	if kind == stitch.CallReserve {
		return 1
	}
	return 0
}

// TestFaultAtNew: New fails cleanly when the arena cannot be reserved.
func TestFaultAtNew(t *testing.T) {
	d := sim.New(sim.WithFault(stitch.CallReserve, 1, nil))
	_, err := stitch.New(d)
	require.ErrorIs(t, err, sim.ErrInjected)
	require.Equal(t, sim.Live{}, d.Live())
}

// TestCloseRetriesFailedWait: Close waits for the device before it gives memory back; when that
// wait fails, it waits once more and gives everything back, rather than reporting the failure and
// releasing memory the device may still be using.
func TestCloseRetriesFailedWait(t *testing.T) {
	for _, big := range []bool{false, true} {
		t.Run(fmt.Sprintf("big-handles=%v", big), func(t *testing.T) {
			h := newHarness(t, []sim.Option{sim.WithCapacity(64 * MiB)}, faultOptions(big)...)
			for _, size := range []uint64{6 * MiB, 300 * KiB, 11*MiB + 5} {
				ptr, err := h.alloc(size, 0)
				require.NoError(t, err)
				require.NoError(t, h.free(ptr))
			}
			_, err := h.alloc(3*MiB, 0)
			require.NoError(t, err)
			waits := h.d.Calls()[stitch.CallSynchronize]
			h.d.FailNth(stitch.CallSynchronize, int(waits)+1, nil)
			require.NoError(t, h.e.Close(), "the failed wait is retried")
			require.Greater(t, h.d.Calls()[stitch.CallSynchronize], waits+1, "Close waited again")
			require.Equal(t, sim.Live{}, h.d.Live(), "driver objects left after Close")
		})
	}
}
