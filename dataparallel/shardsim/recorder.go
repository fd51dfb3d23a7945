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

// alloc records a request of bytes on the compute stream and returns its id.
func (r *recorder) alloc(bytes int64) int64 { return r.allocOn(bytes, computeStream) }

// allocOn records a request of bytes on stream and returns its id.
func (r *recorder) allocOn(bytes int64, stream uint64) int64 {
	if bytes <= 0 {
		panic(fmt.Sprintf("shardsim: allocation of %d bytes", bytes))
	}
	id := r.next
	r.next++
	r.events = append(r.events, trace.Event{Kind: trace.Alloc, ID: id, Size: uint64(bytes), Stream: stream})
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

// Streams of the trace: compute work, and communication when Workload.OverlapComm puts it on a
// stream of its own.
const (
	computeStream = 0
	commStream    = 1
)

// transient records an allocation freed at once (a workspace) on stream.
func (r *recorder) transient(bytes int64, stream uint64) {
	if bytes > 0 {
		r.free(r.allocOn(bytes, stream))
	}
}

func (r *recorder) iteration(n int) {
	r.events = append(r.events, trace.Event{Kind: trace.Iter, ID: int64(n)})
}
