package memory

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake/reliability"
)

// TestConcurrentBlocksKeepTheirBytes: goroutines sharing one Allocator each hold many blocks at
// once (small, split, stitched), every block stamped with its own id across all its bytes and
// verified whole before it is put back and at the end. Two live blocks on the same bytes,
// whichever goroutines hold them, overwrite each other's stamps.
func TestConcurrentBlocksKeepTheirBytes(t *testing.T) {
	a := newHostAllocator(t, 512*g)
	var ids atomic.Uint64
	type held struct {
		m    tensor.Memory
		size int64
		id   uint64
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 17))
			var mine []held
			put := func(i int) bool {
				b := mine[i]
				ok := assert.True(t, reliability.Stamped(b.m.Uintptr(), uint64(b.size), b.id), "worker %d: block %d lost its bytes", w, b.id)
				ok = assert.NoError(t, a.Free(b.m, b.size)) && ok
				mine[i] = mine[len(mine)-1]
				mine = mine[:len(mine)-1]
				return ok
			}
			for range 300 {
				if len(mine) > 0 && (len(mine) >= 16 || rng.IntN(3) == 0) {
					if !put(rng.IntN(len(mine))) {
						return
					}
					continue
				}
				var size int64
				switch rng.IntN(4) {
				case 0:
					size = 1 + rng.Int64N(g)
				case 1:
					size = g + rng.Int64N(4*g)
				case 2:
					size = (1 + rng.Int64N(6)) * g
				default:
					size = 4*g + rng.Int64N(8*g)
				}
				m, err := a.Get(size)
				if !assert.NoError(t, err) {
					return
				}
				b := held{m: m, size: size, id: ids.Add(1)}
				reliability.Stamp(m.Uintptr(), uint64(size), b.id)
				mine = append(mine, b)
			}
			for len(mine) > 0 {
				if !put(len(mine) - 1) {
					return
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, a.Check())
	assert.Zero(t, a.Stats().LiveBytes)
}
