package stitch_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

// callsSince is how many calls of each kind d has had since before.
func callsSince(d *sim.Driver, before [stitch.NumCallKinds]uint64) map[stitch.CallKind]uint64 {
	now := d.Calls()
	delta := map[stitch.CallKind]uint64{}
	for k := range now {
		if now[k] != before[k] {
			delta[stitch.CallKind(k)] = now[k] - before[k]
		}
	}
	return delta
}

// TestFollowBlocksStitchCostsPerBlock: with handles that follow the blocks, each growth is one
// handle, so a stitch over two freed blocks maps two handles, where handles of one chunk map one
// per 2 MiB.
func TestFollowBlocksStitchCostsPerBlock(t *testing.T) {
	for _, follow := range []bool{false, true} {
		t.Run(fmt.Sprintf("follow=%v", follow), func(t *testing.T) {
			h := newHarness(t, []sim.Option{sim.WithCapacity(1 << 30)}, faultOptions(follow)...)
			before := h.d.Calls()
			x, err := h.alloc(100*MiB, 0)
			require.NoError(t, err)
			wantCreates := uint64(100 * MiB / g)
			if follow {
				wantCreates = 1
			}
			require.Equal(t, wantCreates, callsSince(h.d, before)[stitch.CallCreate], "handles created for one 100 MiB block")
			_, err = h.alloc(50*MiB, 0)
			require.NoError(t, err)
			z, err := h.alloc(100*MiB, 0)
			require.NoError(t, err)
			require.NoError(t, h.free(x))
			require.NoError(t, h.free(z))
			before = h.d.Calls()
			_, err = h.alloc(200*MiB, 0)
			require.NoError(t, err)
			calls := callsSince(h.d, before)
			wantMaps := uint64(200 * MiB / g)
			if follow {
				wantMaps = 2
			}
			require.Equal(t, wantMaps, calls[stitch.CallMap], "maps of the stitch over the two freed blocks")
			require.Zero(t, calls[stitch.CallCreate], "the stitch needs no new memory")
			h.check("after the stitch")
			h.closeAndCheckLeaks()
		})
	}
}

// TestFollowBlocksRecut: a block carved from a freed larger one re-creates that handle as two, at
// the chunk boundary where the block ends, so that the rest is a handle of its own: a second block
// takes it with no driver call, and once both are freed a stitch over them maps just the two.
func TestFollowBlocksRecut(t *testing.T) {
	h := newHarness(t, []sim.Option{sim.WithCapacity(1 << 30)}, stitch.WithHandlesFollowBlocks())
	x, err := h.alloc(100*MiB, 0)
	require.NoError(t, err)
	require.NoError(t, h.free(x))
	before := h.d.Calls()
	b, err := h.alloc(60*MiB, 0)
	require.NoError(t, err)
	calls := callsSince(h.d, before)
	require.Equal(t, map[stitch.CallKind]uint64{stitch.CallCreate: 2, stitch.CallUnmap: 1, stitch.CallMap: 2,
		stitch.CallSetAccess: 1, stitch.CallRelease: 1, stitch.CallSynchronize: 1}, calls,
		"the 100 MiB handle re-created as 60 + 40 MiB, after a wait for the device")
	h.check("after the re-cut")
	before = h.d.Calls()
	c, err := h.alloc(40*MiB, 0)
	require.NoError(t, err)
	require.Empty(t, callsSince(h.d, before), "the rest of the handle is carved with no driver call")
	require.Equal(t, uint64(100*MiB), h.e.Stats().ReservedBytes)
	require.NoError(t, h.free(b))
	require.NoError(t, h.free(c))
	_, err = h.alloc(50*MiB, 0) // keeps the two freed handles from coalescing into one carve
	require.NoError(t, err)
	h.check("end")
	h.closeAndCheckLeaks()
}

// TestFollowBlocksRecutFaults: a re-cut fails at each of its driver calls, alone and together with
// the first call of its rollback. The allocation succeeds or fails with the injected error, the
// engine stays consistent and accounts for every driver object, and Close gives everything back.
func TestFollowBlocksRecutFaults(t *testing.T) {
	kinds := []stitch.CallKind{stitch.CallCreate, stitch.CallUnmap, stitch.CallMap, stitch.CallSetAccess, stitch.CallRelease}
	rollbacks := []stitch.CallKind{stitch.NumCallKinds, stitch.CallUnmap, stitch.CallMap, stitch.CallSetAccess, stitch.CallRelease}
	for _, kind := range kinds {
		for _, n := range []int{1, 2} {
			for _, rb := range rollbacks {
				t.Run(fmt.Sprintf("%s#%d then %s", kind, n, rb), func(t *testing.T) {
					h := newHarness(t, []sim.Option{sim.WithCapacity(1 << 30)}, stitch.WithHandlesFollowBlocks())
					x, err := h.alloc(100*MiB, 0)
					require.NoError(t, err)
					require.NoError(t, h.free(x))
					h.allocsSurviveFaults(kind, n, rb, []uint64{60 * MiB, 40 * MiB, 30 * MiB})
				})
			}
		}
	}
}

// TestFollowBlocksEndChunk: a block that ends inside a chunk gets that chunk as a handle of its
// own, so that the block after it, which starts in the same chunk, pins only that chunk: once the
// first block is freed, its whole chunks are one handle again free to stitch.
func TestFollowBlocksEndChunk(t *testing.T) {
	h := newHarness(t, []sim.Option{sim.WithCapacity(1 << 30)}, stitch.WithHandlesFollowBlocks())
	x, err := h.alloc(100*MiB, 0)
	require.NoError(t, err)
	require.NoError(t, h.free(x))
	before := h.d.Calls()
	b, err := h.alloc(61*MiB, 0) // chunks 0-29 whole, chunk 30 half
	require.NoError(t, err)
	calls := callsSince(h.d, before)
	require.Equal(t, uint64(4), calls[stitch.CallCreate], "100 MiB re-created as 60 + 2 + 38 MiB (two re-cuts)")
	require.Equal(t, uint64(2), calls[stitch.CallRelease])
	before = h.d.Calls()
	_, err = h.alloc(39*MiB, 0) // the rest: the second half of chunk 30 and chunks 31-49
	require.NoError(t, err)
	require.Empty(t, callsSince(h.d, before), "the rest is carved with no driver call")
	require.NoError(t, h.free(b))
	// The 60 MiB of b's whole chunks are one handle: a stitch of 80 MiB over them, the half chunk
	// after them and new memory maps three handles at most.
	before = h.d.Calls()
	_, err = h.alloc(80*MiB, 0)
	require.NoError(t, err)
	calls = callsSince(h.d, before)
	require.Equal(t, uint64(1), calls[stitch.CallReserve], "one view")
	require.LessOrEqual(t, calls[stitch.CallMap], uint64(2+1), "b's handle, its end chunk's and the new one")
	h.check("end")
	h.closeAndCheckLeaks()
}

// stitchOverTwoFreed makes a view over two freed 100 MiB handles (a live 50 MiB block between
// them) and frees its 200 MiB block: the view is cached, its block too.
func stitchOverTwoFreed(t *testing.T, h *harness) {
	t.Helper()
	x, err := h.alloc(100*MiB, 0)
	require.NoError(t, err)
	_, err = h.alloc(50*MiB, 0)
	require.NoError(t, err)
	z, err := h.alloc(100*MiB, 0)
	require.NoError(t, err)
	require.NoError(t, h.free(x))
	require.NoError(t, h.free(z))
	s, err := h.alloc(200*MiB, 0)
	require.NoError(t, err)
	require.Equal(t, 1, h.e.Stats().StitchedBlocks, "one view over the two handles")
	require.NoError(t, h.free(s))
}

// TestFollowBlocksRecutKeepsIdleViews: with iterations marked, a block carved from a handle that
// an idle view maps re-cuts the handle under the view too (an Unmap, a Map per new handle and a
// SetAccess there), so the view survives: once the block is freed, a request of the view's size
// takes the view again with no driver call, where releasing the view would have cost a new
// stitch. Unmarked, the view is released (its unmap and free instead of the remap).
func TestFollowBlocksRecutKeepsIdleViews(t *testing.T) {
	for _, marked := range []bool{true, false} {
		for _, capacity := range []uint64{1 << 30, 300 * MiB} { // roomy, and too tight for both handles at once
			t.Run(fmt.Sprintf("marked=%v/capacity=%dMiB", marked, capacity/MiB), func(t *testing.T) {
				h := newHarness(t, []sim.Option{sim.WithCapacity(capacity)}, stitch.WithHandlesFollowBlocks())
				if marked {
					h.e.MarkIteration()
				}
				stitchOverTwoFreed(t, h)
				before := h.d.Calls()
				b, err := h.alloc(60*MiB, 0) // flushes the cached 200 MiB block: the view is idle
				require.NoError(t, err)
				calls := callsSince(h.d, before)
				want := map[stitch.CallKind]uint64{stitch.CallCreate: 2, stitch.CallRelease: 1, stitch.CallUnmap: 2,
					stitch.CallMap: 4, stitch.CallSetAccess: 2, stitch.CallSynchronize: 1}
				views := 1
				if !marked {
					want[stitch.CallMap], want[stitch.CallSetAccess], want[stitch.CallFree] = 2, 1, 1
					views = 0
				}
				require.Equal(t, want, calls, "one handle re-cut in the arena (and under the view, marked), after a wait for the device")
				require.Equal(t, views, h.e.Stats().StitchedBlocks, "views kept")
				h.check("after the re-cut")
				if !marked {
					h.closeAndCheckLeaks()
					return
				}
				require.NoError(t, h.free(b))
				before = h.d.Calls()
				_, err = h.alloc(200*MiB, 0)
				require.NoError(t, err)
				require.Empty(t, callsSince(h.d, before), "the kept view serves the request again")
				h.check("end")
				h.closeAndCheckLeaks()
			})
		}
	}
}

// TestFollowBlocksRecutUnderViewFaults: a re-cut under an idle view (iterations marked) fails at each of its driver
// calls (the first to third of a kind), alone and with a call of the rollback or of the view's
// release failing too, with room for the new handles beside the old one and without. The
// allocation succeeds or fails with the injected error, the engine stays consistent and accounts
// for every driver object, and EmptyCache and Close give everything back.
func TestFollowBlocksRecutUnderViewFaults(t *testing.T) {
	kinds := []stitch.CallKind{stitch.CallCreate, stitch.CallUnmap, stitch.CallMap, stitch.CallSetAccess,
		stitch.CallRelease, stitch.CallFree}
	seconds := []stitch.CallKind{stitch.NumCallKinds, stitch.CallUnmap, stitch.CallMap, stitch.CallSetAccess,
		stitch.CallRelease, stitch.CallFree}
	for _, capacity := range []uint64{1 << 30, 300 * MiB} {
		for _, kind := range kinds {
			for _, n := range []int{1, 2, 3} {
				for _, second := range seconds {
					t.Run(fmt.Sprintf("capacity=%dMiB/%s#%d then %s", capacity/MiB, kind, n, second), func(t *testing.T) {
						h := newHarness(t, []sim.Option{sim.WithCapacity(capacity)}, stitch.WithHandlesFollowBlocks())
						h.e.MarkIteration()
						stitchOverTwoFreed(t, h)
						h.allocsSurviveFaults(kind, n, second, []uint64{60 * MiB, 30 * MiB, 100 * MiB})
					})
				}
			}
		}
	}
}

// TestFollowBlocksRecutWaitsForTheDevice: unmapping and releasing a handle is not ordered with the
// device's work, so a re-cut after a free first synchronizes; a second re-cut with no free since
// needs no second wait.
func TestFollowBlocksRecutWaitsForTheDevice(t *testing.T) {
	h := newHarness(t, []sim.Option{sim.WithCapacity(1 << 30)}, stitch.WithHandlesFollowBlocks())
	x, err := h.alloc(100*MiB, 0)
	require.NoError(t, err)
	before := h.d.Calls()
	_, err = h.alloc(100*MiB, 0)
	require.NoError(t, err)
	require.Zero(t, callsSince(h.d, before)[stitch.CallSynchronize], "a growth does not wait")
	require.NoError(t, h.free(x))
	for i, want := range []uint64{1, 0} {
		before = h.d.Calls()
		_, err = h.alloc(30*MiB, 0)
		require.NoError(t, err)
		calls := callsSince(h.d, before)
		require.Equal(t, uint64(2), calls[stitch.CallCreate], "re-cut %d", i)
		require.Equal(t, want, calls[stitch.CallSynchronize], "re-cut %d: waits for the device after a free only", i)
	}
	h.check("end")
	h.closeAndCheckLeaks()
}

// allocsSurviveFaults makes the n-th next call of kind fail and, unless second is NumCallKinds,
// the call of kind second after it too (a rollback's first call of that kind); then each request
// of sizes succeeds or fails with the injected error, leaving the engine consistent and knowing
// every physical and virtual byte the driver holds; with the faults cleared, EmptyCache and Close
// give everything back.
func (h *harness) allocsSurviveFaults(kind stitch.CallKind, n int, second stitch.CallKind, sizes []uint64) {
	t := h.t
	h.d.FailNth(kind, int(h.d.Calls()[kind])+n, nil)
	if second != stitch.NumCallKinds {
		h.d.FailNth(second, int(h.d.Calls()[second])+n+1, nil)
	}
	for i, size := range sizes {
		if _, err := h.alloc(size, 0); err != nil {
			require.ErrorIs(t, err, sim.ErrInjected, "alloc %d", i)
		}
		h.check(fmt.Sprintf("alloc %d", i))
		st, live := h.e.Stats(), h.d.Live()
		require.Equal(t, live.PhysicalBytes, st.ReservedBytes, "alloc %d: physical memory the engine does not know of", i)
		require.Equal(t, live.VirtualBytes, st.VirtualBytes, "alloc %d: virtual ranges the engine does not know of", i)
	}
	h.d.ClearFaults()
	require.NoError(t, h.e.EmptyCache())
	h.check("after EmptyCache")
	h.closeAndCheckLeaks()
}
