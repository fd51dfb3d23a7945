package traincmd

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/gpu"
	"github.com/gmlake/gmlake/stitch"
)

// slowPool takes a millisecond per request and fails requests over a mebibyte.
type slowPool struct{ bumpPool }

var errTooLarge = errors.New("too large")

func (p *slowPool) Alloc(size uint64, s stitch.Stream) (uintptr, error) {
	time.Sleep(time.Millisecond)
	if size > 1<<20 {
		return 0, errTooLarge
	}
	return p.bumpPool.Alloc(size, s)
}

func (p *slowPool) Free(ptr uintptr, size uint64) error {
	time.Sleep(time.Millisecond)
	return p.bumpPool.Free(ptr, size)
}

// TestAllocClockTimesEveryCall: every Alloc and Free is counted and timed, failures included and
// passed on unchanged, and the pool's other methods and the iteration hint pass through.
func TestAllocClockTimesEveryCall(t *testing.T) {
	p := &slowPool{}
	c := NewAllocClock(p)
	ptr, err := c.Alloc(1<<20, 0)
	require.NoError(t, err)
	require.NoError(t, c.Free(ptr, 1<<20))
	_, err = c.Alloc(2<<20, 0)
	require.ErrorIs(t, err, errTooLarge)
	spent, calls := c.Spent()
	assert.Equal(t, uint64(3), calls)
	assert.GreaterOrEqual(t, spent, 3*time.Millisecond)
	assert.Equal(t, "bump", c.Name())
	var a gpu.Allocator = c
	m, ok := a.(interface{ MarkIteration() })
	require.True(t, ok, "the Device finds the iteration hint through the clock")
	m.MarkIteration()
	assert.Equal(t, 1, p.marks, "and it reaches the pool")
}
