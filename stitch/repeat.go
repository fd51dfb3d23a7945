package stitch

import "math/bits"

// Contexts: what an engine not yet marked remembers of its requests, before the first iteration
// is marked or found (iterfinder.go).
//
// A request's context is its size and the live bytes before it, and those of the three requests
// before it: in a loop the request at the same point of the next iteration has the same context
// (the live bytes differ from one layer to the next, so the layers of one iteration do not share
// contexts). The place each large request took is remembered under its context until the engine
// follows marks (the caller's or the finder's), and new pages of the small pool keep away from
// those places (pageaway.go).
//
// Contexts do not tell the engine that it has seen an iteration; only a remembered memo does.
// Measured and not taken (2026-12-07, gmlake-bench replay --min-capacity --repeat 4, the H200's
// costs, the 46 trace files): a rule that took an iteration as seen once a large request had
// repeated the size and context of an earlier one and the engine had served, since its last
// growth, as many requests as before it (marked, only after a free that left the live bytes a
// quarter below their peak, so that a distillation loop's frozen teacher did not trigger it),
// made for the micro-steps of gradient accumulation inside the first marked iteration. Without it
// the same targets are met in both modes (marked 41 capacity, 43 steady, 43 warm-up; never marked
// 41, 42, 43), mean capacity is 1.00523 instead of 1.00546 marked and 1.00591 instead of 1.00602
// never marked (the gradient-accumulation GPT-2 1.0108 instead of 1.0175 marked, gpt2xl-full-ckpt
// 1.0043 instead of 1.0075), the largest warm-up iterations sum to 265 instead of 282 ms marked and
// 266 instead of 280 never marked; only two steady iterations well within their targets are
// larger (GPT-2 medium marked 1.24 ms instead of 0.55, against 4.9; llama7b-lora-ckpt-off never
// marked 5.2 instead of 2.7, against 39.8).
//
// Contexts do not place requests: with the finder, every trace's iterations from about the third
// are marked and follow memos, and sending a request where the last one of its context went
// changed nothing. gmlake-bench replay --min-capacity --repeat 4 on the 32 traces of make bench,
// with and without that placement replayed side by side, gave the same figures on all 32 marked
// and on 31 never marked, and lower driver times without it never marked on opt1.3b-lora-ckpt
// (steady 14.0 -> 13.6 ms, warm-up 69.5 -> 68.7). Dropping the contexts altogether (the
// seen-iteration rule and the pages' places with them) moved the job's setup, which no caller
// marks: capacity / peak active of the UNet aspect-bucket trace marked 1.0098 -> 1.0140, and the
// largest steady iteration within 1% of the step on 14 traces instead of 17 never marked.
//
// Cost: a context step per request, a map write per large request until the engine follows marks
// (the caller's or the finder's).

// contextPlace is where the last large request of a context went.
type contextPlace struct {
	size uint64
	at   home
}

// stepContext notes the current request's size and the live bytes now: its part of the context
// (context), the only work a context costs a request that hits the cache.
func (e *Engine) stepContext(size uint64) {
	e.ctxRing[e.ctxNext%contextWindow] = (size*0x9e3779b97f4a7c15 ^ e.live) * 0xbf58476d1ce4e5b9
	e.ctxNext++
}

// context is the current request's context: its part and those of the contextWindow-1 requests
// before it, mixed.
func (e *Engine) context() uint64 {
	var h uint64
	for i := range uint64(contextWindow) {
		h ^= bits.RotateLeft64(e.ctxRing[(e.ctxNext-1-i)%contextWindow], int(16*i))
	}
	return h
}

// rememberContext records where large block b went for the current request under its context,
// while the engine follows no marks (the caller's or the finder's).
func (e *Engine) rememberContext(b *block) {
	if e.marked() {
		return
	}
	if e.contexts.Len() >= maxContexts {
		e.contexts.Clear()
	}
	e.contexts.Put(e.context(), contextPlace{size: b.size, at: b.place()})
	e.forgetAway()
}
