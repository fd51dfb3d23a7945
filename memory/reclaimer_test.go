package memory

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake/stitch"
)

// TestReclaimKeepsWhatRootsReach: Reclaim frees a block of its engine only when no tensor, slice
// or Memory reachable from the roots points into it, through unexported fields, maps, interfaces
// and views; memory of other engines is never freed.
func TestReclaimKeepsWhatRootsReach(t *testing.T) {
	base := newHostTensorEngine(t)
	a := base.Allocator()
	r, err := NewReclaimer(base)
	require.NoError(t, err)
	newT := func(n int) *tensor.Dense {
		return tensor.New(tensor.WithEngine(r), tensor.Of(tensor.Float32), tensor.WithShape(n))
	}
	own := tensor.New(tensor.WithEngine(base), tensor.Of(tensor.Float32), tensor.WithShape(8)) // the caller's
	type holder struct {
		hidden *tensor.Dense
		byName map[string]tensor.Tensor
		data   []float32
		mem    tensor.Memory
	}
	viewed := tensor.New(tensor.WithEngine(r), tensor.Of(tensor.Float32), tensor.WithShape(4, 4))
	view, err := viewed.Slice(tensor.S(2, 4)) // a view starting inside viewed's block
	require.NoError(t, err)
	m, err := r.Alloc(64)
	require.NoError(t, err)
	h := &holder{hidden: newT(3), byName: map[string]tensor.Tensor{"v": view}, data: newT(5).Data().([]float32), mem: m}
	garbage := newT(7)
	copy(garbage.Data().([]float32), []float32{1, 2, 3})
	require.Equal(t, 5, r.Live())

	st, err := r.Reclaim(h)
	require.NoError(t, err)
	assert.Equal(t, ReclaimStats{Kept: 4, Freed: 1, KeptBytes: 3*4 + 16*4 + 5*4 + 64, FreedBytes: 7 * 4}, st)
	assert.Equal(t, 4, r.Live())
	assert.NoError(t, a.Check())

	st, err = r.Reclaim()
	require.NoError(t, err)
	assert.Equal(t, 4, st.Freed)
	assert.Zero(t, r.Live())
	assert.Equal(t, uint64(8*4), a.Stats().LiveBytes, "the caller's own tensor is not the Reclaimer's to free")
	require.NoError(t, base.Free(own, 32), "freed by address: a Dense keeps no handle")
	assert.Zero(t, a.Stats().LiveBytes)
}

// TestReclaimerFreeForgetsTheBlock: a block freed through the Reclaimer is not freed again by
// Reclaim.
func TestReclaimerFreeForgetsTheBlock(t *testing.T) {
	r, err := NewReclaimer(newHostTensorEngine(t))
	require.NoError(t, err)
	m, err := r.Alloc(100)
	require.NoError(t, err)
	require.NoError(t, r.Free(m, 100))
	assert.ErrorIs(t, r.Free(m, 100), stitch.ErrDoubleFree)
	d := tensor.New(tensor.WithEngine(r), tensor.Of(tensor.Float32), tensor.WithShape(25))
	require.NoError(t, r.Free(d, 100), "a Dense names its block by address")
	assert.Error(t, r.Free(d, 100), "freed once (by address the engine decides what it reports)")
	st, err := r.Reclaim()
	require.NoError(t, err)
	assert.Zero(t, st.Freed)
	assert.Zero(t, r.Allocator().Stats().PutRejections)
	_, err = NewReclaimer(nil)
	assert.Error(t, err)
}
