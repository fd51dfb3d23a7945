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
// Measured with gmlake-bench replay --repeat 4 (every iteration of a trace played four times in a
// row), unmarked, driver calls per iteration in the fourth repetition: 0 on 12 of 15 traces (the
// seven shared ones, the six held-out ones recorded on an H200 but Mixtral-MoE and T5, the
// GPT-2-XL LoRA trace of stitch/testdata), against 0 on none without it (ViT-B/16, every
// iteration the same shape: 32.2 -> 0; llama1b-full 51.9 -> 0); left: Mixtral-MoE 53.1, the
// GPT-2-XL LoRA trace 25.2, T5 7.1 (loops that cycle through many shapes), and the two-stream
// ZeRO-3 trace 93.8 (event calls, as marked). Capacity / peak active unmarked at most 0.0002
// higher, and lower on ViT-B/16 (1.0098 -> 1.0028). Cost: a context step per request and a map
// write per large request.

// contextWindow is how many requests a context covers, this one included.
const contextWindow = 4

// maxContexts bounds the remembered contexts; past it they are forgotten all at once.
const maxContexts = 1 << 20

// contextPlace is where the last large request of a context went.
type contextPlace struct {
	size uint64
	at   home
}

// stepContext makes the current request's context from its size and the live bytes now.
func (e *Engine) stepContext(size uint64) {
	e.ctxRing[e.ctxNext%contextWindow] = (size*0x9e3779b97f4a7c15 ^ e.live) * 0xbf58476d1ce4e5b9
	e.ctxNext++
	var h uint64
	for i := range uint64(contextWindow) {
		h ^= bits.RotateLeft64(e.ctxRing[(e.ctxNext-1-i)%contextWindow], int(16*i))
	}
	e.ctx = h
}

// repeatPlace returns the place the last request of the current context took, if it was of r
// bytes; unmarked only.
func (e *Engine) repeatPlace(r uint64) (home, bool) {
	if e.marked {
		return home{}, false
	}
	cp, ok := e.contexts[e.ctx]
	if !ok || cp.size != r {
		return home{}, false
	}
	return cp.at, true
}

// rememberContext records where large block b went for the current request; unmarked only.
func (e *Engine) rememberContext(b *block) {
	if e.marked {
		return
	}
	if len(e.contexts) >= maxContexts {
		clear(e.contexts)
	}
	e.contexts[e.ctx] = contextPlace{size: b.size, at: b.place()}
}
