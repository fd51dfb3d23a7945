// Command steady-replay replays a trace through one simulated allocator (gmlake, gmlake-unmarked,
// gorgonia, caching, direct) in two parts: the setup and iterations 0-2 in warmPart, the steady
// iterations (3 on) in steadyPart, with the garbage collector stopped for the second. It prints
// the steady alloc+free pairs. It exists for an instruction counter, which then counts the steady
// iterations alone, the same whatever the machine's load:
//
//	valgrind --tool=callgrind --toggle-collect=main.steadyPart steady-replay TRACE ALLOCATOR
//
// and the instructions collected over the pairs printed are the steady instructions per pair
// (results/bench/STEADY-CPU.md).
//
// With -evict BYTES, every request of the steady part is preceded by a write to each cache line
// of a buffer of that many bytes (in evict, not in the allocator), as the executor's work between
// two requests evicts the allocator's data from the caches on a GPU host. Under a cache simulator
// the allocator's misses then count the cache lines a request touches. -warm-only stops after
// the warm part, for counting by difference:
//
//	GOGC=off valgrind --tool=callgrind --cache-sim=yes steady-replay -evict 4194304 TRACE ALLOCATOR
//	GOGC=off valgrind --tool=callgrind --cache-sim=yes steady-replay -evict 4194304 -warm-only TRACE ALLOCATOR
//
// The first run's totals less the second's, less evict's own, are the steady part's.
//
// With -time, the wall time inside the allocator's calls of the steady part (Alloc, Free,
// MarkIteration) is summed and printed per pair: with -evict, what a request costs when the
// caches hold what the executor's work left there (results/bench/STEADY-CPU.md, "Wall time,
// caches evicted"). With -repeat N the trace's iterations are played N times
// (trace.RepeatIterations) and the steady part is every repetition after the first: more pairs,
// for a steadier time. With -split (and -time) the time is also given by kind of call: Free, and
// for gmlake Alloc apart by outcome, exact matches and the rest (splits and re-carves of a cached
// place, stitches, new memory), the outcome read from the engine's statistics after the call, out
// of the time measured and before the next eviction.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"time"

	"github.com/gmlake/gmlake/baseline"
	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/stitch"
	"github.com/gmlake/gmlake/trace"
)

func main() {
	evictBytes := flag.Int("evict", 0, "bytes of a buffer written before every steady request, to evict the allocator's data from the caches")
	warmOnly := flag.Bool("warm-only", false, "stop after the setup and the warm-up iterations")
	stride := flag.Int("evict-stride", 64, "bytes between the writes of -evict: 64 writes every cache line, 4096 one line per page (the pages' translations are evicted, few lines)")
	timed := flag.Bool("time", false, "print the wall time inside the allocator's calls per steady pair")
	split := flag.Bool("split", false, "with -time, print the time per call by kind: free, and for gmlake alloc by outcome (exact match or not)")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the steady part to this file (go tool pprof)")
	repeat := flag.Int("repeat", 1, "play the trace's iterations this many times; the steady part is then every repetition after the first")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: steady-replay [-evict BYTES] [-evict-stride BYTES] [-warm-only] [-time [-split]] [-repeat N] [-cpuprofile FILE] TRACE ALLOCATOR")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 2 || *evictBytes < 0 || *repeat < 1 || *stride < 1 || *split && !*timed {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), flag.Arg(1), *evictBytes, *stride, *repeat, *warmOnly, *timed, *split, *profile); err != nil {
		fmt.Fprintln(os.Stderr, "steady-replay:", err)
		os.Exit(1)
	}
}

func run(path, name string, evictBytes, stride, repeat int, warmOnly, timed, split bool, profile string) error {
	t, err := bench.Load(path)
	if err != nil {
		return err
	}
	steadyFrom := int64(bench.SteadyFrom)
	if repeat > 1 {
		rep, err := trace.RepeatIterations(t, repeat)
		if err != nil {
			return err
		}
		t, steadyFrom = rep.Trace, rep.IterStride
	}
	p, err := bench.Prepare(path, t)
	if err != nil {
		return err
	}
	spec, err := bench.SimSpec(name)
	if err != nil {
		return err
	}
	a, err := spec.New(0)
	if err != nil {
		return err
	}
	defer a.Close()
	ops := p.Ops()
	cut := len(ops)
	for i, o := range ops {
		if o.Kind == trace.Iter && int64(o.Slot) >= steadyFrom {
			cut = i
			break
		}
	}
	r := &replayer{a: a, ptrs: make([]uintptr, p.Slots())}
	r.marker, _ = a.(baseline.IterationMarker)
	if g, ok := a.(interface{ Engine() *stitch.Engine }); ok && split {
		r.engine = g.Engine()
	}
	if _, err := warmPart(r, ops[:cut]); err != nil {
		return err
	}
	if warmOnly {
		fmt.Println("steady pairs 0")
		return nil
	}
	debug.SetGCPercent(-1)
	r.evict, r.stride = make([]byte, evictBytes), stride
	r.timed = timed
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	pairs, err := steadyPart(r, ops[cut:])
	if profile != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return err
	}
	fmt.Println("steady pairs", pairs)
	if timed && pairs > 0 {
		fmt.Printf("steady ns per pair %.1f\n", float64(r.inside)/float64(pairs))
		if split {
			r.printSplit()
		}
	}
	return nil
}

// replayer is the allocator replayed through, the address of each live allocation by slot, and
// the buffer written before each request (-evict; empty in the warm part), and with -time the
// wall time summed inside the allocator's calls of the steady part.
type replayer struct {
	a      baseline.Allocator
	marker baseline.IterationMarker
	ptrs   []uintptr
	evict  []byte
	stride int
	timed  bool
	inside time.Duration
	// -split: the engine whose outcomes tell an exact match (gmlake only), and the time and count
	// of each kind of call.
	engine                         *stitch.Engine
	exactTime, otherTime, freeTime time.Duration
	exacts, others, frees          int
}

// printSplit prints the time per call by kind (-split).
func (r *replayer) printSplit() {
	per := func(d time.Duration, n int) float64 {
		if n == 0 {
			return 0
		}
		return float64(d) / float64(n)
	}
	if r.engine != nil {
		fmt.Printf("steady alloc exact %d x %.0f ns, other %d x %.0f ns\n", r.exacts, per(r.exactTime, r.exacts), r.others, per(r.otherTime, r.others))
	} else {
		fmt.Printf("steady alloc %d x %.0f ns\n", r.others, per(r.otherTime, r.others))
	}
	fmt.Printf("steady free %d x %.0f ns\n", r.frees, per(r.freeTime, r.frees))
}

// exactSoFar is the engine's count of exact matches (-split with gmlake), else 0.
func (r *replayer) exactSoFar() uint64 {
	if r.engine == nil {
		return 0
	}
	return r.engine.Stats().Outcomes.Of(stitch.OutcomeExact)
}

// warmPart replays ops, the setup and the warm-up iterations.
//
//go:noinline
func warmPart(r *replayer, ops []bench.Op) (int, error) { return r.replay(ops) }

// steadyPart replays ops, the steady iterations: what an instruction counter counts.
//
//go:noinline
func steadyPart(r *replayer, ops []bench.Op) (int, error) { return r.replay(ops) }

// replay plays ops through the allocator and returns the allocations made.
func (r *replayer) replay(ops []bench.Op) (int, error) {
	pairs := 0
	exact := r.exactSoFar()
	for i, o := range ops {
		if len(r.evict) > 0 && o.Kind != trace.Iter {
			evict(r.evict, r.stride)
		}
		var t0 time.Time
		if r.timed {
			t0 = time.Now()
		}
		switch o.Kind {
		case trace.Alloc:
			ptr, err := r.a.Alloc(o.Size, o.Stream)
			if d := r.clock(t0); r.timed {
				if r.exactSoFar() != exact {
					r.exactTime += d
					r.exacts++
				} else {
					r.otherTime += d
					r.others++
				}
				exact = r.exactSoFar()
			}
			if err != nil {
				return pairs, fmt.Errorf("event %d: alloc %d bytes: %w", i, o.Size, err)
			}
			r.ptrs[o.Slot] = ptr
			pairs++
		case trace.Free:
			err := r.a.Free(r.ptrs[o.Slot], o.Size)
			if d := r.clock(t0); r.timed {
				r.freeTime += d
				r.frees++
			}
			if err != nil {
				return pairs, fmt.Errorf("event %d: free %d bytes: %w", i, o.Size, err)
			}
		case trace.Iter:
			if r.marker != nil {
				r.marker.MarkIteration()
				r.clock(t0)
			}
		}
	}
	return pairs, nil
}

// clock adds the time since t0, a call's start, to the time inside the allocator (-time) and
// returns it.
func (r *replayer) clock(t0 time.Time) time.Duration {
	if !r.timed {
		return 0
	}
	d := time.Since(t0)
	r.inside += d
	return d
}

// evict writes one byte every stride bytes of buf.
//
//go:noinline
func evict(buf []byte, stride int) {
	for i := 0; i < len(buf); i += stride {
		buf[i]++
	}
}
