package stitch

import "math/bits"

// Contexts: what an engine not yet marked remembers of its requests, before the first iteration
// is marked or found (iterfinder.go).
//
// A request's context is its size and the live bytes before it, and those of the three requests
// before it: in a loop the request at the same point of the next iteration has the same context
// (the live bytes differ from one layer to the next, so the layers of one iteration do not share
// contexts). The place each large request took is remembered under its context, unmarked and,
// marked, until an iteration has been seen. Two rules read them: a growth takes an iteration as
// seen once a large request has repeated the size and context of an earlier one and the engine
// has served, since its last growth, as many requests as before it (seenIteration, engine.go;
// grow, growth.go); and, unmarked, new pages keep away from the places the contexts remember
// (pageaway.go). The first rule holds inside a marked first iteration too: gradient
// accumulation repeats its micro-steps there. Measured with gmlake-bench replay --min-capacity
// --repeat 4 on the 32 traces of make bench, marked, against the rule unmarked only: GPT-2 with
// four accumulated micro-batches 1.0105 -> 1.0048 x peak active, its largest steady iteration
// 20.7 -> 6.9 ms (within 1% of its step, 7.4) and warm-up 64.5 -> 20.4; gpt2xl-full-ckpt's warm-up
// 145 -> 72 ms for 1.0047 -> 1.0072; llama7b-lora-ckpt-off 1.0004 -> 1.0005; the other 29 the same.
// What the rule sees is a loop's structure rather than a whole iteration: on every trace it was
// looked at, the first repeat is 1 to 27 requests after the request it repeats (a layer after the
// layer before it: gpt2-gradaccum at request 191, gpt2xl-full-ckpt at 49, llama7b-lora-ckpt-off at
// 926, the BERT -> DistilBERT distillation loop at 368, inside the frozen teacher's forward pass).
// On that loop the rule alone was a defect: the rest of the first iteration grew in deficit
// handles, which live blocks of other sizes later share, and its minimum capacity was 1.0242 x
// peak active (the pool: 1.011; with 2 MiB handles 1.0077). So, marked, the rule also waits for a
// free that leaves the live bytes a quarter or more below their peak (deepMarked, engine.go;
// deepTroughShare, tunables.go): a micro-step of gradient accumulation frees its activations
// before the next one repeats it; a teacher's layers repeat while the activations are held.
// Measured with gmlake-bench replay --min-capacity --repeat 4 on the 42 traces (marked, the H200's
// costs; 2026-12-07, release 0.5.9) against the rule without that wait: capacity within target on
// 39 instead of 38, the distillation loop 1.0242 -> 1.0094 (its largest warm-up iteration 2.5 ->
// 1.3 ms), the gradient-accumulation GPT-2 unchanged (1.0178), the mean 1.0056 -> 1.0053; the
// largest steady and warm-up iterations within target on the same 40 and 40 (opt1.3b-lora-ckpt
// 2.8 -> 1.6 ms steady and 9.8 -> 5.2 warm-up; llama7b-lora-ckpt-off's warm-up 10.0 -> 15.0
// against 398); the other 38 traces unchanged; never marked, nothing changes. Measured with
// gmlake-bench replay --min-capacity --repeat 4 on the 39 traces of the project (marked;
// 2026-12-07) and not taken: a repeat counted only when the request it repeats came before the
// last growth fixes that loop (1.0094) but costs the
// gradient-accumulation GPT-2 1.0063 -> 1.0111 and the warm-up target on 3 traces (gpt2xl-full-ckpt
// 24.7 -> 107.8 ms, llama7b-lora-ckpt-off 42.7 -> 106.3, GPT-2 medium 18.4 -> 53.4); deficit
// handles only once a memo is remembered (the rule then moves only the bytes ahead), the loop
// 1.0091 but the accumulation GPT-2 1.0104 and the same warm-up losses (gpt2xl-full-ckpt 119.1 ms);
// a repeat only when it is at least half of the requests so far away, the same losses and the
// distillation loop unchanged; deficit handles only for a deficit of at least 4 or 16
// headroom-sized handles, the distillation loop 1.0242 and 1.0201, steady targets 35 and 32 of 39
// instead of 35; handles re-cut to the blocks (tunables.go) only while the room
// is under an eighth or a quarter of the capacity, the distillation loop 1.0242 and the
// gradient-accumulation GPT-2 1.0105 (its bytes strand while the room is still large).
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
// (the caller's or the finder's) and has seen an iteration.

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
// and notes a repeat (repeatSeen): unmarked, and marked until an iteration is seen.
func (e *Engine) rememberContext(b *block) {
	if e.marked() && e.seenIteration {
		return
	}
	if e.contexts.Len() >= maxContexts {
		e.contexts.Clear()
	}
	k := e.context()
	if old, ok := e.contexts.Get(k); ok && old.size == b.size && !e.repeatSeen {
		e.repeatSeen = true
	}
	e.contexts.Put(k, contextPlace{size: b.size, at: b.place()})
	e.forgetAway()
}
