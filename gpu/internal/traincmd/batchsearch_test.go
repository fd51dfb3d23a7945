package traincmd

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gmlake/gmlake/stitch"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLargestBatchFindsTheEdge(t *testing.T) {
	for _, limit := range []int{4, 5, 9, 37, 100, 1000} {
		var tried []int
		lo, hi, finished, err := LargestBatch(4, 8, time.Now().Add(time.Minute), func(b int) (bool, error) {
			tried = append(tried, b)
			return b <= limit, nil
		})
		require.NoError(t, err)
		assert.True(t, finished, "limit %d", limit)
		assert.Equal(t, limit, lo, "largest that fits, tried %v", tried)
		assert.Equal(t, limit+1, hi, "smallest that does not, tried %v", tried)
		assert.Less(t, len(tried), 30, "limit %d: tried %v", limit, tried)
	}
}

func TestLargestBatchFromAGuessAboveTheEdge(t *testing.T) {
	lo, hi, finished, err := LargestBatch(2, 64, time.Now().Add(time.Minute), func(b int) (bool, error) { return b <= 3, nil })
	require.NoError(t, err)
	assert.True(t, finished)
	assert.Equal(t, [2]int{3, 4}, [2]int{lo, hi})
}

func TestLargestBatchStopsAtTheDeadline(t *testing.T) {
	calls := 0
	lo, hi, finished, err := LargestBatch(4, 8, time.Now().Add(-time.Second), func(int) (bool, error) { calls++; return true, nil })
	require.NoError(t, err)
	assert.False(t, finished)
	assert.Equal(t, [2]int{4, 0}, [2]int{lo, hi})
	assert.Zero(t, calls)
}

func TestLargestBatchReturnsTheTryError(t *testing.T) {
	boom := errors.New("boom")
	_, _, finished, err := LargestBatch(4, 8, time.Now().Add(time.Minute), func(b int) (bool, error) {
		if b > 20 {
			return false, boom
		}
		return true, nil
	})
	require.ErrorIs(t, err, boom)
	assert.False(t, finished)
}

func TestBatchCell(t *testing.T) {
	assert.Equal(t, "–", BatchCell(0, 0))
	assert.Equal(t, "≥ 12", BatchCell(12, 0))
	assert.Equal(t, "12 (20 fails; search cut)", BatchCell(12, 20))
	assert.Equal(t, "12", BatchCell(12, 13))
}

func TestFirstBatch(t *testing.T) {
	// 1 GiB of weights, 4 samples peaking at 5 GiB live: 1 GiB a sample; 41 GiB of capacity holds 40.
	assert.Equal(t, 40, FirstBatch(4, 5<<30, 1<<30, 41<<30))
	assert.Equal(t, 5, FirstBatch(4, 5<<30, 1<<30, 2<<30), "never the batch known to fit")
	assert.Equal(t, 8, FirstBatch(4, 1<<30, 1<<30, 41<<30), "no activation bytes: twice the batch")
	assert.Equal(t, 8, FirstBatch(4, 5<<30, 1<<30, 1<<30), "no room: twice the batch")
}

func TestFitsShapesTriesLargestSmallestLargest(t *testing.T) {
	var tried []int
	ok, err := FitsShapes([]int{320, 128, 224}, func(s int) error { tried = append(tried, s); return nil })
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, []int{320, 128, 320}, tried)
}

func TestFitsShapesOutOfMemoryIsNo(t *testing.T) {
	var tried []int
	ok, err := FitsShapes([]int{64, 512}, func(s int) error {
		tried = append(tried, s)
		if len(tried) == 3 { // the large shape after the small one's caches
			return fmt.Errorf("step at %d: %w", s, stitch.ErrOutOfMemory)
		}
		return nil
	})
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Equal(t, []int{512, 64, 512}, tried)
}

func TestFitsShapesOtherErrorEndsTheSearch(t *testing.T) {
	boom := errors.New("launch failed")
	calls := 0
	ok, err := FitsShapes([]int{8}, func(int) error { calls++; return boom })
	require.ErrorIs(t, err, boom)
	assert.False(t, ok)
	assert.Equal(t, 1, calls)
}
