package stitch_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

// deficitHandle is the largest handle that holds what a growth lacks once an iteration has been
// seen: the chunks within 1/1024 of the headroom; once the caller has marked a whole iteration
// (markedWhole), within the headroom times its share of the capacity over 256; at most 1 GiB.
func deficitHandle(capacity, reserved uint64, markedWhole bool) uint64 {
	const g = 2 << 20
	room := capacity - reserved
	bound := room / 1024
	if markedWhole {
		bound = uint64(float64(room) * (float64(room) / float64(capacity)) / 256)
	}
	return min(bound, 1<<30) / g * g
}

// exactGrowthEngine is an engine with WithExactGrowth over a simulated device of capacity bytes
// whose handle creations d logs, closed when the test ends.
func exactGrowthEngine(t *testing.T, capacity uint64) (*stitch.Engine, *createLog) {
	t.Helper()
	d := &createLog{Driver: sim.New(sim.WithCapacity(capacity))}
	e, err := stitch.New(d, stitch.WithExactGrowth())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	return e, d
}

// growthOf allocates size bytes and returns the sizes of the handles that request created.
func growthOf(t *testing.T, e *stitch.Engine, d *createLog, size uint64) []uint64 {
	t.Helper()
	d.sizes = d.sizes[:0]
	_, err := e.Alloc(size, 0)
	require.NoError(t, err)
	require.NoError(t, e.Check())
	return append([]uint64(nil), d.sizes...)
}

// deficitHandles checks that a growth of the given handles, made with reserved bytes held under
// capacity, holds its deficit in handles of deficitHandle's size, the last one short or holding
// a short end (handleRun).
func deficitHandles(t *testing.T, sizes []uint64, capacity, reserved uint64, markedWhole bool) {
	t.Helper()
	require.NotEmpty(t, sizes, "the request grows")
	handleRun(t, sizes, deficitHandle(capacity, reserved, markedWhole), "deficit")
}

// TestDeficitHandleOnceMarkedIterationSeen: with iterations marked, the growths of the first
// iteration make handles no larger than firstIterationHandle; once an iteration is remembered, what
// a growth lacks is made as one handle (within the headroom times its share of the capacity over
// 256), so that a new peak's excess costs a few VMM calls rather than one per headroom-sized
// handle: larger handles than 1/1024 of the headroom far from the capacity, smaller near it.
func TestDeficitHandleOnceMarkedIterationSeen(t *testing.T) {
	const mib, gib = uint64(1 << 20), uint64(1 << 30)
	for _, tc := range []struct {
		name     string
		capacity uint64
		first    uint64 // the first iteration's request
		vs1024   int    // the deficit's handles against 1/1024 of the headroom
	}{
		{"one handle", 1 << 40, 300 * mib, 0},             // the bound is past 1 GiB: the deficit is one handle
		{"far from the capacity", 64 * gib, 300 * mib, 1}, // the headroom is almost all of it: about 4 x 1/1024 of it
		{"near the capacity", 64 * gib, 52 * gib, -1},     // under a fifth of it: smaller than 1/1024 of it
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, d := exactGrowthEngine(t, tc.capacity)

			e.MarkIteration()
			first := growthOf(t, e, d, tc.first)
			for i, s := range first {
				assert.LessOrEqual(t, s, firstIterationHandle(tc.capacity, 0), "first iteration, handle %d", i)
			}
			assert.Greater(t, len(first), 1, "the first iteration's growth is headroom-sized handles")
			p, err := e.Alloc(50*mib, 0)
			require.NoError(t, err)
			require.NoError(t, e.Free(p, 50*mib))

			e.MarkIteration() // the first iteration is remembered
			reserved := e.Stats().ReservedBytes
			sizes := growthOf(t, e, d, 900*mib)
			deficitHandles(t, sizes, tc.capacity, reserved, true)
			var sum uint64
			for _, s := range sizes {
				sum += s
			}
			assert.Equal(t, e.Stats().ReservedBytes-reserved, sum, "the handles are the growth")
			linear := deficitHandle(tc.capacity, reserved, false)
			switch tc.vs1024 {
			case 0:
				assert.Len(t, sizes, 1, "the deficit is one handle")
			case 1:
				assert.Greater(t, sizes[0], linear, "far from the capacity: larger than 1/1024 of the headroom")
			default:
				assert.Less(t, sizes[0], linear, "near the capacity: smaller than 1/1024 of the headroom")
			}
		})
	}
}

// TestDeficitHandleNearCapacity: near the capacity a deficit handle shrinks with the headroom to
// one chunk, as the headroom-sized handles do, so that what a large handle strands stays small.
func TestDeficitHandleNearCapacity(t *testing.T) {
	const mib = uint64(1 << 20)
	const capacity = 1024 * mib
	e, d := exactGrowthEngine(t, capacity)
	e.MarkIteration()
	growthOf(t, e, d, 100*mib)
	e.MarkIteration()
	reserved := e.Stats().ReservedBytes
	sizes := growthOf(t, e, d, 900*mib)
	for i, s := range sizes {
		assert.Equal(t, uint64(2*mib), s, "handle %d: 1/1024 of the headroom is below a chunk", i)
	}
	assert.Equal(t, e.Stats().ReservedBytes-reserved, uint64(len(sizes))*2*mib)
}

// unmarkedStep is one iteration of a small training-like loop: two activations held, a larger
// temporary, everything freed.
func unmarkedStep(t *testing.T, e *stitch.Engine, sizes ...uint64) {
	t.Helper()
	ptrs := make([]uintptr, len(sizes))
	for i, s := range sizes {
		p, err := e.Alloc(s, 0)
		require.NoError(t, err)
		ptrs[i] = p
	}
	for i := len(sizes) - 1; i >= 0; i-- {
		require.NoError(t, e.Free(ptrs[i], sizes[i]))
	}
}

// TestDeficitHandleUnmarked: without marks, the engine takes an iteration as seen once the finder
// has found one (iterfinder.go); repeated requests before that do not count. The deficit's handles
// follow the marked rule once the finder has found iterations that begin at deep troughs.
func TestDeficitHandleUnmarked(t *testing.T) {
	const mib = uint64(1 << 20)
	const capacity = uint64(1 << 40)
	step := []uint64{64 * mib, 32 * mib, 96 * mib}

	t.Run("iterations found at deep troughs", func(t *testing.T) {
		// Never marked, once the finder has found iterations that begin where a step's
		// activations are freed (the live bytes a quarter or more below their peak), a new peak's
		// deficit takes handles of the marked rule: larger than 1/1024 of the headroom far from
		// the capacity.
		const capacity = 64 << 30
		e, d := exactGrowthEngine(t, capacity)
		for range 40 {
			unmarkedStep(t, e, step...)
		}
		require.GreaterOrEqual(t, e.Stats().IterationsFound, uint64(2))
		reserved := e.Stats().ReservedBytes
		sizes := growthOf(t, e, d, 1024*mib)
		deficitHandles(t, sizes, capacity, reserved, true)
		assert.Greater(t, sizes[0], deficitHandle(capacity, reserved, false), "larger than 1/1024 of the headroom")
	})

	t.Run("iterations found at shallow troughs", func(t *testing.T) {
		// Boundaries whose live bytes stay within a quarter of the peak (the layers of a first
		// iteration's forward pass, which the finder may take for iterations) leave the deficit's
		// handles within 1/1024 of the headroom.
		const capacity = 64 << 30
		e, d := exactGrowthEngine(t, capacity)
		_, err := e.Alloc(1024*mib, 0) // held throughout: the troughs lie at 1 GiB, the peak 1.2 GiB
		require.NoError(t, err)
		for range 40 {
			unmarkedStep(t, e, step...)
		}
		require.GreaterOrEqual(t, e.Stats().IterationsFound, uint64(2))
		reserved := e.Stats().ReservedBytes
		sizes := growthOf(t, e, d, 1024*mib)
		deficitHandles(t, sizes, capacity, reserved, false)
	})

	t.Run("repeats before an iteration is found", func(t *testing.T) {
		e, d := exactGrowthEngine(t, capacity)
		// Twenty growths, each request held: the memory is built over 20 requests.
		for i := range 20 {
			_, err := e.Alloc(uint64(10+i)*mib, 0)
			require.NoError(t, err)
		}
		for range 3 { // the third repeats the contexts of the second
			unmarkedStep(t, e, step...)
		}
		require.Zero(t, e.Stats().IterationsFound)
		reserved := e.Stats().ReservedBytes
		sizes := growthOf(t, e, d, 1024*mib)
		for i, s := range sizes {
			assert.LessOrEqual(t, s, firstIterationHandle(capacity, reserved), "handle %d", i)
		}
		assert.Greater(t, len(sizes), 1, "the first iteration's handles: no iteration found yet")
	})
}

// TestDeficitHandleMarkedFirstIteration: marked once, requests that repeat inside the first
// iteration (the micro-steps of gradient accumulation, each freeing its activations) do not make
// the engine take the iteration as seen: until the caller's second mark remembers it, a growth
// keeps the first iteration's handles.
func TestDeficitHandleMarkedFirstIteration(t *testing.T) {
	const mib = uint64(1 << 20)
	for _, capacity := range []uint64{1 << 40, 64 << 30} {
		d := &createLog{Driver: sim.New(sim.WithCapacity(capacity))}
		e, err := stitch.New(d, stitch.WithExactGrowth())
		require.NoError(t, err)
		e.MarkIteration()
		for range 3 { // the micro-steps of one iteration
			unmarkedStep(t, e, 64*mib, 32*mib, 96*mib)
		}
		reserved := e.Stats().ReservedBytes
		sizes := growthOf(t, e, d, 1024*mib)
		for i, s := range sizes {
			assert.LessOrEqual(t, s, firstIterationHandle(capacity, reserved), "handle %d", i)
		}
		assert.Greater(t, len(sizes), 1, "the first iteration's handles")
		require.NoError(t, e.Close())
	}
}

// TestDeficitHandleMarkedRepeatsHeld: marked once, requests that repeat while the live bytes stay
// within a quarter of their peak (the layers of a frozen teacher's forward pass, each freeing its
// own temporaries, over a student's activations held) do not make the engine take the iteration
// as seen either: the growth after them keeps the first iteration's handles.
func TestDeficitHandleMarkedRepeatsHeld(t *testing.T) {
	const mib = uint64(1 << 20)
	const capacity = 64 << 30
	e, d := exactGrowthEngine(t, capacity)
	e.MarkIteration()
	_, err := e.Alloc(1024*mib, 0) // held: the student's activations
	require.NoError(t, err)
	for range 12 { // the teacher's layers: the same requests at the same live bytes
		unmarkedStep(t, e, 64*mib, 32*mib)
	}
	reserved := e.Stats().ReservedBytes
	sizes := growthOf(t, e, d, 1024*mib)
	for i, s := range sizes {
		assert.LessOrEqual(t, s, firstIterationHandle(capacity, reserved), "handle %d", i)
	}
	assert.Greater(t, len(sizes), 1, "the first iteration's handles")
}
