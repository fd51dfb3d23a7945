package stitch

import (
	"errors"
	"fmt"
)

// blockCache is the engine's cache of freed blocks, the layer between the layout core (embedded
// below) and the placement policy (the Engine, which embeds it). A freed block stays whole in the
// free list of its size and stream, so that the next request of that size on that stream takes it
// with no search (GMLake's exact match); the age lists order the cached blocks by free, for the
// flushes that give their bytes back to the layout (flush.go). With several streams, a cached block
// may serve another stream only once the device is done with its free (streams.go: frees numbered
// per stream, events recorded and polled). The cache's methods reach the layout, never the policy.
//
// Each field says what it holds, which functions write it and which rule of Check covers it
// (checkBlocks). The first fields are read by every request and every free; they follow the
// Engine's own hot fields in memory and the layout's follow them (TestEngineHotFieldsTogether).
type blockCache struct {
	epoch       uint64 // successful Synchronize calls (synchronize): a block freed before is settled (streams)
	multiStream bool   // a second stream has been seen (allocSlow, once): frees are numbered per stream (streams)
	streamSeen  bool   // hotStream is set (the free lists, below)
	// The free lists: cached blocks by stream and size, lowest address first. hotStream is the
	// first stream a request used (set once by allocSlow, with streamSeen); its lists need no map
	// lookup (otherLists holds the others'). cache pushes (listFor makes a list), reuse and flush
	// unlink. Check: checkBlocks (every cached block in exactly the list of its size and stream;
	// counts and links).
	hotStream Stream
	hotLists  sizeLists
	slowPaths uint64 // requests that missed the exact path (allocSlow): the clock of event polls (streams)
	// largeAge, smallAge: the cached blocks of each pool in order of free, the set flushing walks:
	// cache pushes; reuse and flush unlink. Check: checkBlocks (every cached block in exactly one,
	// the right one; counts).
	largeAge ageList
	smallAge ageList

	layout

	otherLists map[Stream]*sizeLists // the free lists of the other streams (see hotLists)

	// Streams and events (streams.go). With one stream nothing here is used (multiStream, epoch
	// and slowPaths are above).
	clocks     map[Stream]*streamClock // per stream: frees numbered and events pending (cache, poll, synchronize)
	clockOrder []Stream                // the streams of clocks in the order they were first used (clockFor)

	// Scratch buffers, kept for reuse: each holds nothing between the calls that use it.
	flushBuf  []*block         // flushUnder
	flushHeap []flushCandidate // flushUntil's heap
}

// takeCached takes cached block b out of its free list and its pool's age list: to be handed out
// again (reuse) or flushed (flush, flushInto, uncache).
func (bc *blockCache) takeCached(b *block) {
	b.list.unlink(b)
	if b.kind == small {
		bc.smallAge.unlink(b)
	} else {
		bc.largeAge.unlink(b)
	}
}

// useStream notes a request on stream s (allocSlow): the first stream used is the hot one,
// whichever it is; another one turns the cache to several streams (enterMultiStream).
func (bc *blockCache) useStream(s Stream) error {
	if !bc.streamSeen {
		// Nothing is cached yet.
		bc.hotStream, bc.streamSeen = s, true
	}
	if s != bc.hotStream && !bc.multiStream {
		return bc.enterMultiStream()
	}
	return nil
}

// open makes the cache, empty, over a layout opened for driver d and the options c (layout.open).
func (bc *blockCache) open(d Driver, c *config) error {
	if err := bc.layout.open(d, c); err != nil {
		return err
	}
	bc.otherLists = make(map[Stream]*sizeLists)
	bc.clocks = make(map[Stream]*streamClock)
	return nil
}

// close destroys every pending event and closes the layout (layout.close, whose errors it
// returns), leaving the cache empty: its blocks are gone with the layout.
func (bc *blockCache) close() (errs []error, orphanErr error) {
	bc.dropClockEvents()
	errs, orphanErr = bc.layout.close()
	bc.largeAge, bc.smallAge = ageList{}, ageList{}
	bc.hotLists.Clear()
	bc.otherLists = nil
	return errs, orphanErr
}

// addCached puts freed block b in the free list of its size and stream and at the newest end of
// its pool's age list; with several streams, it numbers the free on b's stream (streams.go).
func (bc *blockCache) addCached(b *block) {
	b.freeEpoch = bc.epoch
	if bc.multiStream {
		c := bc.clockFor(b.stream)
		c.freed++
		b.freeSeq = c.freed
		if b.kind != small {
			bc.noteFreedLarge(c, b)
		}
		if len(c.pending) == 0 {
			// The stream's clock is idle: start it here rather than at the next slow path, so
			// that the event completes as early as the stream allows.
			bc.recordOn(b.stream, c)
		}
	}
	if b.list == nil {
		b.list = bc.listFor(b.size, b.stream)
	}
	b.list.push(b)
	if b.kind == small {
		bc.smallAge.pushNewest(b)
	} else {
		bc.largeAge.pushNewest(b)
	}
}

// enterMultiStream is the engine's first request on a stream other than the hot one. Blocks freed
// so far recorded no event, and their bytes may be loose already: one synchronize covers them.
// Without it no byte is safe for the new stream, so the request fails and the next one on another
// stream tries again.
//
//go:noinline
func (bc *blockCache) enterMultiStream() error {
	if err := bc.synchronize(); err != nil {
		return fmt.Errorf("stitch: synchronize before serving a second stream: %w", err)
	}
	bc.multiStream = true
	return nil
}

// listFor returns the free list of cached blocks of size r on stream s, making it if needed.
func (bc *blockCache) listFor(r uint64, s Stream) *freeList {
	lists := &bc.hotLists
	if s != bc.hotStream {
		if lists = bc.otherLists[s]; lists == nil {
			lists = new(sizeLists)
			bc.otherLists[s] = lists
		}
	}
	l := lists.At(r)
	if l == nil {
		l = &freeList{}
		lists.Put(r, l)
	}
	return l
}

func (bc *blockCache) emptyCache() error {
	_ = bc.retryOrphans() // first, so that chunks an orphaned range maps become releasable
	if err := bc.synchronize(); err != nil {
		return fmt.Errorf("stitch: synchronize before releasing memory: %w", err)
	}
	bc.flushSmallPool()
	bc.releaseEmptyPages()
	bc.flushUntil(&bc.largeAge, ^uint64(0))
	var errs []error
	if err := bc.releaseIdleViews(); err != nil {
		errs = append(errs, err)
	}
	for _, pa := range bc.releaseCandidates() {
		if bc.releasable(pa) {
			if err := bc.releaseAlloc(pa); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := bc.retryOrphans(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
