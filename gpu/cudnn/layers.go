package cudnn

import "fmt"

// BatchNormForwardTraining queues y = (x − μ)/√(σ² + eps)·γ + β with the batch's per-channel
// statistics (cudnnBatchNormalizationForwardTraining, spatial mode); gamma and beta hold C
// floats. saveMean and saveInvStd (C floats each, or 0) receive μ and 1/√(σ² + eps). No running
// averages are kept.
func (h *Handle) BatchNormForwardTraining(s Shape, x, y, gamma, beta, saveMean, saveInvStd uintptr, eps float64) error {
	xd, err := h.tensor(s)
	if err != nil {
		return err
	}
	bd, err := h.perChannel(s.C, xd)
	if err != nil {
		return err
	}
	l := h.lib
	return l.check("cudnnBatchNormalizationForwardTraining", l.fn.batchNormForwardTraining(h.h, batchNormSpatial, &one, &zero,
		xd, x, xd, y, bd, gamma, beta, 0, 0, 0, eps, saveMean, saveInvStd))
}

// perChannel is the 1×C×1×1 descriptor of batch norm's per-channel vectors, derived from x's.
func (h *Handle) perChannel(c int, xd uintptr) (uintptr, error) {
	if d, ok := h.bn[c]; ok {
		return d, nil
	}
	f := &h.lib.fn
	var d uintptr
	if err := h.lib.check("cudnnCreateTensorDescriptor", f.createTensorDescriptor(&d)); err != nil {
		return 0, err
	}
	if err := h.lib.check("cudnnDeriveBNTensorDescriptor", f.deriveBNTensorDescriptor(d, xd, batchNormSpatial)); err != nil {
		f.destroyTensorDescriptor(d)
		return 0, err
	}
	h.bn[c] = d
	return d, nil
}

// ChannelSum queues db[c] = Σ over n, h, w of dy[n, c, h, w] (cudnnConvolutionBackwardBias):
// the gradient of a per-channel shift.
func (h *Handle) ChannelSum(s Shape, dy, db uintptr) error {
	dyd, err := h.tensor(s)
	if err != nil {
		return err
	}
	dbd, err := h.tensor(Shape{1, s.C, 1, 1})
	if err != nil {
		return err
	}
	l := h.lib
	return l.check("cudnnConvolutionBackwardBias", l.fn.convolutionBackwardBias(h.h, &one, dyd, dy, &zero, dbd, db))
}

// PoolGeometry is a pooling window over x [N, C, H, W]; output [N, C, P, Q].
type PoolGeometry struct {
	X                Shape
	R, S             int
	StrideH, StrideW int
	PadH, PadW       int
	Max              bool // max pooling; otherwise average with padding counted as zeros
}

// P and Q are the output height and width.
func (g PoolGeometry) P() int { return (g.X.H+2*g.PadH-g.R)/g.StrideH + 1 }
func (g PoolGeometry) Q() int { return (g.X.W+2*g.PadW-g.S)/g.StrideW + 1 }

type poolKey struct {
	r, s, sh, sw, ph, pw int
	max                  bool
}

func (h *Handle) pool(g PoolGeometry) (uintptr, error) {
	k := poolKey{g.R, g.S, g.StrideH, g.StrideW, g.PadH, g.PadW, g.Max}
	if d, ok := h.pools[k]; ok {
		return d, nil
	}
	if g.R <= 0 || g.S <= 0 || g.StrideH <= 0 || g.StrideW <= 0 || g.PadH < 0 || g.PadW < 0 || g.P() <= 0 || g.Q() <= 0 {
		return 0, fmt.Errorf("%w: pooling %+v", ErrShape, g)
	}
	mode := int32(poolingAvgIncludePads)
	if g.Max {
		mode = poolingMax
	}
	f := &h.lib.fn
	var d uintptr
	if err := h.lib.check("cudnnCreatePoolingDescriptor", f.createPoolingDescriptor(&d)); err != nil {
		return 0, err
	}
	if err := h.lib.check("cudnnSetPooling2dDescriptor", f.setPooling2dDescriptor(d, mode, notPropagateNaN, int32(g.R), int32(g.S),
		int32(g.PadH), int32(g.PadW), int32(g.StrideH), int32(g.StrideW))); err != nil {
		f.destroyPoolingDescriptor(d)
		return 0, err
	}
	h.pools[k] = d
	return d, nil
}

func (h *Handle) poolDescs(g PoolGeometry) (pd, xd, yd uintptr, err error) {
	if pd, err = h.pool(g); err != nil {
		return
	}
	if xd, err = h.tensor(g.X); err != nil {
		return
	}
	yd, err = h.tensor(Shape{g.X.N, g.X.C, g.P(), g.Q()})
	return
}

// PoolForward queues y = pool(x) (cudnnPoolingForward).
func (h *Handle) PoolForward(g PoolGeometry, x, y uintptr) error {
	pd, xd, yd, err := h.poolDescs(g)
	if err != nil {
		return err
	}
	l := h.lib
	return l.check("cudnnPoolingForward", l.fn.poolingForward(h.h, pd, &one, xd, x, &zero, yd, y))
}

// PoolBackward queues dx from x, y = pool(x) and dy (cudnnPoolingBackward).
func (h *Handle) PoolBackward(g PoolGeometry, x, y, dy, dx uintptr) error {
	pd, xd, yd, err := h.poolDescs(g)
	if err != nil {
		return err
	}
	l := h.lib
	return l.check("cudnnPoolingBackward", l.fn.poolingBackward(h.h, pd, &one, yd, y, yd, dy, xd, x, &zero, xd, dx))
}

func (h *Handle) relu() (uintptr, error) {
	if h.act != 0 {
		return h.act, nil
	}
	f := &h.lib.fn
	var d uintptr
	if err := h.lib.check("cudnnCreateActivationDescriptor", f.createActivationDescriptor(&d)); err != nil {
		return 0, err
	}
	if err := h.lib.check("cudnnSetActivationDescriptor", f.setActivationDescriptor(d, activationReLU, notPropagateNaN, 0)); err != nil {
		f.destroyActivationDescriptor(d)
		return 0, err
	}
	h.act = d
	return d, nil
}

// ReLU queues y = max(x, 0) over n contiguous floats (cudnnActivationForward).
func (h *Handle) ReLU(n int, x, y uintptr) error {
	ad, err := h.relu()
	if err != nil {
		return err
	}
	td, err := h.flat(n)
	if err != nil {
		return err
	}
	l := h.lib
	return l.check("cudnnActivationForward", l.fn.activationForward(h.h, ad, &one, td, x, &zero, td, y))
}

// ReLUBackward queues dx = dy·[x > 0] over n contiguous floats (cudnnActivationBackward, with x
// standing for y as well: for a rectifier y > 0 exactly where x > 0).
func (h *Handle) ReLUBackward(n int, x, dy, dx uintptr) error {
	ad, err := h.relu()
	if err != nil {
		return err
	}
	td, err := h.flat(n)
	if err != nil {
		return err
	}
	l := h.lib
	return l.check("cudnnActivationBackward", l.fn.activationBackward(h.h, ad, &one, td, x, td, dy, td, x, &zero, td, dx))
}

// Broadcast queues c = alpha·a broadcast to c's shape (cudnnAddTensor with beta 0): each
// dimension of a is c's or 1.
func (h *Handle) Broadcast(alpha float32, as Shape, a uintptr, cs Shape, c uintptr) error {
	ad, err := h.tensor(as)
	if err != nil {
		return err
	}
	cd, err := h.tensor(cs)
	if err != nil {
		return err
	}
	h.scale = [2]float32{alpha, 0}
	l := h.lib
	return l.check("cudnnAddTensor", l.fn.addTensor(h.h, &h.scale[0], ad, a, &h.scale[1], cd, c))
}
