package stitch_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

// randomOps makes a workload of n ops from seed: mostly allocs and frees, with a periodic part
// (the same sizes again and again, as training does), iteration marks and rare EmptyCache/Reset.
func randomOps(seed uint64, n int) []op {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	script := make([]uint64, 1+rng.IntN(12))
	for i := range script {
		script[i] = sizeFor(rng.Uint64(), rng.Uint64())
	}
	ops := make([]op, 0, n)
	for len(ops) < n {
		var o op
		switch x := rng.IntN(100); {
		case x < 25:
			o = op{kind: opAlloc, size: script[rng.IntN(len(script))]}
		case x < 50:
			o = op{kind: opAlloc, size: sizeFor(rng.Uint64(), rng.Uint64())}
		case x < 96:
			o = op{kind: opFree, pick: rng.IntN(1 << 20)}
		case x < 97:
			o = op{kind: opMark}
		case x < 99:
			o = op{kind: opEmptyCache}
		default:
			o = op{kind: opReset}
		}
		if o.kind == opAlloc && seed%3 == 0 && rng.IntN(4) == 0 {
			o.stream = stitch.Stream(1 + rng.IntN(2))
		}
		ops = append(ops, o)
	}
	return ops
}

// TestPropertyRandomWorkloads runs seeded random workloads under a small capacity, checking every
// invariant and the physical disjointness of live blocks after every op. A failure names its seed;
// GMLAKE_SEED=N replays just that one.
func TestPropertyRandomWorkloads(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	n := 400
	if testing.Short() {
		seeds, n = seeds[:4], 200
	}
	if s := os.Getenv("GMLAKE_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seeds = []uint64{v}
	}
	for _, seed := range seeds {
		// Every seed with the handles the engine sizes, and the first four again with handles of
		// four chunks that several blocks share.
		for _, big := range []bool{false, true} {
			if big && seed > 4 {
				continue
			}
			t.Run(fmt.Sprintf("seed=%d/big-handles=%v", seed, big), func(t *testing.T) {
				capacity := uint64(64+seed%4*64) * MiB
				h := newHarness(t, []sim.Option{sim.WithCapacity(capacity), sim.WithEventDelay(int(seed % 3))},
					faultOptions(big, stitch.WithStitchBudget(int(2+seed%8), 0))...)
				h.run(randomOps(seed, n), func() string {
					return fmt.Sprintf("seed %d, big handles %v (GMLAKE_SEED=%d to replay)", seed, big, seed)
				})
				st := h.e.Stats()
				t.Logf("outcomes %v, driver calls %v, views %d", st.Outcomes, st.DriverCalls, st.StitchedBlocks)
				h.closeAndCheckLeaks()
			})
		}
	}
}

// FuzzEngine decodes bytes into a workload and runs it with every check on.
func FuzzEngine(f *testing.F) {
	f.Add([]byte{10, 1, 2, 200, 0, 0, 60, 3, 4, 80, 9, 9, 160, 0, 1, 30, 7, 7})
	f.Add([]byte{7, 0, 0, 15, 0, 0, 23, 0, 0, 150, 0, 0, 150, 0, 1, 6, 255, 255, 252, 0, 0})
	f.Add([]byte{47, 1, 1, 46, 2, 2, 45, 3, 3, 151, 0, 0, 48, 9, 9, 255, 0, 0, 47, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		ops := opsFromBytes(data)
		if len(ops) > 300 {
			ops = ops[:300]
		}
		// An odd first byte runs the input with handles of four chunks.
		big := len(data) > 0 && data[0]&1 == 1
		h := newHarness(t, []sim.Option{sim.WithCapacity(96 * MiB), sim.WithEventDelay(1)},
			faultOptions(big, stitch.WithStitchBudget(3, 0))...)
		h.run(ops, func() string { return fmt.Sprintf("fuzz input (big handles %v)", big) })
		h.closeAndCheckLeaks()
	})
}
