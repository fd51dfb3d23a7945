package memory

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/gmlake/gmlake/stitch"
)

// TestRandomWorkloadKeepsBlocksDisjoint runs random Get/Free sequences on real memory. Every live
// block is stamped with its own marks (one every 512 bytes, the engine's unit, and its last byte);
// after every operation Check must pass and every live block must still hold its marks, so no
// part of a block is ever handed to another live block. A failure prints the seed;
// GMLAKE_SEED=n replays it.
func TestRandomWorkloadKeepsBlocksDisjoint(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4, 5, 6}
	if s := os.Getenv("GMLAKE_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
		seeds = []uint64{n}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			if !runRandomWorkload(t, seed, 500) {
				t.Logf("replay with GMLAKE_SEED=%d go test -run TestRandomWorkloadKeepsBlocksDisjoint ./memory", seed)
			}
		})
	}
}

type liveBlock struct {
	mem  tensor.Memory
	size int64
	seed byte
}

func runRandomWorkload(t *testing.T, seed uint64, steps int) bool {
	a := newHostAllocator(t, 96*g)
	rng := rand.New(rand.NewPCG(seed, 0))
	var live []liveBlock
	for step := range steps {
		if len(live) > 0 && (rng.IntN(5) < 2 || len(live) > 24) {
			i := rng.IntN(len(live))
			b := live[i]
			if !assert.NoError(t, a.Free(b.mem, b.size), "step %d", step) {
				return false
			}
			live = append(live[:i], live[i+1:]...)
		} else {
			size := randomSize(rng)
			m, err := a.Get(size)
			if errors.Is(err, stitch.ErrOutOfMemory) {
				continue
			}
			if !assert.NoError(t, err, "step %d: get %d", step, size) {
				return false
			}
			b := liveBlock{mem: m, size: size, seed: byte(rng.Uint32())}
			stamp(view(m, uintptr(size)), b.seed)
			live = append(live, b)
		}
		if !assert.NoError(t, a.Check(), "step %d", step) {
			return false
		}
		for i, b := range live {
			if !stamped(view(b.mem, uintptr(b.size)), b.seed) {
				t.Errorf("step %d: live block %d (%d bytes at %#x) was overwritten", step, i, b.size, b.mem.Uintptr())
				return false
			}
		}
	}
	for _, b := range live {
		require.NoError(t, a.Free(b.mem, b.size))
	}
	return true
}

// randomSize mixes small requests, granule multiples and odd large sizes.
func randomSize(rng *rand.Rand) int64 {
	switch rng.IntN(3) {
	case 0:
		return 1 + rng.Int64N(g)
	case 1:
		return g * (1 + rng.Int64N(8))
	default:
		return 1 + rng.Int64N(10*g)
	}
}

// stamp marks every 512th byte of b and its last byte with seed-derived values.
func stamp(b []byte, seed byte) {
	for i := 0; i < len(b); i += 512 {
		b[i] = seed ^ byte(i>>9)
	}
	if (len(b)-1)%512 != 0 {
		b[len(b)-1] = ^seed
	}
}

// stamped reports whether b still holds the marks stamp wrote.
func stamped(b []byte, seed byte) bool {
	for i := 0; i < len(b); i += 512 {
		if b[i] != seed^byte(i>>9) {
			return false
		}
	}
	return (len(b)-1)%512 == 0 || b[len(b)-1] == ^seed
}
