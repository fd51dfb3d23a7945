package stitch_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

// outcomeOf allocates size and returns the one outcome the request counted.
func outcomeOf(t *testing.T, h *harness, size uint64) (uintptr, stitch.Outcome) {
	t.Helper()
	before := h.e.Stats().Outcomes
	ptr, err := h.alloc(size, 0)
	require.NoError(t, err)
	after := h.e.Stats().Outcomes
	got := stitch.Outcome(-1)
	for o := range stitch.NumOutcomes {
		if after.Of(o) != before.Of(o) {
			require.Equal(t, before.Of(o)+1, after.Of(o))
			require.Equal(t, stitch.Outcome(-1), got, "two outcomes counted")
			got = o
		}
	}
	h.check("after alloc")
	return ptr, got
}

func TestOutcomes(t *testing.T) {
	t.Run("exact match reuses the block with no driver call", func(t *testing.T) {
		h := newHarness(t, nil)
		p, out := outcomeOf(t, h, 3*MiB)
		assert.Equal(t, stitch.OutcomeNewChunks, out)
		require.NoError(t, h.free(p))
		calls := h.d.TotalCalls()
		q, out := outcomeOf(t, h, 3*MiB-100) // same rounded size
		assert.Equal(t, stitch.OutcomeExact, out)
		assert.Equal(t, p, q)
		assert.Equal(t, calls, h.d.TotalCalls())
		h.closeAndCheckLeaks()
	})
	t.Run("split of a larger free block", func(t *testing.T) {
		h := newHarness(t, nil)
		p, _ := outcomeOf(t, h, 8*MiB)
		require.NoError(t, h.free(p))
		calls := h.d.TotalCalls()
		_, out := outcomeOf(t, h, 3*MiB)
		assert.Equal(t, stitch.OutcomeSplit, out)
		_, out = outcomeOf(t, h, 5*MiB)
		assert.Equal(t, stitch.OutcomeSplit, out, "the rest of the block")
		assert.Equal(t, calls, h.d.TotalCalls())
		assert.Equal(t, uint64(8*MiB), h.e.Stats().ReservedBytes)
		h.closeAndCheckLeaks()
	})
	t.Run("stitch of free blocks that are not adjacent", func(t *testing.T) {
		h := newHarness(t, []sim.Option{sim.WithCapacity(16 * MiB)})
		var ps []uintptr
		for range 4 {
			p, _ := outcomeOf(t, h, 4*MiB)
			ps = append(ps, p)
		}
		require.NoError(t, h.free(ps[0]))
		require.NoError(t, h.free(ps[2]))
		creates := h.d.Calls()[stitch.CallCreate]
		_, out := outcomeOf(t, h, 8*MiB)
		assert.Equal(t, stitch.OutcomeStitch, out)
		assert.Equal(t, creates, h.d.Calls()[stitch.CallCreate], "no new memory")
		assert.Equal(t, 1, h.e.Stats().StitchedBlocks)
		h.closeAndCheckLeaks()
	})
	t.Run("new chunks are combined with free memory", func(t *testing.T) {
		h := newHarness(t, nil)
		a, _ := outcomeOf(t, h, 4*MiB)
		_, _ = outcomeOf(t, h, 4*MiB)
		require.NoError(t, h.free(a))
		_, out := outcomeOf(t, h, 6*MiB)
		assert.Equal(t, stitch.OutcomeNewChunks, out)
		assert.Equal(t, uint64(10*MiB), h.e.Stats().ReservedBytes, "4 MiB free + one new chunk, not 6 MiB new")
		h.closeAndCheckLeaks()
	})
	t.Run("the tail of a block's last chunk serves the next block", func(t *testing.T) {
		h := newHarness(t, nil)
		_, _ = outcomeOf(t, h, 3*MiB)
		_, out := outcomeOf(t, h, 1*MiB)
		assert.Equal(t, stitch.OutcomeSplit, out)
		assert.Equal(t, uint64(4*MiB), h.e.Stats().ReservedBytes)
		h.closeAndCheckLeaks()
	})
	t.Run("a stitched block is found again by exact size", func(t *testing.T) {
		h := newHarness(t, []sim.Option{sim.WithCapacity(16 * MiB)})
		var ps []uintptr
		for range 4 {
			p, _ := outcomeOf(t, h, 4*MiB)
			ps = append(ps, p)
		}
		require.NoError(t, h.free(ps[1]))
		require.NoError(t, h.free(ps[3]))
		s, out := outcomeOf(t, h, 8*MiB)
		require.Equal(t, stitch.OutcomeStitch, out)
		require.NoError(t, h.free(s))
		calls := h.d.TotalCalls()
		s2, out := outcomeOf(t, h, 8*MiB)
		assert.Equal(t, stitch.OutcomeExact, out)
		assert.Equal(t, s, s2)
		assert.Equal(t, calls, h.d.TotalCalls())
		h.closeAndCheckLeaks()
	})
	t.Run("small requests share a page", func(t *testing.T) {
		h := newHarness(t, nil)
		_, out := outcomeOf(t, h, 100)
		assert.Equal(t, stitch.OutcomeNewChunks, out)
		for _, size := range []uint64{1000, 4096, 100 * KiB, 200 * KiB} {
			_, out = outcomeOf(t, h, size)
			assert.Equal(t, stitch.OutcomeSplit, out)
		}
		st := h.e.Stats()
		assert.Equal(t, 1, st.SmallPages)
		assert.Equal(t, uint64(g), st.ReservedBytes)
		h.closeAndCheckLeaks()
	})
}

func TestGrowthSlack(t *testing.T) {
	h := newHarness(t, []sim.Option{sim.WithCapacity(1024 * MiB)}, stitch.WithGrowthSlack(0.25))
	_, err := h.alloc(400*MiB, 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(400*MiB), h.e.Stats().ReservedBytes, "the first growth creates no headroom")
	_, err = h.alloc(400*MiB, 0)
	require.NoError(t, err)
	h.check("after two growths")
	assert.Equal(t, uint64(900*MiB), h.e.Stats().ReservedBytes, "400 MiB, then 400 MiB + 25% of 400 MiB")
	_, err = h.alloc(200*MiB, 0)
	require.NoError(t, err, "the slack stops at the capacity, it never causes an out-of-memory")
	assert.Equal(t, uint64(1024*MiB), h.e.Stats().ReservedBytes, "100 MiB of headroom served half of 200 MiB; the rest and 24 MiB more fill the capacity")
	h.closeAndCheckLeaks()
}

func TestGrowthSlackFollowsTheIteration(t *testing.T) {
	h := newHarness(t, nil, stitch.WithGrowthSlack(0.5))
	h.e.MarkIteration()
	_, err := h.alloc(100*MiB, 0)
	require.NoError(t, err)
	_, err = h.alloc(20*MiB, 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(170*MiB), h.e.Stats().ReservedBytes, "the iteration has grown 100 MiB: at most half of what is reserved as headroom")
	h.e.MarkIteration()
	_, err = h.alloc(80*MiB, 0) // 50 MiB of headroom is loose: 30 MiB more, and no headroom, as this iteration has grown nothing yet
	require.NoError(t, err)
	assert.Equal(t, uint64(200*MiB), h.e.Stats().ReservedBytes)
	h.check("after growths in two iterations")
	h.closeAndCheckLeaks()
}

func TestEmptyPageGoesBackToTheLargePool(t *testing.T) {
	h := newHarness(t, []sim.Option{sim.WithCapacity(4 * MiB)})
	var small []uintptr
	for range 8 {
		p, err := h.alloc(200*KiB, 0)
		require.NoError(t, err)
		small = append(small, p)
	}
	for _, p := range small {
		require.NoError(t, h.free(p))
	}
	// Every byte of the capacity is needed: the empty page must be given back.
	_, err := h.alloc(4*MiB, 0)
	require.NoError(t, err)
	h.check("after the large request")
	assert.Zero(t, h.e.Stats().SmallPages)
	h.closeAndCheckLeaks()
}

func TestOutOfMemory(t *testing.T) {
	h := newHarness(t, []sim.Option{sim.WithCapacity(8 * MiB)})
	a, err := h.alloc(3*MiB, 0)
	require.NoError(t, err)
	_, err = h.alloc(3*MiB, 0)
	require.NoError(t, err)
	require.NoError(t, h.free(a))
	_, err = h.alloc(6*MiB, 0)
	var oom *stitch.OutOfMemoryError
	require.True(t, errors.As(err, &oom), "%v", err)
	assert.ErrorIs(t, err, stitch.ErrOutOfMemory)
	assert.Equal(t, uint64(6*MiB), oom.Requested)
	assert.Equal(t, uint64(3*MiB), oom.FreeBytes)
	assert.Equal(t, 1, oom.FreePieces)
	assert.Equal(t, uint64(3*MiB), oom.LargestPiece)
	assert.Equal(t, uint64(3*MiB), oom.Stitchable)
	assert.Equal(t, uint64(6*MiB), oom.Reserved)
	assert.Equal(t, uint64(8*MiB), oom.Capacity)
	assert.Contains(t, err.Error(), "3145728 bytes free in 1 pieces")
	assert.Equal(t, uint64(3), h.d.Calls()[stitch.CallCreate], "the engine knew the capacity: no doomed Create (3 chunks, a handle each)")
	h.check("after OOM")
	_, err = h.alloc(5*MiB, 0)
	assert.NoError(t, err, "3 MiB free stitched with the last 2 MiB of capacity")
	h.check("after stitching everything")
	h.closeAndCheckLeaks()
}

func TestBadInput(t *testing.T) {
	h := newHarness(t, []sim.Option{sim.WithCapacity(64 * MiB)})
	p, err := h.alloc(3*MiB, 0)
	require.NoError(t, err)
	q, err := h.alloc(5*MiB, 0)
	require.NoError(t, err)
	require.NoError(t, h.free(q))

	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"size zero", func() error { _, err := h.e.Alloc(0, 0); return err }, stitch.ErrInvalidSize},
		{"beyond capacity", func() error { _, err := h.e.Alloc(64*MiB+1, 0); return err }, stitch.ErrTooLarge},
		{"huge", func() error { _, err := h.e.Alloc(^uint64(0), 0); return err }, stitch.ErrTooLarge},
		{"unknown pointer", func() error { return h.e.Free(p+512, 3*MiB) }, stitch.ErrUnknownPointer},
		{"double free", func() error { return h.e.Free(q, 5*MiB) }, stitch.ErrDoubleFree},
		{"wrong size", func() error { return h.e.Free(p, 2*MiB) }, stitch.ErrSizeMismatch},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := h.e.Stats()
			assert.ErrorIs(t, tt.call(), tt.want)
			h.check(tt.name)
			after := h.e.Stats()
			assert.Equal(t, before.ReservedBytes, after.ReservedBytes)
			assert.Equal(t, before.DriverCalls, after.DriverCalls)
			assert.LessOrEqual(t, after.RejectedFrees, uint64(i+1))
		})
	}
	assert.Equal(t, uint64(3), h.e.Stats().RejectedFrees)
	require.NoError(t, h.e.Close())
	_, err = h.e.Alloc(MiB, 0)
	assert.ErrorIs(t, err, stitch.ErrClosed)
	assert.ErrorIs(t, h.e.Free(p, 3*MiB), stitch.ErrClosed)
	assert.ErrorIs(t, h.e.EmptyCache(), stitch.ErrClosed)
	assert.ErrorIs(t, h.e.Reset(), stitch.ErrClosed)
	assert.ErrorIs(t, h.e.Close(), stitch.ErrClosed)
	assert.ErrorIs(t, h.e.Check(), stitch.ErrClosed)
	assert.Equal(t, sim.Live{}, h.d.Live())
}

// TestSmallPageSize: pages are eight times the small threshold rounded up to the granularity, or what
// WithSmallPageSize says; a tiny workload does not strand a 2 MiB page.
func TestSmallPageSize(t *testing.T) {
	const kib = 1 << 10
	tests := []struct {
		name     string
		g        uint64
		opts     []stitch.Option
		reserved uint64 // after one 1 KiB request
	}{
		{"defaults", 2 * MiB, nil, 2 * MiB},
		{"default threshold over small chunks", 64 * kib, nil, 2 * MiB},
		{"8 KiB threshold over 64 KiB chunks", 64 * kib, []stitch.Option{stitch.WithSmallThreshold(8 * kib)}, 64 * kib},
		{"32 KiB threshold over 64 KiB chunks", 64 * kib, []stitch.Option{stitch.WithSmallThreshold(32 * kib)}, 256 * kib},
		{"threshold below half a chunk", 2 * MiB, []stitch.Option{stitch.WithSmallThreshold(64 * kib)}, 2 * MiB},
		{"explicit page", 64 * kib, []stitch.Option{stitch.WithSmallThreshold(32 * kib), stitch.WithSmallPageSize(100 * kib)}, 128 * kib},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The page's size is what is reserved when no bytes ahead are grown with it.
			e, err := stitch.New(sim.New(sim.WithGranularity(tt.g)), append(tt.opts, stitch.WithExactGrowth())...)
			require.NoError(t, err)
			p, err := e.Alloc(kib, 0)
			require.NoError(t, err)
			assert.Equal(t, tt.reserved, e.Stats().ReservedBytes)
			assert.Equal(t, 1, e.Stats().SmallPages)
			require.NoError(t, e.Free(p, kib))
			require.NoError(t, e.Check())
			require.NoError(t, e.Close())
		})
	}
}

func TestBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts []stitch.Option
	}{
		{"negative budget", []stitch.Option{stitch.WithStitchBudget(-1, 0)}},
		{"nil logger", []stitch.Option{stitch.WithLogger(nil)}},
		{"small threshold above the page", []stitch.Option{stitch.WithSmallThreshold(4 * MiB), stitch.WithSmallPageSize(2 * MiB)}},
		{"negative growth slack", []stitch.Option{stitch.WithGrowthSlack(-0.1)}},
		{"growth slack of everything", []stitch.Option{stitch.WithGrowthSlack(1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := stitch.New(sim.New(), tt.opts...)
			assert.ErrorIs(t, err, stitch.ErrBadOption)
		})
	}
	_, err := stitch.New(sim.New(sim.WithGranularity(3000)))
	assert.ErrorIs(t, err, stitch.ErrBadOption)
}

func TestStreams(t *testing.T) {
	h := newHarness(t, []sim.Option{sim.WithEventDelay(1 << 30)})
	_, err := h.alloc(100, 2) // both streams in use from here on
	require.NoError(t, err)
	a, err := h.alloc(4*MiB, 1)
	require.NoError(t, err)
	require.NoError(t, h.free(a))
	b, err := h.alloc(4*MiB, 2)
	require.NoError(t, err)
	assert.NotEqual(t, a, b, "a block freed on stream 1 is not reused on stream 2 before its event completes")
	require.NoError(t, h.free(b))
	c, err := h.alloc(4*MiB, 1)
	require.NoError(t, err)
	assert.Equal(t, a, c, "but at once on its own stream")
	require.NoError(t, h.free(c))

	// The frees of a and b recorded one event each (none was pending on their streams); c's free
	// found stream 1's pending and recorded none. A miss records one for what no event covers yet
	// (c). Until they complete, stream 3 gets new memory.
	recorded := h.d.Calls()[stitch.CallRecordEvent]
	assert.Equal(t, uint64(2), recorded)
	_, err = h.alloc(8*MiB, 3)
	require.NoError(t, err)
	assert.Equal(t, uint64(16*MiB+g), h.e.Stats().ReservedBytes, "blocks of streams 1 and 2 not reused before their events complete")
	assert.Equal(t, recorded+1, h.d.Calls()[stitch.CallRecordEvent], "one more event for stream 1, none for stream 2")

	h.d.CompleteEvents()
	_, err = h.alloc(8*MiB, 3)
	require.NoError(t, err)
	assert.Equal(t, uint64(16*MiB+g), h.e.Stats().ReservedBytes, "once the events completed, both blocks serve stream 3")
	h.check("after cross-stream reuse")
	h.closeAndCheckLeaks()
}

func TestOneNonDefaultStreamRecordsNoEvents(t *testing.T) {
	h := newHarness(t, nil)
	for range 3 {
		p, err := h.alloc(5*MiB, 7)
		require.NoError(t, err)
		require.NoError(t, h.free(p))
	}
	calls := h.d.Calls()
	assert.Zero(t, calls[stitch.CallRecordEvent]+calls[stitch.CallSynchronize], "one stream, whichever: no event")
	assert.Equal(t, uint64(2), h.e.Stats().Outcomes.Exact)
	h.closeAndCheckLeaks()
}

func TestStitchBudget(t *testing.T) {
	h := newHarness(t, []sim.Option{sim.WithCapacity(32 * MiB)}, stitch.WithStitchBudget(1, 0))
	var ps []uintptr
	for range 8 {
		p, err := h.alloc(4*MiB, 0)
		require.NoError(t, err)
		ps = append(ps, p)
	}
	// Two stitched blocks from alternating free blocks; the budget keeps one view once idle.
	for _, i := range []int{0, 2, 4, 6} {
		require.NoError(t, h.free(ps[i]))
	}
	s1, err := h.alloc(8*MiB, 0)
	require.NoError(t, err)
	s2, err := h.alloc(8*MiB, 0)
	require.NoError(t, err)
	assert.Equal(t, 2, h.e.Stats().StitchedBlocks, "views in use are never released")
	require.NoError(t, h.free(s1))
	require.NoError(t, h.free(s2))
	_, err = h.alloc(16*MiB, 0) // flushes both stitched blocks and stitches anew
	require.NoError(t, err)
	h.check("after the third stitch")
	assert.LessOrEqual(t, h.e.Stats().StitchedBlocks, 2)
	assert.Positive(t, h.d.Calls()[stitch.CallUnmap], "an idle view was released")
	h.closeAndCheckLeaks()
}

func TestEmptyCacheAndReset(t *testing.T) {
	h := newHarness(t, nil)
	keep, err := h.alloc(3*MiB, 0)
	require.NoError(t, err)
	var ps []uintptr
	for _, size := range []uint64{100, 5 * MiB, 9 * MiB, 300 * KiB} {
		p, err := h.alloc(size, 0)
		require.NoError(t, err)
		ps = append(ps, p)
	}
	for _, p := range ps {
		require.NoError(t, h.free(p))
	}
	require.NoError(t, h.e.EmptyCache())
	h.check("after EmptyCache")
	st := h.e.Stats()
	assert.Zero(t, st.CachedBlocks)
	assert.LessOrEqual(t, st.ReservedBytes, uint64(4*MiB), "only the chunks under the live block stay")
	assert.Positive(t, h.d.Calls()[stitch.CallSynchronize])
	_, err = h.d.Resolve(keep, 3*MiB)
	assert.NoError(t, err, "the live block is still mapped")

	require.NoError(t, h.e.Reset())
	h.forgetAll()
	h.check("after Reset")
	st = h.e.Stats()
	assert.Zero(t, st.ReservedBytes)
	assert.Zero(t, st.LiveBytes)
	live := h.d.Live()
	assert.Equal(t, sim.Live{Ranges: 1, VirtualBytes: st.VirtualBytes}, live, "only the arena range is left")
	_, err = h.alloc(7*MiB, 0)
	assert.NoError(t, err, "usable after Reset")
	h.closeAndCheckLeaks()
}

func TestConcurrentUse(t *testing.T) {
	d := sim.New(sim.WithCapacity(512 * MiB))
	e, err := stitch.New(d)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []uintptr
			var sizes []uint64
			for i := range 300 {
				size := sizeFor(uint64(i*7+w), uint64(i*131+w*17)) % (16 * MiB)
				if size == 0 {
					size = 1
				}
				p, err := e.Alloc(size, 0)
				if !assert.NoError(t, err) {
					return
				}
				mine, sizes = append(mine, p), append(sizes, size)
				if len(mine) > 8 {
					assert.NoError(t, e.Free(mine[0], sizes[0]))
					mine, sizes = mine[1:], sizes[1:]
				}
			}
			for i, p := range mine {
				assert.NoError(t, e.Free(p, sizes[i]))
			}
		}()
	}
	wg.Wait()
	require.NoError(t, e.Check())
	assert.Zero(t, e.Stats().LiveBytes)
	require.NoError(t, e.Close())
	assert.Equal(t, sim.Live{}, d.Live())
}

// TestSyntheticLoopSteadyState runs the synthetic training iteration of the benchmarks ten times
// under a capacity near its peak: from the fourth iteration on, no driver call.
func TestSyntheticLoopSteadyState(t *testing.T) {
	h := newHarness(t, []sim.Option{sim.WithCapacity(512 * MiB)})
	script := trainingIteration(rand.New(rand.NewPCG(7, 7)))
	for it := range 10 {
		calls := h.d.TotalCalls()
		var stack []uintptr
		for _, o := range script {
			switch o.kind {
			case opAlloc:
				p, err := h.alloc(o.size, 0)
				require.NoError(t, err)
				stack = append(stack, p)
			case opFree:
				i := len(stack) + o.pick
				require.NoError(t, h.free(stack[i]))
				stack = append(stack[:i], stack[i+1:]...)
			}
		}
		h.check(fmt.Sprint("iteration ", it))
		if it >= 3 {
			assert.Zero(t, h.d.TotalCalls()-calls, "iteration %d", it)
		}
	}
	h.closeAndCheckLeaks()
}

func TestExactMatchDoesNotAllocate(t *testing.T) {
	e, err := stitch.New(sim.New())
	require.NoError(t, err)
	sizes := []uint64{100, 3 * MiB, 700 * KiB, 10 * MiB}
	ptrs := make([]uintptr, len(sizes))
	for i, s := range sizes {
		ptrs[i], err = e.Alloc(s, 0)
		require.NoError(t, err)
	}
	for i, s := range sizes {
		require.NoError(t, e.Free(ptrs[i], s))
	}
	allocs := testing.AllocsPerRun(1000, func() {
		for i, s := range sizes {
			ptrs[i], _ = e.Alloc(s, 0)
		}
		for i, s := range sizes {
			_ = e.Free(ptrs[i], s)
		}
	})
	assert.Zero(t, allocs)
	require.NoError(t, e.Check())
}

// TestWarmupGrowth: until an iteration is remembered every growth creates at least the warm-up
// growth (here as one handle of 16 MiB); after, only what the request lacks.
func TestWarmupGrowth(t *testing.T) {
	h := newHarness(t, nil, stitch.WithWarmupGrowth(16*MiB), stitch.WithHandleSize(16*MiB))
	h.e.MarkIteration()
	for range 4 {
		_, err := h.alloc(3*MiB, 0)
		require.NoError(t, err)
	}
	assert.Equal(t, uint64(16*MiB), h.e.Stats().ReservedBytes, "one 16 MiB growth serves the four")
	assert.Equal(t, uint64(1), h.d.Calls()[stitch.CallCreate])
	h.e.MarkIteration() // the first iteration is remembered
	_, err := h.alloc(6*MiB, 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(18*MiB), h.e.Stats().ReservedBytes, "4 MiB was loose: 2 MiB more, no headroom")
	h.check("after the growths")
	h.closeAndCheckLeaks()
}
