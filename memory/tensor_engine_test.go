package memory

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"
)

func newHostTensorEngine(t *testing.T) *TensorEngine {
	t.Helper()
	e, err := NewTensorEngine(newHostAllocator(t, 256*g))
	require.NoError(t, err)
	return e
}

// TestTensorNewDrawsFromGmlake: tensor.New with the engine allocates through Alloc, and the
// tensor's data lives in the allocator's memory.
func TestTensorNewDrawsFromGmlake(t *testing.T) {
	e := newHostTensorEngine(t)
	before := e.Allocator().Stats()
	x := tensor.New(tensor.WithEngine(e), tensor.Of(tensor.Float32), tensor.WithShape(3, 5))
	after := e.Allocator().Stats()
	assert.Equal(t, before.LiveBytes+3*5*4, after.LiveBytes)
	assert.Equal(t, before.LiveBlocks+1, after.LiveBlocks)
	assert.True(t, x.IsManuallyManaged(), "tensor knows the memory is not the Go heap's")
	assert.Equal(t, make([]float32, 15), x.Data(), "fresh tensors are zero")

	require.NoError(t, e.Free(x, int64(x.MemSize())))
	assert.Equal(t, before.LiveBytes, e.Allocator().Stats().LiveBytes)
}

// TestTensorArithmeticOnGmlakeMemory: results of element-wise and linear-algebra operations on
// gmlake tensors are right and are themselves allocated by gmlake.
func TestTensorArithmeticOnGmlakeMemory(t *testing.T) {
	e := newHostTensorEngine(t)
	newT := func(shape []int, data []float64) *tensor.Dense {
		d := tensor.New(tensor.WithEngine(e), tensor.Of(tensor.Float64), tensor.WithShape(shape...))
		copy(d.Data().([]float64), data)
		return d
	}
	a := newT([]int{2, 3}, []float64{1, 2, 3, 4, 5, 6})
	b := newT([]int{2, 3}, []float64{10, 20, 30, 40, 50, 60})
	w := newT([]int{3, 2}, []float64{1, 0, 0, 1, 1, 1})
	blocks := e.Allocator().Stats().LiveBlocks

	sum, err := tensor.Add(a, b)
	require.NoError(t, err)
	prod, err := tensor.Mul(a, b)
	require.NoError(t, err)
	mm, err := tensor.MatMul(a, w)
	require.NoError(t, err)
	scaled, err := tensor.Mul(a, 2.0)
	require.NoError(t, err)

	assert.Equal(t, []float64{11, 22, 33, 44, 55, 66}, sum.Data())
	assert.Equal(t, []float64{10, 40, 90, 160, 250, 360}, prod.Data())
	assert.Equal(t, []float64{4, 5, 10, 11}, mm.Data())
	assert.Equal(t, []float64{2, 4, 6, 8, 10, 12}, scaled.Data())
	for _, r := range []tensor.Tensor{sum, prod, mm, scaled} {
		assert.Same(t, e, r.Engine(), "results follow the first operand's engine")
	}
	assert.Equal(t, blocks+4, e.Allocator().Stats().LiveBlocks, "each result is a gmlake block")

	clone := a.Clone().(*tensor.Dense)
	assert.Equal(t, a.Data(), clone.Data())
	assert.NotEqual(t, a.Uintptr(), clone.Uintptr())
	assert.NoError(t, e.Allocator().Check())
}

func TestMemoryPrimitives(t *testing.T) {
	e := newHostTensorEngine(t)
	m, err := e.Alloc(64)
	require.NoError(t, err)
	n, err := e.Alloc(32)
	require.NoError(t, err)

	require.NoError(t, e.Memset(m, float32(1.5)))
	f := bytesOf(m.Uintptr(), 64)
	x := tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(16), tensor.FromMemory(m.Uintptr(), 64))
	assert.Equal(t, []float32{1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5}, x.Data())

	require.NoError(t, e.Memset(n, int64(-1)))
	require.NoError(t, e.Memcpy(m, n))
	assert.Equal(t, bytesOf(n.Uintptr(), 32), f[:32], "the source's bytes were copied")
	assert.Equal(t, []float32{1.5, 1.5}, x.Data().([]float32)[8:10], "the rest is untouched")
	assert.ErrorIs(t, e.Memcpy(n, m), ErrShortBuffer)
	assert.ErrorIs(t, e.Memset(m, "one"), ErrUnsupportedType)

	e.Memclr(m)
	assert.Equal(t, make([]byte, 64), f)
	assert.True(t, e.AllocAccessible())
	acc, err := e.Accessible(m)
	require.NoError(t, err)
	assert.Equal(t, m, acc)
	assert.True(t, e.WorksWith(tensor.DataOrder(0)))
	require.NoError(t, e.Free(m, 64))
	require.NoError(t, e.Free(n, 32))
}
