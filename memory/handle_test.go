package memory

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

// TestStaleHandleCannotFreeTheNewOwner: a freed handle whose address a later Get of the same size
// reuses cannot free the new owner's block: its second Free is a double free, and the new block
// keeps its bytes and can be freed by its own handle.
func TestStaleHandleCannotFreeTheNewOwner(t *testing.T) {
	for _, size := range []int64{100, 3 * g} { // the small pool and the large one
		a := newHostAllocator(t, 64*g)
		stale, err := a.Get(size)
		require.NoError(t, err)
		require.NoError(t, a.Free(stale, size))
		owner, err := a.Get(size)
		require.NoError(t, err)
		require.Equal(t, stale.Uintptr(), owner.Uintptr(), "the exact path hands the same address out again")
		fillPattern(view(owner, owner.MemSize()), 7)

		assert.ErrorIs(t, a.Free(stale, size), stitch.ErrDoubleFree)
		a.Put(stale, size)
		assert.ErrorIs(t, a.LastPutError(), stitch.ErrDoubleFree)
		assert.Equal(t, uint64(size), a.Stats().LiveBytes, "the new owner's block is still live")
		assert.Equal(t, pattern(int(size), 7), view(owner, owner.MemSize()))
		require.NoError(t, a.Check())
		require.NoError(t, a.Free(owner, size))
	}
}

// TestDoubleFreeIsAlwaysDoubleFree: a second Free of a handle reports ErrDoubleFree whether the
// engine still caches the block, has given its memory back, or has been reset to a new shape.
func TestDoubleFreeIsAlwaysDoubleFree(t *testing.T) {
	a := newHostAllocator(t, 64*g)
	cached, err := a.Get(2 * g)
	require.NoError(t, err)
	require.NoError(t, a.Free(cached, 2*g))
	assert.ErrorIs(t, a.Free(cached, 2*g), stitch.ErrDoubleFree, "block cached")

	released, err := a.Get(3 * g)
	require.NoError(t, err)
	require.NoError(t, a.Free(released, 3*g))
	require.NoError(t, a.EmptyCache())
	require.Zero(t, a.Stats().ReservedBytes)
	assert.ErrorIs(t, a.Free(released, 3*g), stitch.ErrDoubleFree, "memory given back to the driver")
	assert.ErrorIs(t, a.Free(cached, 2*g), stitch.ErrDoubleFree)
	assert.Zero(t, a.Stats().LiveBytes)
	assert.NoError(t, a.Check())
}

// TestRefusedFreeKeepsTheHandle: a Free the adapter refuses (wrong size) leaves the handle good for
// the right Free.
func TestRefusedFreeKeepsTheHandle(t *testing.T) {
	a := newHostAllocator(t, 64*g)
	m, err := a.Get(g)
	require.NoError(t, err)
	assert.ErrorIs(t, a.Free(m, g+1), stitch.ErrSizeMismatch)
	assert.ErrorIs(t, a.Free(m, 0), stitch.ErrInvalidSize)
	require.NoError(t, a.Free(m, g))
	assert.ErrorIs(t, a.Free(m, g), stitch.ErrDoubleFree)
}

// TestTypedNilIsRefused: a typed nil *Block (or a nil pointer of another Memory type) in Free and
// Put is a typed error, not a panic.
func TestTypedNilIsRefused(t *testing.T) {
	a := newHostAllocator(t, 16*g)
	var nilBlock *Block
	var nilDense *tensor.Dense
	for name, mem := range map[string]tensor.Memory{"nil": nil, "nil *Block": nilBlock, "nil *tensor.Dense": nilDense} {
		assert.ErrorIs(t, a.Free(mem, 64), stitch.ErrUnknownPointer, name)
		before := a.Stats().PutRejections
		a.Put(mem, 64)
		assert.Equal(t, before+1, a.Stats().PutRejections, name)
		assert.ErrorIs(t, a.LastPutError(), stitch.ErrUnknownPointer, name)
	}
	assert.NoError(t, a.Check())
}

// TestOtherAllocatorsHandle: a handle of another Allocator is unknown here, even at an address
// this Allocator has handed out.
func TestOtherAllocatorsHandle(t *testing.T) {
	a := newHostAllocator(t, 16*g)
	other := newHostAllocator(t, 16*g)
	theirs, err := other.Get(g)
	require.NoError(t, err)
	mine, err := a.Get(g)
	require.NoError(t, err)
	assert.ErrorIs(t, a.Free(theirs, g), stitch.ErrUnknownPointer)
	assert.ErrorIs(t, a.Free(newBlock(mine.Uintptr(), g, nil), g), stitch.ErrUnknownPointer,
		"a Block not made by Get is not a handle")
	require.NoError(t, other.Free(theirs, g))
	require.NoError(t, a.Free(mine, g))
}

// TestMemoryPrimitivesRefuseForeignMemory: Memclr, Memcpy and Memset of memory that is not a live
// block of the engine get ErrForeignMemory and write nothing.
func TestMemoryPrimitivesRefuseForeignMemory(t *testing.T) {
	e := newHostTensorEngine(t)
	live, err := e.Alloc(64)
	require.NoError(t, err)
	fillPattern(view(live, 64), 3)
	freed, err := e.Alloc(128)
	require.NoError(t, err)
	require.NoError(t, e.Free(freed, 128))
	otherEngine := newHostTensorEngine(t)
	theirs, err := otherEngine.Alloc(64)
	require.NoError(t, err)
	heap := tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(16))
	var nilBlock *Block
	wild := newBlock(0x1000, 4096, nil) // an address nothing maps

	for name, mem := range map[string]tensor.Memory{
		"freed block": freed, "another allocator's block": theirs, "Go heap tensor": heap,
		"nil": nil, "nil *Block": nilBlock, "wild address": wild,
	} {
		assert.ErrorIs(t, e.Clear(mem), ErrForeignMemory, name)
		e.Memclr(mem) // logged, must not fault
	}
	for name, mem := range map[string]tensor.Memory{
		"freed block": freed, "another allocator's block": theirs, "nil": nil, "nil *Block": nilBlock,
	} {
		assert.ErrorIs(t, e.Memcpy(mem, live), ErrForeignMemory, name)
		assert.ErrorIs(t, e.Memcpy(live, mem), ErrForeignMemory, name)
		assert.ErrorIs(t, e.Memset(mem, float32(1)), ErrForeignMemory, name)
	}
	assert.Equal(t, pattern(64, 3), view(live, 64), "the live block was not written")

	mine := tensor.New(tensor.WithEngine(e), tensor.Of(tensor.Float32), tensor.WithShape(4))
	copy(mine.Data().([]float32), []float32{1, 2, 3, 4})
	require.NoError(t, e.Clear(mine), "a tensor of the engine may be cleared")
	assert.Equal(t, []float32{0, 0, 0, 0}, mine.Data())
	require.NoError(t, e.Clear(live))
	assert.Equal(t, make([]byte, 64), view(live, 64))
	require.NoError(t, otherEngine.Free(theirs, 64))
	require.NoError(t, e.Free(live, 64))
}

// TestAllocReturnsZeroedMemory: a reused block comes back zeroed, as Go heap memory is, because
// tensor and Gorgonia read a new tensor as zeros.
func TestAllocReturnsZeroedMemory(t *testing.T) {
	e := newHostTensorEngine(t)
	m, err := e.Alloc(3 * g)
	require.NoError(t, err)
	fillPattern(view(m, 3*g), 9)
	require.NoError(t, e.Free(m, 3*g))
	again, err := e.Alloc(3 * g)
	require.NoError(t, err)
	require.Equal(t, m.Uintptr(), again.Uintptr())
	assert.Equal(t, make([]byte, 3*g), view(again, 3*g))
	require.NoError(t, e.Free(again, 3*g))
}

// TestFailedCloseCanBeRetried: a Close the driver fails returns the driver's typed error and leaves
// the Allocator to be closed again; the retry gives everything back.
func TestFailedCloseCanBeRetried(t *testing.T) {
	for _, kind := range []stitch.CallKind{stitch.CallRelease, stitch.CallUnmap} {
		t.Run(kind.String(), func(t *testing.T) {
			d := sim.New(sim.WithCapacity(1<<30), sim.WithGranularity(2<<20))
			a, err := NewAllocator(d, WithEngineOptions(stitch.WithSmallThreshold(1<<20)))
			require.NoError(t, err)
			var mems []tensor.Memory
			for _, size := range []int64{2 << 20, 6 << 20, 4 << 20} {
				m, err := a.Get(size)
				require.NoError(t, err)
				mems = append(mems, m)
			}
			require.NoError(t, a.Free(mems[0], 2<<20))
			require.NoError(t, a.Free(mems[2], 4<<20))
			big, err := a.Get(6 << 20) // stitched over the two freed blocks: a view to unmap
			require.NoError(t, err)
			_ = big

			for n := 1; n <= 64; n++ { // every call of the kind in Close, the engine's own retries included
				d.FailNth(kind, n, nil)
			}
			err = a.Close()
			require.Error(t, err)
			assert.ErrorIs(t, err, sim.ErrInjected)
			assert.NotZero(t, d.Live().PhysicalBytes+d.Live().VirtualBytes, "the failed Close left memory with the driver")
			_, err = a.Get(g)
			assert.ErrorIs(t, err, stitch.ErrClosed, "a closing allocator takes no new work")

			d.ClearFaults()
			require.NoError(t, a.Close(), "the retry gives back what the first Close could not")
			assert.Zero(t, d.Live().Handles)
			assert.Zero(t, d.Live().Ranges)
			assert.Zero(t, d.Live().PhysicalBytes)
			assert.ErrorIs(t, a.Close(), stitch.ErrClosed)
			assert.ErrorIs(t, a.Check(), stitch.ErrClosed)
		})
	}
}
