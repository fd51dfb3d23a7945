package memory

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConcurrentGetPut: goroutines sharing one Allocator each keep their blocks' stamps intact
// (run under -race).
func TestConcurrentGetPut(t *testing.T) {
	a := newHostAllocator(t, 256*g)
	sizes := []int64{700, g, 3*g + 5, 40000}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				size := sizes[(w+i)%len(sizes)]
				m, err := a.Get(size)
				if !assert.NoError(t, err) {
					return
				}
				b := view(m, uintptr(size))
				stamp(b, byte(w))
				if !assert.True(t, stamped(b, byte(w)), "worker %d step %d", w, i) {
					return
				}
				a.Put(m, size)
			}
		})
	}
	wg.Wait()
	require.NoError(t, a.Check())
	assert.Zero(t, a.Stats().LiveBytes)
	assert.Zero(t, a.Stats().PutRejections)
}
