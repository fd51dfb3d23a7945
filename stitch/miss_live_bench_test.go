package stitch_test

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/gmlake/gmlake/stitch"
)

// numbersDriver is a Driver that only hands out numbers, so that BenchmarkMissLiveBlocks times the
// engine alone: the simulated device (driver/sim) keeps its mappings in lists it walks, its own
// cost, which grows with the handles mapped.
type numbersDriver struct{ next, reserved uint64 }

func (d *numbersDriver) Granularity() uint64 { return liveChunk }
func (d *numbersDriver) Create(uint64) (stitch.PhysHandle, error) {
	d.next++
	return stitch.PhysHandle(d.next), nil
}
func (d *numbersDriver) Release(stitch.PhysHandle) error { return nil }
func (d *numbersDriver) Reserve(size uint64) (uintptr, error) {
	base := uintptr(1<<44 + d.reserved) // ranges never overlap
	d.reserved += size
	return base, nil
}
func (d *numbersDriver) Free(uintptr, uint64) error                           { return nil }
func (d *numbersDriver) Map(uintptr, uint64, stitch.PhysHandle, uint64) error { return nil }
func (d *numbersDriver) Unmap(uintptr, uint64) error                          { return nil }
func (d *numbersDriver) SetAccess(uintptr, uint64) error                      { return nil }
func (d *numbersDriver) RecordEvent(stitch.Stream) (stitch.Event, error)      { return 1, nil }
func (d *numbersDriver) EventDone(stitch.Event) (bool, error)                 { return true, nil }
func (d *numbersDriver) DestroyEvent(stitch.Event) error                      { return nil }
func (d *numbersDriver) Synchronize() error                                   { return nil }
func (d *numbersDriver) MemInfo() (free, total uint64, err error)             { return 1 << 50, 1 << 50, nil }

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
	// keepLast: when the sizes start over (every sizeRound requests), the block of the last size
	// is taken again and kept live, since it would serve the smaller sizes that follow.
	keepLast bool
	// streams: the live blocks, their holes and the requests take turns over this many streams
	// (0: one).
	streams int
	want    stitch.Outcome
}

const (
	liveChunk = 2 << 20 // the live blocks' size: one chunk of the simulated device
	sizeRound = 1900    // requests of distinct sizes before the sizes start over
)

var missCases = []missCase{
	{
		// Smaller than the holes: the idle-window search splits a cached hole (findIdle).
		name: "split", spare: 64,
		size: func(k int) uint64 { return liveChunk - uint64(k%sizeRound+1)*512 },
		want: stitch.OutcomeSplit,
	},
	{
		// Larger than the holes can stitch, capacity left: new chunks. The handles are 64 MiB,
		// so that only a hole at a handle's end or start can join a view, as its first or last
		// piece: a view over holes reaches 4 MiB at most. Every request's memory is released again.
		name: "grow", spare: 64, emptyHoles: true,
		opts:  func(int) []stitch.Option { return []stitch.Option{stitch.WithHandleSize(64 << 20)} },
		size:  func(k int) uint64 { return 2*liveChunk + uint64(k%sizeRound+1)*512 },
		after: func(e *stitch.Engine) error { return e.EmptyCache() },
		want:  stitch.OutcomeNewChunks,
	},
	{
		// As grow, with a cached block elsewhere (a hole split for 1.5 MiB and freed again, untimed,
		// after each request): the stitch plan over the idle runs (idlePlan) is tried, falls short
		// (its bound on what the runs reach says so), and the cached block is flushed before new
		// chunks are made.
		name: "grow-cached", spare: 64, emptyHoles: true,
		opts: func(int) []stitch.Option { return []stitch.Option{stitch.WithHandleSize(64 << 20)} },
		size: func(k int) uint64 { return 2*liveChunk + uint64(k%sizeRound+1)*512 },
		after: func(e *stitch.Engine) error {
			if err := e.EmptyCache(); err != nil {
				return err
			}
			p, err := e.Alloc(liveChunk*3/4, 0)
			if err != nil {
				return err
			}
			return e.Free(p, liveChunk*3/4)
		},
		want: stitch.OutcomeNewChunks,
	},
	{
		// As split, over two streams: the live blocks, their holes and the requests take turns.
		// Whether a cached block is idle then depends on its stream's events.
		name: "split-streams", spare: 64, streams: 2,
		size: func(k int) uint64 { return liveChunk - uint64(k%sizeRound+1)*512 },
		want: stitch.OutcomeSplit,
	},
	{
		// Larger than any hole, at capacity: a view over two cached holes (idlePlan), each
		// request a little larger than the last so that the view before cannot serve it.
		name: "stitch", spare: 0, keepLast: true,
		size: func(k int) uint64 { return liveChunk + uint64(k%sizeRound+1)*512 },
		want: stitch.OutcomeStitch,
	},
}

// BenchmarkMissLiveBlocks measures a miss through the engine's public Alloc and Free with n live
// 2 MiB blocks, every tenth of them freed (holes), on one stream (two for split-streams), over
// numbersDriver: the slow path's time must not grow with the live blocks. Each case asks sizes of
// one kind (see missCases) and checks that every request missed the exact path with the case's
// outcome. Metrics: ns/miss (the Alloc alone, wall time) and cpu-ns/miss (its CPU time on Linux,
// which holds on a loaded machine). results/bench/MISS-LIVE.md has the figures: every case is
// flat.
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
	e, err := stitch.New(&numbersDriver{}, opts...)
	if err != nil {
		b.Fatal(err)
	}
	stream := func(i int) stitch.Stream { return stitch.Stream(i % max(1, c.streams)) }
	ptrs := make([]uintptr, n)
	for i := range ptrs {
		if ptrs[i], err = e.Alloc(liveChunk, stream(i)); err != nil {
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
	runtime.LockOSThread() // threadCPU reads this goroutine's thread
	defer runtime.UnlockOSThread()
	var cpu time.Duration // the Allocs' CPU time, where the system gives it
	// request makes the k-th request and frees it; it returns the time of the Alloc alone and the
	// request's outcome.
	request := func(k int) (time.Duration, stitch.OutcomeCounts) {
		size := c.size(k)
		before := e.Stats().Outcomes
		start := time.Now()
		cpu0, _ := threadCPU()
		p, err := e.Alloc(size, stream(k))
		cpu1, _ := threadCPU()
		took := time.Since(start)
		cpu += cpu1 - cpu0
		if err != nil {
			b.Fatal(err)
		}
		out := e.Stats().Outcomes
		if err := e.Free(p, size); err != nil {
			b.Fatal(err)
		}
		if c.after != nil {
			if err := c.after(e); err != nil {
				b.Fatal(err)
			}
		}
		return took, stitch.OutcomeCounts{Exact: out.Exact - before.Exact, Split: out.Split - before.Split,
			Stitch: out.Stitch - before.Stitch, NewChunks: out.NewChunks - before.NewChunks}
	}
	// The first request is not timed: it pays what the setup deferred (the room index catching up
	// with its blocks, O(log n) each). The collector is off while the misses are timed, so that the
	// garbage of the setup and of the untimed work (EmptyCache) is not collected on their account.
	request(0)
	cpu = 0
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var elapsed time.Duration
	var wrong stitch.OutcomeCounts
	timed := 0
	for k := 1; b.Loop(); k++ {
		if c.keepLast && k%sizeRound == 0 {
			// The sizes start over, and the block of the round's last size would serve them:
			// take it again, untimed, and keep it.
			if _, err := e.Alloc(c.size(k-1), stream(k-1)); err != nil {
				b.Fatal(err)
			}
			continue
		}
		took, out := request(k)
		elapsed += took
		timed++
		if out.Of(c.want) != 1 {
			wrong.Exact += out.Exact
			wrong.Split += out.Split
			wrong.Stitch += out.Stitch
			wrong.NewChunks += out.NewChunks
		}
	}
	if wrong.Total() > 0 {
		b.Fatalf("of %d misses, %d had outcome %v instead (exact %d, split %d, stitch %d, new %d)", timed, wrong.Total(), c.want,
			wrong.Exact, wrong.Split, wrong.Stitch, wrong.NewChunks)
	}
	if err := e.Check(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(max(1, timed)), "ns/miss")
	if _, ok := threadCPU(); ok {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(max(1, timed)), "cpu-ns/miss")
	}
}
