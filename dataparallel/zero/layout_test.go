package zero

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLayoutCoversEveryElementOnce(t *testing.T) {
	tests := []struct {
		name   string
		sizes  []int
		ranks  int
		align  int
		padded int
	}{
		{"one rank", []int{10, 20}, 1, 4, 32},
		{"exact fit", []int{8, 8}, 4, 4, 16},
		{"padding", []int{1000, 3, 7}, 3, 128, 1152},
		{"parameter larger than a shard", []int{5000, 10}, 8, 128, 5120},
		{"default alignment", []int{1}, 2, 0, 256},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := NewLayout(tt.sizes, tt.ranks, tt.align)
			require.NoError(t, err)
			assert.Equal(t, tt.padded, l.Padded)
			assert.Equal(t, tt.padded, l.ShardLen*tt.ranks)
			assert.Zero(t, l.ShardLen%l.Align, "shards start aligned")
			owner := make([]int, l.Total) // how many pieces cover each parameter element
			prevHi := 0
			for r := range tt.ranks {
				lo, hi := l.Shard(r)
				assert.Equal(t, prevHi, lo, "shards are contiguous")
				prevHi = hi
				for _, p := range l.Pieces(r) {
					assert.GreaterOrEqual(t, p.FlatOff, lo)
					assert.LessOrEqual(t, p.FlatOff+p.Len, hi)
					assert.Equal(t, l.Params[p.Param].Offset+p.ParamOff, p.FlatOff)
					for i := p.FlatOff; i < p.FlatOff+p.Len; i++ {
						owner[i]++
					}
				}
			}
			assert.Equal(t, l.Padded, prevHi)
			for i, n := range owner {
				require.Equal(t, 1, n, "element %d owned %d times", i, n)
			}
		})
	}
}

func TestLayoutRejectsBadInput(t *testing.T) {
	for _, tt := range []struct {
		name         string
		sizes        []int
		ranks, align int
	}{
		{"no ranks", []int{1}, 0, 4},
		{"empty parameter", []int{3, 0}, 2, 4},
		{"negative alignment", []int{3}, 2, -1},
	} {
		_, err := NewLayout(tt.sizes, tt.ranks, tt.align)
		assert.ErrorIs(t, err, ErrLayout, tt.name)
	}
	l, err := NewLayout([]int{3, 5}, 2, 4)
	require.NoError(t, err)
	assert.ErrorIs(t, l.Flatten(make([]float32, 7), [][]float32{make([]float32, 3), make([]float32, 5)}), ErrLayout)
	assert.ErrorIs(t, l.Flatten(make([]float32, 8), [][]float32{make([]float32, 3), make([]float32, 4)}), ErrLayout)
	assert.ErrorIs(t, l.Unflatten([][]float32{make([]float32, 3)}, make([]float32, 8)), ErrLayout)
}

func TestFlattenRoundTrip(t *testing.T) {
	l, err := NewLayout([]int{3, 5}, 3, 2)
	require.NoError(t, err)
	flat := make([]float32, l.Padded)
	for i := range flat {
		flat[i] = -1 // padding must come back zero
	}
	in := [][]float32{{1, 2, 3}, {4, 5, 6, 7, 8}}
	require.NoError(t, l.Flatten(flat, in))
	assert.Equal(t, []float32{1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0}, flat)
	out := [][]float32{make([]float32, 3), make([]float32, 5)}
	require.NoError(t, l.Unflatten(out, flat))
	assert.Equal(t, in, out)
}
