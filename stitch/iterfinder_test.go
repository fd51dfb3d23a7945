package stitch

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loopScript feeds a finder requests and frees as the engine does (Alloc, Free), and run plays a
// synthetic training job through it: the live bytes over its requests and frees. Setup builds
// the weights (with a temporary freed after each layer); each iteration's forward keeps activations of a size that changes from one iteration to the next (dynamic
// shapes) and frees a temporary after each layer, its backward frees the activations and makes
// smaller gradients, with temporaries (so that it falls), and the step frees the gradients; the
// first step also makes the optimizer's state, which stays (the level between iterations rises
// once).
type loopScript struct {
	live, peak uint64
	n          uint64 // requests so far
	afterFree  bool
	f          iterFinder
	found      []uint64 // n at each boundary found
	starts     []uint64 // n at each iteration's first request
}

func (s *loopScript) alloc(size uint64) {
	if s.afterFree {
		s.afterFree = false
		if s.f.trough(s.n, s.live, s.peak) {
			s.found = append(s.found, s.n)
		}
	}
	s.n++
	s.live += size
	s.peak = max(s.peak, s.live)
}

func (s *loopScript) free(size uint64) {
	if !s.afterFree {
		s.f.peak(s.live)
		s.afterFree = true
	}
	s.live -= size
}

func (s *loopScript) run(rng *rand.Rand, iterations, layers int) {
	const weight = 64 << 20
	for range layers { // setup
		s.alloc(weight)
		s.alloc(weight / 4)
		s.free(weight / 4)
	}
	for it := range iterations {
		s.starts = append(s.starts, s.n)
		act := uint64(16+rng.IntN(48)) << 20 // this iteration's sequence length
		for range layers {                   // forward
			s.alloc(act)
			s.alloc(act / 2)
			s.free(act / 2)
		}
		for range layers { // backward
			s.alloc(weight / 8) // the layer's gradient
			s.alloc(act / 4)    // the input's gradient, a temporary
			s.free(act / 4)
			s.free(act) // the activation
		}
		if it == 0 {
			for range layers {
				s.alloc(2 * weight) // the optimizer's state, kept
			}
		}
		for range layers {
			s.free(weight / 8) // the gradients, after the step
		}
	}
}

// TestIterFinderFindsIterations: on a loop of dynamic shapes whose level between iterations rises
// once, every iteration from the fourth on is found where it begins, no request inside an
// iteration from the second on is taken for a beginning, and at most two in the setup and the
// first iteration (whose backward pass falls below every trough before it, with small rises).
func TestIterFinderFindsIterations(t *testing.T) {
	for seed := range uint64(20) {
		s := &loopScript{}
		s.run(rand.New(rand.NewPCG(seed, 1)), 12, 24)
		found := map[uint64]bool{}
		for _, n := range s.found {
			found[n] = true
		}
		for i, start := range s.starts[3:] {
			assert.True(t, found[start], "seed %d: iteration %d, at request %d, not found (found %v)", seed, i+3, start, s.found)
		}
		starts := map[uint64]bool{}
		for _, n := range s.starts {
			starts[n] = true
		}
		for _, n := range s.found {
			if n > s.starts[1] {
				assert.True(t, starts[n], "seed %d: request %d inside an iteration taken for a beginning", seed, n)
			}
		}
		early := 0 // in the setup and the first iteration: the falls of its backward pass
		for _, n := range s.found {
			if n < s.starts[1] {
				early++
			}
		}
		assert.LessOrEqual(t, early, 2, "seed %d: beginnings found before the second iteration: %v", seed, s.found)
		assert.Equal(t, uint64(len(s.found)), s.f.count)
	}
}

// TestIterFinderLevelRisesLater: when something made in a late iteration stays live (the level
// between iterations rises for good), the finder finds the iterations again once the lower troughs
// have left its window: after about as many iterations as came before, and never more than
// iterWindowMaxIterations times the longest gap between two beginnings found (here at most three
// iterations: the first ones found may lie a few iterations apart).
func TestIterFinderLevelRisesLater(t *testing.T) {
	for _, tt := range []struct{ before, after int }{{10, 20}, {400, 3*iterWindowMaxIterations + 8}} {
		s := &loopScript{}
		rng := rand.New(rand.NewPCG(7, 1))
		s.run(rng, tt.before, 16)
		s.alloc(256 << 20) // kept for good: a new level
		s.alloc(1 << 20)
		s.free(1 << 20)
		rise := len(s.starts)
		s.run(rng, tt.after, 16)
		found := map[uint64]bool{}
		for _, n := range s.found {
			found[n] = true
		}
		for i, start := range s.starts[rise:] {
			if i >= tt.after-4 {
				assert.True(t, found[start], "%d iterations, then a rise: iteration %d after it not found", tt.before, i)
			}
			if i > 0 && found[start] {
				for _, n := range s.found {
					assert.False(t, n > start && !slices.Contains(s.starts, n), "request %d inside an iteration taken for a beginning", n)
				}
				break
			}
		}
	}
}

// TestIterFinderQueueBounded: a level that only rises (every trough higher than the last) keeps
// every trough in the window; the queue holds at most iterMaxTroughs of them.
func TestIterFinderQueueBounded(t *testing.T) {
	s := &loopScript{}
	for range 3 * iterMaxTroughs {
		s.alloc(1 << 20) // kept
		s.alloc(4096)
		s.free(4096)
	}
	assert.LessOrEqual(t, len(s.f.troughs)-s.f.head, iterMaxTroughs)
	assert.LessOrEqual(t, cap(s.f.troughs), 4*iterMaxTroughs)
	assert.Zero(t, s.f.count, "a level that only rises has no iterations")
}

// TestEngineFindsIterationsUnmarked: an engine never marked finds the iterations of a loop and
// follows memos from there; a loop of fixed shapes then makes no driver call and every large
// request is an exact match or a memo's place.
func TestEngineFindsIterationsUnmarked(t *testing.T) {
	e := newFinderEngine(t)
	var ptrs []uintptr
	alloc := func(size uint64) {
		p, err := e.Alloc(size, 0)
		require.NoError(t, err)
		ptrs = append(ptrs, p)
	}
	const layers = 8
	weights := make([]uintptr, 0, layers)
	for range layers {
		p, err := e.Alloc(32<<20, 0)
		require.NoError(t, err)
		weights = append(weights, p)
	}
	var calls []uint64
	for range 16 {
		before := e.Stats().DriverCalls.Total()
		ptrs = ptrs[:0]
		for l := range layers {
			alloc(uint64(24+l) << 20)
		}
		for i := len(ptrs) - 1; i >= 0; i-- {
			require.NoError(t, e.Free(ptrs[i], uint64(24+i)<<20))
		}
		calls = append(calls, e.Stats().DriverCalls.Total()-before)
	}
	require.NoError(t, e.Check())
	st := e.Stats()
	assert.GreaterOrEqual(t, st.IterationsFound, uint64(8), "iterations found")
	assert.True(t, e.marked(), "the engine follows the iterations it found")
	assert.Zero(t, calls[len(calls)-1], "driver calls in the last iteration (per iteration: %v)", calls)
}

// TestMarkIterationDropsFoundIterations: the caller's first mark turns the finder off and drops
// the memos of the iterations it found (the job's setup, for a caller that marks from its first
// step), and seenIteration goes back to what it was.
func TestMarkIterationDropsFoundIterations(t *testing.T) {
	e := newFinderEngine(t)
	for range 12 { // a repeating setup: the finder takes it for iterations
		var ptrs []uintptr
		for l := range 8 {
			p, err := e.Alloc(uint64(16+l)<<20, 0)
			require.NoError(t, err)
			ptrs = append(ptrs, p)
		}
		for l, p := range ptrs {
			require.NoError(t, e.Free(p, uint64(16+l)<<20))
		}
	}
	require.NotZero(t, e.Stats().IterationsFound)
	require.NotEmpty(t, e.memos)
	found := e.Stats().IterationsFound
	e.MarkIteration()
	assert.Empty(t, e.memos)
	assert.False(t, e.seenIteration)
	assert.True(t, e.callerMarks)
	for range 4 {
		p, err := e.Alloc(64<<20, 0)
		require.NoError(t, err)
		require.NoError(t, e.Free(p, 64<<20))
	}
	assert.Equal(t, found, e.Stats().IterationsFound, "no iteration found after a mark")
	require.NoError(t, e.Check())
}

func newFinderEngine(t *testing.T) *Engine {
	e, err := New(&nullDriver{}, WithCapacity(4<<30))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	return e
}
