package traincmd

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gmlake/gmlake/stitch"
)

// LargestBatch searches for the largest batch that fits, from a batch known to fit (from) and a
// first guess above it (first): it grows the stride from the guess until a batch fails, then
// bisects between the largest success and the smallest failure. try says whether batch b fits; its
// error ends the search. The result is the largest batch that fit and the smallest that did not
// (0: none failed); finished is false when the deadline passed before the two met.
func LargestBatch(from, first int, deadline time.Time, try func(b int) (bool, error)) (largest, failed int, finished bool, err error) {
	lo, hi := from, 0 // largest success, smallest failure (0: none yet)
	b := first
	stride, succeeded := max(1, b/8), false
	for !time.Now().After(deadline) {
		ok, err := try(b)
		if err != nil {
			return lo, hi, false, err
		}
		if ok {
			lo, succeeded = b, true
		} else {
			hi = b
		}
		switch {
		case hi == 0:
			b = lo + stride
			stride *= 2
		case hi-lo <= 1:
			return lo, hi, true, nil
		case !succeeded:
			b = max(lo+1, hi-stride)
			stride *= 2
		default:
			b = (lo + hi) / 2
		}
	}
	return lo, hi, false, nil
}

// FitsShapes reports whether a batch trains at the largest of shapes (sequence lengths, image
// sizes), then the smallest, then the largest again: the pool's caches left by a small step must
// serve the large one. step trains one step at a shape; an out-of-memory error from it is the
// answer false, any other error ends the search.
func FitsShapes(shapes []int, step func(shape int) error) (bool, error) {
	largest, smallest := slices.Max(shapes), slices.Min(shapes)
	for _, shape := range []int{largest, smallest, largest} {
		if err := step(shape); err != nil {
			if errors.Is(err, stitch.ErrOutOfMemory) {
				return false, nil
			}
			return false, err
		}
	}
	return true, nil
}

// FirstBatch is the search's first guess: the capacity left by the resident weights over the
// activation bytes per sample of a run at batch (its peak live bytes less the weights), the batch
// at which an allocator that never fragments would just fit; twice batch when that is unknown.
func FirstBatch(batch int, peakLive, weights, capacity uint64) int {
	if peakLive <= weights || capacity <= weights {
		return 2 * batch
	}
	perSample := float64(peakLive-weights) / float64(batch)
	return max(batch+1, int(float64(capacity-weights)/perSample))
}

// BatchCell is a search's result as a table cell: the largest batch, "≥ N" when none failed, the
// bracket when the search was cut before the two met, and "–" when there was no search.
func BatchCell(largest, failed int) string {
	switch {
	case largest == 0 && failed == 0:
		return "–"
	case failed == 0:
		return fmt.Sprintf("≥ %d", largest)
	case failed > largest+1:
		return fmt.Sprintf("%d (%d fails; search cut)", largest, failed)
	}
	return fmt.Sprintf("%d", largest)
}
