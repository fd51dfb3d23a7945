package stitch

import "math/bits"

// Repeats: without iteration marks, a request that repeats an earlier one goes where that one went.
//
// Unmarked, a training loop's layout does not settle by itself: at each iteration's peak the free
// memory lies in many ranges whose partial chunks no view can use, a few large requests stitch or
// grow, and where they land moves the layout of the next iteration, which stitches again (a
// fixed-shape ViT-B/16 repeated: 3-7 new views every iteration, views piling up, and a growth of
// a chunk or two in most). Marks settle it by memos (memo.go), which need to know where an
// iteration begins. A request's context says the same without marks: its size and the live bytes
// before it, and those of the three requests before it. In a loop the request at the same point
// of the next iteration has the same context (the live bytes differ from one layer to the next,
// so the layers of one iteration do not share contexts), and a loop that cycles through several
// shapes repeats its contexts once per cycle. So, unmarked, the place each large request took is
// remembered under its context, and a later request of the same size and context goes there when
// no live block uses it (flushing what is cached there), an exact match taking the cached block
// lying there: the placements of the last time the context was seen, as a followed memo gives.
//
// Small requests are not remembered: a small request that misses the cache and the pages flushes
// the whole small pool and is carved by best fit (small.go, free.go), which lays the pool out the
// same way each time the script repeats; pages keep away from the places remembered contexts give
// large requests (pageaway.go).
//
// Measured with gmlake-bench replay --repeat 4 (every iteration of a trace played four times in a
// row), unmarked, driver calls per iteration in the fourth repetition: 0 on every single-stream
// trace (the seven shared ones, the six held out, the three gpu-train recorded), all from the
// third. Without contexts, 0 on none (ViT-B/16, every iteration the same shape: 32.2;
// llama1b-full 51.9); with contexts for large requests alone, Mixtral-MoE 53.1, the GPT-2-XL LoRA
// trace of stitch/testdata 25.2 and T5 7.1 (pages lying in remembered places). Small requests
// were remembered by context too while a small miss flushed only until one range held it (the
// pool drifted without them: Mixtral-MoE unmarked grew a page in its fourth repetition); since a
// miss flushes the whole pool, the 30 traces of make bench replayed four times, marked and
// unmarked, give the same placements with and without them, and the soak passes without them.
// Cost: a context step per request, a map write per large request.

// contextPlace is where the last large requests of a context went: the most recent place first,
// then up to contextPlaces-1 older distinct places of the same size. One place is not enough when
// two iterations of one shape are separated by another (a multi-scale CNN: 64, 96, 64 pixels):
// their first requests have contexts of their own (the window reaches into the iteration before),
// the later ones share contexts, and with one place each the later requests of one iteration
// follow the other's, which overlap its own early blocks (busy), so both relay every repetition.
type contextPlace struct {
	size uint64
	at   [contextPlaces]home // at[:n]: most recent first
	n    int
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

// repeatPlaces returns the places the last requests of the current context took, most recent
// first, if they were of r bytes (n is 0 otherwise); unmarked only. An array, not a slice: the
// exact path calls it (pick) and allocates nothing.
func (e *Engine) repeatPlaces(r uint64) (places [contextPlaces]home, n int) {
	if e.marked() {
		return places, 0
	}
	cp, ok := e.contexts.Get(e.context())
	if !ok || cp.size != r {
		return places, 0
	}
	return cp.at, cp.n
}

// rememberContext records where large block b went for the current request, first among the
// context's places; the places it held before move down (the oldest dropped), unless b's is one of
// them or they were of another size. Unmarked only.
func (e *Engine) rememberContext(b *block) {
	if e.marked() {
		return
	}
	if e.contexts.Len() >= maxContexts {
		e.contexts.Clear()
	}
	k := e.context()
	np := contextPlace{size: b.size, n: 1}
	np.at[0] = b.place()
	if old, ok := e.contexts.Get(k); ok && old.size == b.size {
		if !e.repeatSeen {
			e.repeatSeen = true
		}
		for _, h := range old.at[:old.n] {
			if h != np.at[0] && np.n < contextPlaces {
				np.at[np.n] = h
				np.n++
			}
		}
	}
	e.contexts.Put(k, np)
	e.forgetAway()
}
