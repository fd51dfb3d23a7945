package zero

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUnitsLayOutEachUnitOnItsOwn(t *testing.T) {
	sizes := []int{300, 5, 7, 200, 9}
	group := []int{-1, 0, 0, 1, -1} // embedding and head outside blocks, two blocks
	u, err := NewUnits(sizes, group, 2, 4)
	require.NoError(t, err)
	assert.Equal(t, [][]int{{0, 4}, {1, 2}, {3}}, u.Members)
	assert.Equal(t, []int{0, 1, 1, 2, 0}, u.UnitOf)
	assert.Equal(t, []int{0, 0, 1, 0, 1}, u.Pos)
	assert.Equal(t, []int{312, 16, 200}, []int{u.Layouts[0].Padded, u.Layouts[1].Padded, u.Layouts[2].Padded})
	assert.Equal(t, []int{0, 156, 164}, u.ShardOff)
	assert.Equal(t, 264, u.ShardLen)

	params := make([][]float32, len(sizes))
	next := float32(1)
	for i, n := range sizes {
		params[i] = make([]float32, n)
		for j := range params[i] {
			params[i][j] = next
			next++
		}
	}
	shards := make([][]float32, 2)
	for r := range shards {
		shards[r] = make([]float32, u.ShardLen)
		require.NoError(t, u.Shard(r, shards[r], params))
	}
	// Rank 1's shard of block 0 (unit 1) is elements 8..15 of [p1 p2 pad]: p2[3:7] then padding.
	assert.Equal(t, []float32{params[2][3], params[2][4], params[2][5], params[2][6], 0, 0, 0, 0},
		shards[1][u.ShardOff[1]:u.ShardOff[1]+8])
	back := make([][]float32, len(sizes))
	for i, n := range sizes {
		back[i] = make([]float32, n)
	}
	require.NoError(t, u.Assemble(back, shards))
	assert.Equal(t, params, back)
}

func TestUnitsRejectBadInput(t *testing.T) {
	_, err := NewUnits([]int{1, 2}, []int{0}, 1, 0)
	assert.ErrorIs(t, err, ErrLayout)
	_, err = NewUnits(nil, nil, 1, 0)
	assert.ErrorIs(t, err, ErrLayout)
	_, err = NewUnits([]int{1, 0}, []int{0, 1}, 1, 0)
	assert.ErrorIs(t, err, ErrLayout)
	_, err = NewUnits([]int{1}, []int{0}, 0, 0)
	assert.ErrorIs(t, err, ErrLayout)
	u, err := NewUnits([]int{3}, []int{0}, 2, 0)
	require.NoError(t, err)
	assert.ErrorIs(t, u.Shard(0, make([]float32, 3), [][]float32{{1, 2, 3}}), ErrLayout)
	assert.ErrorIs(t, u.Shard(2, make([]float32, u.ShardLen), [][]float32{{1, 2, 3}}), ErrLayout)
	assert.ErrorIs(t, u.Shard(0, make([]float32, u.ShardLen), nil), ErrLayout)
	assert.ErrorIs(t, u.Assemble([][]float32{{1, 2, 3}}, [][]float32{make([]float32, u.ShardLen)}), ErrLayout)
}
