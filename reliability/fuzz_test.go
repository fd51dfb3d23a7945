package reliability

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/stitch"
)

// programOptions leaves out the faults of known engine bugs unless GMLAKE_STRICT=1: no DestroyEvent
// fault, and never two faults pending at once (a failure whose rollback fails too).
func programOptions() ProgramOptions {
	if strict() {
		return ProgramOptions{MultiFault: true}
	}
	return ProgramOptions{NoFaults: []stitch.CallKind{stitch.CallDestroyEvent}}
}

// randomProgram is the program of a seed: a set-up byte and ops records of random bytes.
func randomProgram(seed uint64, ops int) []byte {
	rng := rand.New(rand.NewPCG(seed, 0x6d6c616b))
	prog := make([]byte, 1+ops*RecordSize)
	for i := range prog {
		prog[i] = byte(rng.Uint32())
	}
	return prog
}

// FuzzProgram runs byte strings as operation sequences (see RunProgram) with a full verification
// after every operation and a leak check after Close.
func FuzzProgram(f *testing.F) {
	for seed := range uint64(8) {
		f.Add(randomProgram(seed, 64))
	}
	// Eight whole chunks, every other one freed, then an eight-chunk request: a stitch.
	stitchy := []byte{0x01}
	for range 8 {
		stitchy = append(stitchy, 0x70, 0, 0)
	}
	for i := range 4 {
		stitchy = append(stitchy, 0x06, 0, byte(i))
	}
	stitchy = append(stitchy, 0xd0, 0, 4, 0x0c, byte(stitch.CallMap), 1, 0xd0, 0, 4, 0x0a, 0, 0)
	f.Add(stitchy)
	f.Fuzz(func(t *testing.T, prog []byte) {
		if _, err := RunProgram(prog, programOptions()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSimulation runs seeded random programs (TigerBeetle-style): GMLAKE_SEED=n replays one seed;
// GMLAKE_SIM_DURATION=20m runs new seeds until the time is up and reports the operations verified.
// A failure prints the seed that replays it.
func TestSimulation(t *testing.T) {
	const opsPerSeed = 2000
	seeds := []uint64{1, 2, 3, 4}
	var deadline time.Time
	if s := os.Getenv("GMLAKE_SEED"); s != "" {
		var n uint64
		_, err := fmt.Sscan(s, &n)
		require.NoError(t, err)
		seeds = []uint64{n}
	} else if d := os.Getenv("GMLAKE_SIM_DURATION"); d != "" {
		dur, err := time.ParseDuration(d)
		require.NoError(t, err)
		deadline = time.Now().Add(dur)
	}
	start := time.Now()
	total := 0
	run := func(seed uint64) bool {
		n, err := RunProgram(randomProgram(seed, opsPerSeed), programOptions())
		total += n
		tally.ops.Add(uint64(n))
		if err != nil {
			tally.violations.Add(1)
			t.Errorf("seed %d: %v\nreplay: GMLAKE_SEED=%d go test -run TestSimulation ./reliability", seed, err, seed)
			return false
		}
		return true
	}
	if deadline.IsZero() {
		for _, seed := range seeds {
			run(seed)
		}
	} else {
		base := uint64(time.Now().UnixNano())
		for i := uint64(0); time.Now().Before(deadline); i++ {
			if !run(base + i) {
				break
			}
		}
	}
	el := time.Since(start)
	t.Logf("simulation: %d operations verified in %s (%.0f ops/s)", total, el.Round(time.Millisecond), float64(total)/el.Seconds())
	fmt.Printf("simulation: ops=%d duration=%s ops/s=%.0f\n", total, el.Round(time.Second), float64(total)/el.Seconds())
}
