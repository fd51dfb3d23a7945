package reliability

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/stitch"
)

// programOptions: every call kind may fail, and a fault may be armed while another is pending, so
// that one request meets two (a failure, then the failure of its rollback).
func programOptions() ProgramOptions { return ProgramOptions{MultiFault: true} }

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
	// Marked iterations: one shape replayed, a driver failure in a new request with a mark right
	// after it, then marks right after Reset and EmptyCache, each followed by replays.
	f.Add(markedProgram(0x01, false))
	f.Add(markedProgram(0x03, true)) // with a budget of four views, events delayed
	f.Fuzz(func(t *testing.T, prog []byte) {
		if _, err := RunProgram(prog, programOptions()); err != nil {
			t.Fatal(err)
		}
	})
}

// Records of programs (see RunProgram) for hand-written ones.
var (
	recMark         = []byte{0x8e, 0, 0}
	recMarkReplay   = []byte{0xce, 0, 0}
	recReset        = []byte{0x0b, 0, 0}
	recEmptyCache   = []byte{0x0a, 0, 0}
	recCompleteEvts = []byte{0x0e, 0, 0}
)

// iterationScript is the records of one iteration that starts with no live block: whole chunks, an
// odd large block, a split and a small block on stream 1 (when streams is set), frees out of order,
// an eight-chunk request stitched from the holes, and every block freed.
func iterationScript(streams bool) []byte {
	small := byte(0x20) // alloc, stream 0, small class
	if streams {
		small = 0x24 // stream 1
	}
	return []byte{
		0x70, 0, 1, // 2 chunks
		0x70, 0, 3, // 4 chunks
		0xa0, 0x40, 0, // 3 chunks, odd
		0x70, 0, 0, // 1 chunk
		0x40, 0, 5, // a split
		small, 0, 9,
		0x06, 0, 0, // free the first live block
		0x06, 0, 2,
		0xd0, 0, 4, // 8 chunks: a stitch
		0x06, 0, 1, // then every block, out of order: the next iteration starts from the same state
		0x06, 0, 0,
		0x06, 0, 2,
		0x06, 0, 0,
		0x06, 0, 0,
	}
}

// markedProgram is a program of marked iterations of one shape (set-up byte setup): the script,
// three replays, a fault in a request for new memory with a mark right after, replays, Reset and
// a mark, replays, EmptyCache, replays.
func markedProgram(setup byte, streams bool) []byte {
	prog := []byte{setup}
	add := func(recs ...[]byte) {
		for _, r := range recs {
			prog = append(prog, r...)
		}
	}
	add(recMark, iterationScript(streams), recMarkReplay, recMarkReplay, recMarkReplay)
	add([]byte{0x0c, byte(stitch.CallCreate), 0}, []byte{0xd0, 0, 15}, recMark, recMarkReplay, recMarkReplay)
	add([]byte{0x0c, byte(stitch.CallMap), 1}, recMarkReplay, recMark, recMarkReplay)
	add(recReset, recMark, recMarkReplay, recMarkReplay)
	add(recEmptyCache, recMarkReplay, recCompleteEvts, recMarkReplay)
	return prog
}

// TestProgramReplaysConverge: a program's replays repeat its iterations for real (every replayed
// operation is verified and counted), and an iteration of one shape repeated after marks makes no
// driver call from its third replay on, as the engine's memos promise.
func TestProgramReplaysConverge(t *testing.T) {
	prog := append([]byte{0x01}, recMark...)
	prog = append(prog, iterationScript(false)...)
	const replays = 5
	for range replays {
		prog = append(prog, recMarkReplay...)
	}
	var calls []uint64 // driver calls made by each replay
	var last uint64
	opts := programOptions()
	opts.OnOp = func(desc string, err error, h *Harness) {
		require.NoError(t, err, desc)
		if strings.HasPrefix(desc, "mark and replay") {
			calls = append(calls, h.Driver.TotalCalls()-last)
		}
		last = h.Driver.TotalCalls()
	}
	ops, err := RunProgram(prog, opts)
	require.NoError(t, err)
	tally.ops.Add(uint64(ops))
	records := (len(prog) - 1) / RecordSize
	assert.Equal(t, records+replays*(len(iterationScript(false))/RecordSize), ops, "every replayed operation verified")
	require.Len(t, calls, replays)
	t.Logf("driver calls per replay: %v", calls)
	for i, c := range calls[2:] {
		assert.Zero(t, c, "replay %d makes driver calls", i+2)
	}
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
