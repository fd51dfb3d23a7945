package reliability

import (
	"github.com/gmlake/gmlake/stitch"
	"github.com/gmlake/gmlake/trace"
)

// TracePrefix turns the first n allocation and free events of tr into Ops, then releases memory the
// ways a training job does: EmptyCache, Reset, a second allocation of the first blocks (served from
// what is cached), EmptyCache again. The harness's Close comes after.
func TracePrefix(tr *trace.Trace, n int) []Op {
	var ops []Op
	var allocs []Op
	for _, ev := range tr.Events {
		if len(ops) == n {
			break
		}
		switch ev.Kind {
		case trace.Alloc:
			op := Op{Kind: OpAlloc, ID: ev.ID, Size: ev.Size, Stream: stitch.Stream(ev.Stream)}
			ops = append(ops, op)
			allocs = append(allocs, op)
		case trace.Free:
			ops = append(ops, Op{Kind: OpFree, ID: ev.ID})
		}
	}
	ops = append(ops, Op{Kind: OpEmptyCache}, Op{Kind: OpReset})
	for _, a := range allocs[:min(len(allocs), 16)] {
		ops = append(ops, a)
	}
	return append(ops, Op{Kind: OpEmptyCache})
}

// StitchHeavy is a synthetic workload for granularity g (the engine's default small threshold, 256
// KiB: of its four "small" requests the 512 and 700 KiB ones are large) that reaches every path of
// the engine: sixteen one-chunk blocks from sixteen driver allocations, every other one freed so
// that an eight-chunk request is stitched from eight pieces of eight allocations (eight Map calls);
// exact reuse of that view; odd sizes that stitch with a head and a tail; the small pool; a second
// and a third stream (events recorded at free, flushes that wait for them); growth combined with
// free memory; EmptyCache with live blocks, Reset, and growth into the holes EmptyCache left.
func StitchHeavy(g uint64) []Op {
	var sc script
	alloc, free, do := sc.alloc, sc.free, sc.do
	var chunks []int64
	for range 16 {
		chunks = append(chunks, alloc(g, 0))
	}
	for i := 0; i < 16; i += 2 {
		free(chunks[i])
	}
	big := alloc(8*g, 0) // eight pieces, eight maps
	free(big)
	big = alloc(8*g, 0) // exact reuse of the view
	free(big)
	part := alloc(3*g+512, 0) // a window of the cached view, or a new stitch
	odd := alloc(g+g/2, 0)
	free(part)
	smalls := []int64{alloc(100, 0), alloc(4096, 0), alloc(700<<10, 0), alloc(512<<10, 0)}
	free(smalls[1], smalls[0])
	other := []int64{alloc(g/2, 1), alloc(2*g, 1), alloc(5*g+4096, 1)} // a second stream: events
	free(other...)
	free(odd)
	again := []int64{alloc(2*g, 0), alloc(5*g+4096, 0), alloc(g/2, 0)} // wait for stream 1's events
	third := alloc(3*g, 2)
	free(third)
	for i := 1; i < 16; i += 4 {
		free(chunks[i])
	}
	grown := alloc(24*g+1, 0) // more than is free: new chunks stitched with free memory
	do(OpEmptyCache)
	free(grown)
	free(again...)
	free(smalls[2], smalls[3])
	do(OpEmptyCache)
	after := []int64{alloc(3*g, 0), alloc(g, 1), alloc(300<<10, 0)} // regrow into holes
	free(after[1])
	do(OpReset)
	last := alloc(4*g, 0)
	free(last)
	do(OpEmptyCache)
	return sc.ops
}

// ShapedIterations is a synthetic training run for granularity g, marked the way a training loop
// marks it: resident weights, then iterations of two shapes (activations scaling with a length n
// of 2 or 3, freed out of order so that later requests stitch; temporaries on a second stream) in
// the order 2, 3, 2, 3, each after a MarkIteration; then EmptyCache and two more; then Reset and
// one more (after a mark: an iteration whose memo's places were all released); EmptyCache last.
// Iterations of a shape seen before follow the engine's memo of it, so faults land in the
// iterations that make driver calls and the ones after replay around what the fault left.
func ShapedIterations(g uint64) []Op {
	var sc script
	alloc, free, do := sc.alloc, sc.free, sc.do
	iteration := func(n uint64) {
		do(OpMark)
		var acts []int64
		for i := range uint64(6) {
			acts = append(acts, alloc((3+i%3)*n*g/2, 0)) // saved activations
			free(alloc(2*n*g+4096, stitch.Stream(i%2)))  // a temporary
		}
		logits := alloc(7*n*g, 0) // larger than any hole
		for _, a := range acts {
			free(a)
			free(alloc(n*g+512, 0))
		}
		free(logits)
	}
	alloc(3*g+4096, 0) // weights
	alloc(5*g, 0)
	for _, n := range []uint64{2, 3, 2, 3} {
		iteration(n)
	}
	do(OpEmptyCache)
	iteration(2)
	iteration(3)
	do(OpReset)
	iteration(2)
	do(OpEmptyCache)
	return sc.ops
}

// script builds a workload: allocations numbered in order, frees and other operations.
type script struct {
	ops []Op
	id  int64
}

func (sc *script) alloc(size uint64, s stitch.Stream) int64 {
	sc.id++
	sc.ops = append(sc.ops, Op{Kind: OpAlloc, ID: sc.id, Size: size, Stream: s})
	return sc.id
}

func (sc *script) free(ids ...int64) {
	for _, i := range ids {
		sc.ops = append(sc.ops, Op{Kind: OpFree, ID: i})
	}
}

func (sc *script) do(k OpKind) { sc.ops = append(sc.ops, Op{Kind: k}) }

// WithMarks is ops with a MarkIteration before the first, after every EmptyCache and Reset, and
// every k operations (k > 0): marks at arbitrary places, with no recurring shape behind them.
func WithMarks(ops []Op, k int) []Op {
	out := []Op{{Kind: OpMark}}
	for i, op := range ops {
		out = append(out, op)
		if op.Kind == OpEmptyCache || op.Kind == OpReset || (i+1)%k == 0 {
			out = append(out, Op{Kind: OpMark})
		}
	}
	return out
}
