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
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/gmlake/gmlake/baseline"
	"github.com/gmlake/gmlake/bench"
	"github.com/gmlake/gmlake/trace"
)

func main() {
	evictBytes := flag.Int("evict", 0, "bytes of a buffer written before every steady request, to evict the allocator's data from the caches")
	warmOnly := flag.Bool("warm-only", false, "stop after the setup and the warm-up iterations")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: steady-replay [-evict BYTES] [-warm-only] TRACE ALLOCATOR")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 2 || *evictBytes < 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), flag.Arg(1), *evictBytes, *warmOnly); err != nil {
		fmt.Fprintln(os.Stderr, "steady-replay:", err)
		os.Exit(1)
	}
}

func run(path, name string, evictBytes int, warmOnly bool) error {
	t, err := bench.Load(path)
	if err != nil {
		return err
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
		if o.Kind == trace.Iter && int(o.Slot) >= bench.SteadyFrom {
			cut = i
			break
		}
	}
	r := &replayer{a: a, ptrs: make([]uintptr, p.Slots())}
	r.marker, _ = a.(baseline.IterationMarker)
	if _, err := warmPart(r, ops[:cut]); err != nil {
		return err
	}
	if warmOnly {
		fmt.Println("steady pairs 0")
		return nil
	}
	debug.SetGCPercent(-1)
	r.evict = make([]byte, evictBytes)
	pairs, err := steadyPart(r, ops[cut:])
	if err != nil {
		return err
	}
	fmt.Println("steady pairs", pairs)
	return nil
}

// replayer is the allocator replayed through, the address of each live allocation by slot, and
// the buffer written before each request (-evict; empty in the warm part).
type replayer struct {
	a      baseline.Allocator
	marker baseline.IterationMarker
	ptrs   []uintptr
	evict  []byte
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
	for i, o := range ops {
		if len(r.evict) > 0 && o.Kind != trace.Iter {
			evict(r.evict)
		}
		switch o.Kind {
		case trace.Alloc:
			ptr, err := r.a.Alloc(o.Size, o.Stream)
			if err != nil {
				return pairs, fmt.Errorf("event %d: alloc %d bytes: %w", i, o.Size, err)
			}
			r.ptrs[o.Slot] = ptr
			pairs++
		case trace.Free:
			if err := r.a.Free(r.ptrs[o.Slot], o.Size); err != nil {
				return pairs, fmt.Errorf("event %d: free %d bytes: %w", i, o.Size, err)
			}
		case trace.Iter:
			if r.marker != nil {
				r.marker.MarkIteration()
			}
		}
	}
	return pairs, nil
}

// evict writes one byte of each cache line of buf.
//
//go:noinline
func evict(buf []byte) {
	for i := 0; i < len(buf); i += 64 {
		buf[i]++
	}
}
