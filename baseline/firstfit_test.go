package baseline

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newTestFirstFit(t *testing.T, arena uint64) *FirstFit {
	t.Helper()
	f, err := NewFirstFit(NewSimDevice(), arena)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, f.Close()) })
	return f
}

// offset of each allocation from the arena base.
func ffAlloc(t *testing.T, f *FirstFit, size uint64) uint64 {
	t.Helper()
	p, err := f.Alloc(size, 0)
	require.NoError(t, err)
	require.NoError(t, f.Check())
	return uint64(p - f.base)
}

func ffFree(t *testing.T, f *FirstFit, off, size uint64) {
	t.Helper()
	require.NoError(t, f.Free(f.base+uintptr(off), size))
	require.NoError(t, f.Check())
}

func TestFirstFitRounding(t *testing.T) {
	tests := []struct{ size, want uint64 }{{1, 256}, {256, 256}, {257, 288}, {1000, 1024}, {4096, 4096}, {4097, 4128}}
	for _, tc := range tests {
		f := newTestFirstFit(t, 1<<20)
		ffAlloc(t, f, tc.size)
		assert.Equal(t, ffAlloc(t, f, 1), tc.want, "size %d: the next block starts after the rounded size", tc.size)
	}
}

// First fit takes the lowest free block that fits, even when a later one fits exactly.
func TestFirstFitTakesLowestAddressNotBestFit(t *testing.T) {
	f := newTestFirstFit(t, 1<<20)
	a := ffAlloc(t, f, 4096) // [0, 4096)
	ffAlloc(t, f, 256)       // separator
	b := ffAlloc(t, f, 1024) // [4352, 5376)
	ffAlloc(t, f, 256)       // separator
	ffFree(t, f, a, 4096)
	ffFree(t, f, b, 1024)
	assert.Equal(t, a, ffAlloc(t, f, 1024), "the 4 KiB hole comes first, though the 1 KiB hole fits exactly")
	assert.Equal(t, a+1024, ffAlloc(t, f, 1024), "the hole's split-off tail is next")
	assert.Equal(t, a+2048, ffAlloc(t, f, 2048), "then the rest of the first hole")
	assert.Equal(t, b, ffAlloc(t, f, 1024), "only now the second hole")
}

func TestFirstFitCoalescesNeighbours(t *testing.T) {
	f := newTestFirstFit(t, 4096)
	offs := []uint64{ffAlloc(t, f, 1024), ffAlloc(t, f, 1024), ffAlloc(t, f, 1024), ffAlloc(t, f, 1024)}
	_, err := f.Alloc(256, 0)
	require.ErrorIs(t, err, ErrOutOfMemory, "arena full")
	for _, i := range []int{0, 2, 1, 3} { // middle last but one: merges with both sides
		ffFree(t, f, offs[i], 1024)
	}
	assert.Equal(t, 1, f.free.Len(), "one free block after all frees")
	assert.Equal(t, uint64(0), ffAlloc(t, f, 4096), "the whole arena is one block again")
}

func TestFirstFitOutOfMemoryError(t *testing.T) {
	f := newTestFirstFit(t, 4096)
	a := ffAlloc(t, f, 1024)
	ffAlloc(t, f, 1024)
	ffAlloc(t, f, 1024)
	ffFree(t, f, a, 1024)
	_, err := f.Alloc(2048, 0)
	var oom *OutOfMemoryError
	require.ErrorAs(t, err, &oom)
	assert.Equal(t, uint64(1024), oom.Largest)
	assert.Equal(t, 2, oom.Pieces)
	assert.Equal(t, uint64(4096), oom.Capacity)
}

func TestFirstFitBadFrees(t *testing.T) {
	f := newTestFirstFit(t, 4096)
	off := ffAlloc(t, f, 1000)
	assert.ErrorIs(t, f.Free(f.base+uintptr(off)+32, 1000), ErrUnknownPointer)
	assert.ErrorIs(t, f.Free(f.base+uintptr(off), 2000), ErrSizeMismatch)
	ffFree(t, f, off, 1000)
	assert.ErrorIs(t, f.Free(f.base+uintptr(off), 1000), ErrUnknownPointer, "double free")
}

// Random traffic keeps every invariant, and the reserved high-water mark never passes the arena.
func TestFirstFitRandomTrafficKeepsInvariants(t *testing.T) {
	const seed = 7
	rng := rand.New(rand.NewPCG(seed, 0))
	f := newTestFirstFit(t, 1<<20)
	type block struct{ off, size uint64 }
	var live []block
	for step := range 2000 {
		if len(live) > 0 && rng.IntN(2) == 0 {
			i := rng.IntN(len(live))
			require.NoError(t, f.Free(f.base+uintptr(live[i].off), live[i].size), "seed %d step %d", seed, step)
			live = append(live[:i], live[i+1:]...)
		} else {
			size := 1 + rng.Uint64N(20000)
			p, err := f.Alloc(size, 0)
			if errors.Is(err, ErrOutOfMemory) {
				continue
			}
			require.NoError(t, err)
			live = append(live, block{uint64(p - f.base), size})
		}
		require.NoError(t, f.Check(), "seed %d step %d", seed, step)
		require.LessOrEqual(t, f.Reserved(), f.ArenaSize())
	}
}
