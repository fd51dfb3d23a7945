package zero

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHostCollectives(t *testing.T) {
	var c HostCollectives
	bufs := [][]float32{{1, 2, 3, 4}, {10, 20, 30, 40}, {100, 200, 300, 400}}
	clone := func(b [][]float32) [][]float32 {
		out := make([][]float32, len(b))
		for i := range b {
			out[i] = append([]float32(nil), b[i]...)
		}
		return out
	}
	sum := []float32{111, 222, 333, 444}

	ar := clone(bufs)
	require.NoError(t, c.AllReduceSum(ar))
	for r := range ar {
		assert.Equal(t, sum, ar[r], "rank %d", r)
	}

	send := [][]float32{{1, 2, 3, 4, 5, 6}, {10, 20, 30, 40, 50, 60}}
	recv := [][]float32{{9, 9, 9}, {9, 9, 9}}
	require.NoError(t, c.ReduceScatterSum(send, recv))
	assert.Equal(t, [][]float32{{11, 22, 33}, {44, 55, 66}}, recv)

	full := [][]float32{make([]float32, 6), make([]float32, 6)}
	require.NoError(t, c.AllGather(recv, full))
	for r := range full {
		assert.Equal(t, []float32{11, 22, 33, 44, 55, 66}, full[r], "rank %d", r)
	}
	assert.Equal(t, 6.5, c.AllReduceSum64([]float64{1, 2.5, 3}))

	assert.ErrorIs(t, c.AllReduceSum([][]float32{{1}, {1, 2}}), ErrLayout)
	assert.ErrorIs(t, c.AllReduceSum(nil), ErrLayout)
	assert.ErrorIs(t, c.ReduceScatterSum(send, [][]float32{{0, 0}, {0, 0}}), ErrLayout)
	assert.ErrorIs(t, c.AllGather(recv, [][]float32{make([]float32, 5), make([]float32, 5)}), ErrLayout)
}
