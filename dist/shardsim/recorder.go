package shardsim

import (
	"fmt"

	"github.com/gmlake/gmlake/trace"
)

// recorder writes the allocation stream and tracks live bytes.
type recorder struct {
	events []trace.Event
	sizes  map[int64]uint64
	next   int64
	live   uint64
	peak   uint64
}

func newRecorder() *recorder { return &recorder{sizes: make(map[int64]uint64)} }

// alloc records a request of bytes and returns its id.
func (r *recorder) alloc(bytes int64) int64 {
	if bytes <= 0 {
		panic(fmt.Sprintf("shardsim: allocation of %d bytes", bytes))
	}
	id := r.next
	r.next++
	r.events = append(r.events, trace.Event{Kind: trace.Alloc, ID: id, Size: uint64(bytes)})
	r.sizes[id] = uint64(bytes)
	r.live += uint64(bytes)
	r.peak = max(r.peak, r.live)
	return id
}

// free records the release of id.
func (r *recorder) free(id int64) {
	size, ok := r.sizes[id]
	if !ok {
		panic(fmt.Sprintf("shardsim: free of %d, which is not live", id))
	}
	delete(r.sizes, id)
	r.live -= size
	r.events = append(r.events, trace.Event{Kind: trace.Free, ID: id})
}

// transient records an allocation freed at once (a workspace).
func (r *recorder) transient(bytes int64) {
	if bytes > 0 {
		r.free(r.alloc(bytes))
	}
}

func (r *recorder) iteration(n int) {
	r.events = append(r.events, trace.Event{Kind: trace.Iter, ID: int64(n)})
}
