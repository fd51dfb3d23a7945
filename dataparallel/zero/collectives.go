package zero

import "fmt"

// Collectives are the collectives a Group or Group3 runs over its in-process ranks: argument i of
// every call is rank i's buffer. HostCollectives does them in Go; a test may pass NCCL's (over
// host memory) with WithCollectives.
type Collectives interface {
	AllReduceSum(bufs [][]float32) error
	ReduceScatterSum(send, recv [][]float32) error
	AllGather(send, recv [][]float32) error
	AllReduceSum64(vals []float64) float64
}

// HostCollectives are NCCL's collectives over in-process ranks: argument i of every call is rank
// i's buffer. Sums add ranks' contributions in rank order, element by element, so every rank
// receives bit-identical results and reduce-scatter gives exactly the elements all-reduce would.
type HostCollectives struct{}

// AllReduceSum replaces every rank's buffer by the element-wise sum over ranks (in place).
func (HostCollectives) AllReduceSum(bufs [][]float32) error {
	n, err := sameLen("all-reduce", bufs)
	if err != nil {
		return err
	}
	sum := make([]float32, n)
	addInOrder(sum, bufs, 0)
	for _, b := range bufs {
		copy(b, sum)
	}
	return nil
}

// ReduceScatterSum sums send over ranks and leaves block r of the sum (len(recv[r]) elements at
// offset r*len(recv[r])) in recv[r]. Every send buffer holds ranks × that many elements.
func (HostCollectives) ReduceScatterSum(send, recv [][]float32) error {
	n, err := sameLen("reduce-scatter send", send)
	if err != nil {
		return err
	}
	block, err := sameLen("reduce-scatter recv", recv)
	if err != nil {
		return err
	}
	if len(send) != len(recv) || block*len(send) != n {
		return fmt.Errorf("%w: reduce-scatter of %d ranks × %d elements into %d blocks of %d",
			ErrLayout, len(send), n, len(recv), block)
	}
	for r, out := range recv {
		clear(out)
		addInOrder(out, send, r*block)
	}
	return nil
}

// AllGather puts every rank's send block r at offset r*len(send[r]) of every recv buffer.
func (HostCollectives) AllGather(send, recv [][]float32) error {
	block, err := sameLen("all-gather send", send)
	if err != nil {
		return err
	}
	n, err := sameLen("all-gather recv", recv)
	if err != nil {
		return err
	}
	if len(send) != len(recv) || block*len(send) != n {
		return fmt.Errorf("%w: all-gather of %d blocks of %d into %d ranks × %d elements",
			ErrLayout, len(send), block, len(recv), n)
	}
	for _, out := range recv {
		for r, in := range send {
			copy(out[r*block:(r+1)*block], in)
		}
	}
	return nil
}

// AllReduceSum64 is the all-reduce of one float64 per rank (the gradient norm's partial sums),
// added in rank order.
func (HostCollectives) AllReduceSum64(vals []float64) float64 {
	var s float64
	for _, v := range vals {
		s += v
	}
	return s
}

// addInOrder adds ranks' elements [off, off+len(dst)) into dst, rank 0 first.
func addInOrder(dst []float32, bufs [][]float32, off int) {
	for _, b := range bufs {
		for i := range dst {
			dst[i] += b[off+i]
		}
	}
}

func sameLen(what string, bufs [][]float32) (int, error) {
	if len(bufs) == 0 {
		return 0, fmt.Errorf("%w: %s over no ranks", ErrLayout, what)
	}
	n := len(bufs[0])
	for r, b := range bufs {
		if len(b) != n {
			return 0, fmt.Errorf("%w: %s: rank %d has %d elements, rank 0 %d", ErrLayout, what, r, len(b), n)
		}
	}
	return n, nil
}
