package stitch_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/gmlake/gmlake/driver/sim"
	"github.com/gmlake/gmlake/stitch"
)

// missCase is one kind of miss BenchmarkMissLiveBlocks times: how the engine is set up around the
// live blocks, the request sizes (a fresh size per request, so that the exact path cannot answer),
// and the outcome every miss must have.
type missCase struct {
	name string
	// opts configure an engine of live×2 MiB blocks; spare is the capacity beyond them, in chunks.
	opts  func(live int) []stitch.Option
	spare int
	// emptyHoles gives the freed blocks' bytes back to the loose memory before the loop (EmptyCache).
	emptyHoles bool
	size       func(k int) uint64
	// after runs, untimed, after each request is freed.
	after func(e *stitch.Engine) error
	want  stitch.Outcome
}

const liveChunk = 2 << 20 // the live blocks' size: one chunk of the simulated device

var missCases = []missCase{
	{
		// Smaller than the holes: the idle-window search splits a cached hole (findIdle).
		name: "split", spare: 64,
		size: func(k int) uint64 { return liveChunk - uint64(k%1900+1)*512 },
		want: stitch.OutcomeSplit,
	},
	{
		// Larger than the holes can stitch, capacity left: new chunks. The handles are 64 MiB,
		// so that only a hole at a handle's end or start can join a view, as its first or last
		// piece: a view over holes reaches 4 MiB at most. Every request's memory is released again.
		name: "grow", spare: 64, emptyHoles: true,
		opts:  func(int) []stitch.Option { return []stitch.Option{stitch.WithHandleSize(64 << 20)} },
		size:  func(k int) uint64 { return 2*liveChunk + uint64(k%1900+1)*512 },
		after: func(e *stitch.Engine) error { return e.EmptyCache() },
		want:  stitch.OutcomeNewChunks,
	},
	{
		// Larger than any hole, at capacity: a view over two cached holes (idlePlan), each
		// request a little larger than the last so that the view before cannot serve it.
		name: "stitch", spare: 0,
		size: func(k int) uint64 { return liveChunk + uint64(k%1900+1)*512 },
		want: stitch.OutcomeStitch,
	},
}

// BenchmarkMissLiveBlocks measures a miss through the engine's public Alloc and Free with n live
// 2 MiB blocks, every tenth of them freed (holes), on the simulated device and one stream: the slow
// path's time must not grow with the live blocks. Each case asks sizes of one kind (see missCases)
// and checks that every request missed the exact path with the case's outcome. Metric: ns/miss
// (the Alloc alone).
func BenchmarkMissLiveBlocks(b *testing.B) {
	for _, c := range missCases {
		for _, n := range []int{1000, 10000, 100000} {
			b.Run(fmt.Sprintf("%s/live=%d", c.name, n), func(b *testing.B) { benchLiveMiss(b, c, n) })
		}
	}
}

func benchLiveMiss(b *testing.B, c missCase, n int) {
	capacity := uint64(n+c.spare) * liveChunk
	// One growth makes the arena the blocks are carved from.
	opts := []stitch.Option{stitch.WithCapacity(capacity), stitch.WithWarmupGrowth(uint64(n) * liveChunk)}
	if c.opts != nil {
		opts = append(opts, c.opts(n)...)
	}
	e, err := stitch.New(sim.New(sim.WithCapacity(capacity)), opts...)
	if err != nil {
		b.Fatal(err)
	}
	ptrs := make([]uintptr, n)
	for i := range ptrs {
		if ptrs[i], err = e.Alloc(liveChunk, 0); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < n; i += 10 {
		if err := e.Free(ptrs[i], liveChunk); err != nil {
			b.Fatal(err)
		}
	}
	if c.emptyHoles {
		if err := e.EmptyCache(); err != nil {
			b.Fatal(err)
		}
	}
	// request times one miss of the k-th size; the rest of its round (Free, after) is untimed.
	request := func(k int) time.Duration {
		size := c.size(k)
		start := time.Now()
		p, err := e.Alloc(size, 0)
		took := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Free(p, size); err != nil {
			b.Fatal(err)
		}
		if c.after != nil {
			if err := c.after(e); err != nil {
				b.Fatal(err)
			}
		}
		return took
	}
	// The first miss pays what the setup deferred (the room index catching up with its blocks,
	// O(log n) each); it is not timed, nor is the setup's garbage collected on the misses' account.
	request(0)
	runtime.GC()
	before := e.Stats().Outcomes
	var elapsed time.Duration
	k := 1
	for b.Loop() {
		elapsed += request(k)
		k++
	}
	k-- // misses timed
	after := e.Stats().Outcomes
	if got := after.Of(c.want) - before.Of(c.want); got != uint64(k) {
		b.Fatalf("%d of %d misses had outcome %v (exact %d, split %d, stitch %d, new %d)", got, k, c.want,
			after.Exact-before.Exact, after.Split-before.Split, after.Stitch-before.Stitch, after.NewChunks-before.NewChunks)
	}
	if err := e.Check(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(max(1, k)), "ns/miss")
}
