package traincmd

import "time"

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
