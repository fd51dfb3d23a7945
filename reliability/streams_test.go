package reliability

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gmlake/gmlake/driver/host"
	"github.com/gmlake/gmlake/stitch"
)

// TestStreamGuardCatches: the guard itself sees an early reuse on another stream and an early
// release, and lets through what the stream order allows.
func TestStreamGuardCatches(t *testing.T) {
	a := []PhysRange{{Handle: 1, Offset: 0, Length: 4096}}
	g := NewStreamGuard()
	g.Freed(1, a)
	require.NoError(t, g.HandOut(1, 0x1000, a), "the same stream may reuse at once")
	require.ErrorIs(t, g.HandOut(2, 0x1000, a), ErrEarlyReuse)
	require.NoError(t, g.HandOut(2, 0x1000, []PhysRange{{Handle: 1, Offset: 4096, Length: 4096}}), "other bytes")
	g.Releasing(1)
	require.ErrorIs(t, g.Err(), ErrEarlyRelease)
	require.NoError(t, g.Err(), "Err forgets what it returned")

	g.Recorded(10, 1) // covers the free
	g.Freed(1, []PhysRange{{Handle: 2, Offset: 0, Length: 4096}})
	g.Recorded(11, 2) // another stream's event covers nothing of stream 1
	g.Done(11)
	require.ErrorIs(t, g.HandOut(2, 0x1000, a), ErrEarlyReuse)
	g.Done(10)
	require.NoError(t, g.HandOut(2, 0x1000, a), "the event recorded after the free completed")
	require.ErrorIs(t, g.HandOut(2, 0x2000, []PhysRange{{Handle: 2, Offset: 0, Length: 512}}), ErrEarlyReuse,
		"a free after the event is not covered by it")
	g.Synchronized()
	require.NoError(t, g.HandOut(2, 0x2000, []PhysRange{{Handle: 2, Offset: 0, Length: 512}}))
	g.Releasing(2)
	require.NoError(t, g.Err())
}

// streamProgram is the program of a seed with events that complete only when the program says so
// (set-up bits 4 and 5), and records drawn to use three streams, free often, complete single events and
// make the calls of stream ordering (Synchronize, events) fail now and then.
func streamProgram(seed uint64, ops int) []byte {
	rng := rand.New(rand.NewPCG(seed, 0x73747265))
	prog := []byte{byte(rng.Uint32()) | 0x30}
	for range ops {
		a, b := byte(rng.Uint32()), byte(rng.Uint32())
		var op byte
		switch r := rng.IntN(22); {
		case r < 7: // alloc on streams 0, 1, 2 of sizes up to big
			op = []byte{0, 4, 5}[rng.IntN(3)] | byte(rng.IntN(14))<<4
		case r < 13:
			op = 6 // free
		case r < 16:
			op = 14 | byte(4+rng.IntN(4))<<4 // complete one event
		case r == 16:
			op = 14 // complete every event
		case r == 17:
			op = 10 // EmptyCache
		case r == 18:
			op = 11 // Reset
			a = 0
		case r == 19:
			op = 14 | 8<<4 // mark
		default: // a fault in the calls of stream ordering
			op = 12
			a = byte([]stitch.CallKind{stitch.CallSynchronize, stitch.CallEventDone, stitch.CallRecordEvent, stitch.CallDestroyEvent}[rng.IntN(4)])
		}
		prog = append(prog, op, a, b)
	}
	return prog
}

// TestStreamOrdering runs seeded programs on three streams whose events complete only when the
// program completes them, one at a time or all at once: no byte freed on one stream may serve
// another before an event recorded after its free completed (or a Synchronize), and no physical
// memory holding such bytes may be released (the stream guard, in every Verify).
func TestStreamOrdering(t *testing.T) {
	seeds := 40
	if long() {
		seeds = 2000
	}
	total := 0
	for seed := range uint64(seeds) {
		n, err := RunProgram(streamProgram(seed, 400), programOptions())
		total += n
		tally.ops.Add(uint64(n))
		if err != nil {
			tally.violations.Add(1)
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
	t.Logf("%d operations verified", total)
}

// TestHostStreamOrdering drives the engine over real host memory whose streams run behind
// (events complete when the test says so, or after a latency): blocks on three streams, each
// stamped with its own bytes and verified before its free; the stream guard sees every call.
func TestHostStreamOrdering(t *testing.T) {
	for _, mode := range []string{"manual", "latency"} {
		t.Run(mode, func(t *testing.T) {
			opt := host.WithManualEvents()
			if mode == "latency" {
				opt = host.WithEventLatency(200 * time.Microsecond)
			}
			const g = 64 << 10
			d, err := host.New(host.WithGranularity(g), host.WithCapacity(512*g), opt)
			require.NoError(t, err)
			defer func() { require.NoError(t, d.Close()) }()
			tr := NewTracker(d)
			guard := NewStreamGuard()
			tr.Watch(guard)
			e, err := stitch.New(tr, stitch.WithSmallThreshold(g), stitch.WithMinStitch(g))
			require.NoError(t, err)
			rng := rand.New(rand.NewPCG(7, 18))
			type live struct {
				ptr    uintptr
				size   uint64
				stream stitch.Stream
				seed   byte
			}
			var blocks []live
			var buf []PhysRange
			resolve := func(p uintptr, size uint64) []PhysRange {
				var err error
				buf, err = tr.AppendResolve(buf[:0], p, size)
				require.NoError(t, err)
				return buf
			}
			crossed := 0
			for i := range 1500 {
				switch r := rng.IntN(10); {
				case r < 4 || len(blocks) == 0:
					size := randomRequest(rng, g)
					s := stitch.Stream(rng.IntN(3))
					p, err := e.Alloc(size, s)
					if errors.Is(err, stitch.ErrOutOfMemory) {
						continue
					}
					require.NoError(t, err)
					require.NoError(t, guard.HandOut(s, p, resolve(p, size)), "op %d", i)
					b := live{ptr: p, size: size, stream: s, seed: byte(rng.Uint32())}
					bs := hostBytes(p, size)
					for j := range bs {
						bs[j] = pattern(b.seed, j)
					}
					blocks = append(blocks, b)
				case r < 8:
					k := rng.IntN(len(blocks))
					b := blocks[k]
					for j, c := range hostBytes(b.ptr, b.size) {
						if c != pattern(b.seed, j) {
							require.Failf(t, "bytes lost", "op %d: block %#x (stream %d) byte %d overwritten", i, b.ptr, b.stream, j)
						}
					}
					guard.Freed(b.stream, resolve(b.ptr, b.size))
					require.NoError(t, e.Free(b.ptr, b.size))
					blocks[k] = blocks[len(blocks)-1]
					blocks = blocks[:len(blocks)-1]
				case r == 8 && mode == "manual":
					if evs := guard.Pending(); len(evs) > 0 {
						require.NoError(t, d.CompleteEvent(evs[rng.IntN(len(evs))]))
						crossed++
					}
				case r == 9 && rng.IntN(4) == 0:
					require.NoError(t, e.EmptyCache())
				}
				require.NoError(t, guard.Err(), "op %d", i)
			}
			require.NoError(t, e.Check())
			if mode == "manual" {
				assert.Positive(t, crossed, "events were completed one by one")
			}
			require.NoError(t, e.Close())
			t.Log(fmt.Sprintf("%d live blocks at Close, %d events completed by the test", len(blocks), crossed))
		})
	}
}
