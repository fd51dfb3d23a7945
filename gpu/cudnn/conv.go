package cudnn

import (
	"errors"
	"fmt"
)

// ConvGeometry is a 2-D convolution (cross-correlation, no dilation, no groups) of x [N, C, H, W]
// by filters [K, C, R, S], giving y [N, K, P, Q].
type ConvGeometry struct {
	N, C, H, W       int
	K, R, S          int
	StrideH, StrideW int
	PadH, PadW       int
}

// P and Q are the output height and width.
func (g ConvGeometry) P() int { return (g.H+2*g.PadH-g.R)/g.StrideH + 1 }
func (g ConvGeometry) Q() int { return (g.W+2*g.PadW-g.S)/g.StrideW + 1 }

// ConvPlan is one convolution geometry with its descriptors and the algorithm cuDNN's heuristics
// rank first for each direction (the _v7 getters), with the workspace bytes each needs. The
// caller provides the workspaces.
type ConvPlan struct {
	h                  *Handle
	g                  ConvGeometry
	x, y, w, conv      uintptr
	FwdAlgo            int32
	BwdDataAlgo        int32
	BwdFilterAlgo      int32
	FwdWorkspace       uint64
	BwdDataWorkspace   uint64
	BwdFilterWorkspace uint64
}

// Conv returns the plan of g (made on first use and kept by the handle).
func (h *Handle) Conv(g ConvGeometry) (*ConvPlan, error) {
	if p, ok := h.convs[g]; ok {
		return p, nil
	}
	if g.K <= 0 || g.R <= 0 || g.S <= 0 || g.StrideH <= 0 || g.StrideW <= 0 || g.PadH < 0 || g.PadW < 0 || g.P() <= 0 || g.Q() <= 0 {
		return nil, fmt.Errorf("%w: convolution %+v", ErrShape, g)
	}
	p := &ConvPlan{h: h, g: g}
	if err := p.build(); err != nil {
		return nil, errors.Join(fmt.Errorf("cudnn: convolution %+v: %w", g, err), p.close())
	}
	h.convs[g] = p
	return p, nil
}

func (p *ConvPlan) build() error {
	h, l, g := p.h, p.h.lib, p.g
	f := &l.fn
	var err error
	if p.x, err = h.tensor(Shape{g.N, g.C, g.H, g.W}); err != nil {
		return err
	}
	if p.y, err = h.tensor(Shape{g.N, g.K, g.P(), g.Q()}); err != nil {
		return err
	}
	if err := l.check("cudnnCreateFilterDescriptor", f.createFilterDescriptor(&p.w)); err != nil {
		return err
	}
	if err := l.check("cudnnSetFilter4dDescriptor", f.setFilter4dDescriptor(p.w, dataFloat, formatNCHW,
		int32(g.K), int32(g.C), int32(g.R), int32(g.S))); err != nil {
		return err
	}
	if err := l.check("cudnnCreateConvolutionDescriptor", f.createConvolutionDescriptor(&p.conv)); err != nil {
		return err
	}
	if err := l.check("cudnnSetConvolution2dDescriptor", f.setConvolution2dDescriptor(p.conv, int32(g.PadH), int32(g.PadW),
		int32(g.StrideH), int32(g.StrideW), 1, 1, crossCorrelation, dataFloat)); err != nil {
		return err
	}
	if err := l.check("cudnnSetConvolutionMathType", f.setConvolutionMathType(p.conv, int32(h.math))); err != nil {
		return err
	}
	var perf [8]algoPerf
	var n int32
	pick := func(call string) (int32, error) {
		for _, r := range perf[:n] {
			if r.Status == statusSuccess {
				return r.Algo, nil
			}
		}
		return 0, &Error{Call: call, Status: -1, Text: "no algorithm applies"}
	}
	var size uintptr
	if err := l.check("cudnnGetConvolutionForwardAlgorithm_v7", f.getForwardAlgorithm(h.h, p.x, p.w, p.conv, p.y,
		int32(len(perf)), &n, &perf[0])); err != nil {
		return err
	}
	if p.FwdAlgo, err = pick("cudnnGetConvolutionForwardAlgorithm_v7"); err != nil {
		return err
	}
	if err := l.check("cudnnGetConvolutionForwardWorkspaceSize", f.getForwardWorkspaceSize(h.h, p.x, p.w, p.conv, p.y,
		p.FwdAlgo, &size)); err != nil {
		return err
	}
	p.FwdWorkspace = uint64(size)
	if err := l.check("cudnnGetConvolutionBackwardDataAlgorithm_v7", f.getBackwardDataAlgorithm(h.h, p.w, p.y, p.conv, p.x,
		int32(len(perf)), &n, &perf[0])); err != nil {
		return err
	}
	if p.BwdDataAlgo, err = pick("cudnnGetConvolutionBackwardDataAlgorithm_v7"); err != nil {
		return err
	}
	if err := l.check("cudnnGetConvolutionBackwardDataWorkspaceSize", f.getBackwardDataWorkspaceSize(h.h, p.w, p.y, p.conv,
		p.x, p.BwdDataAlgo, &size)); err != nil {
		return err
	}
	p.BwdDataWorkspace = uint64(size)
	if err := l.check("cudnnGetConvolutionBackwardFilterAlgorithm_v7", f.getBackwardFilterAlgorithm(h.h, p.x, p.y, p.conv,
		p.w, int32(len(perf)), &n, &perf[0])); err != nil {
		return err
	}
	if p.BwdFilterAlgo, err = pick("cudnnGetConvolutionBackwardFilterAlgorithm_v7"); err != nil {
		return err
	}
	if err := l.check("cudnnGetConvolutionBackwardFilterWorkspaceSize", f.getBackwardFilterWorkspaceSize(h.h, p.x, p.y,
		p.conv, p.w, p.BwdFilterAlgo, &size)); err != nil {
		return err
	}
	p.BwdFilterWorkspace = uint64(size)
	return nil
}

// close destroys the plan's own descriptors (the tensor descriptors belong to the handle's cache).
func (p *ConvPlan) close() error {
	f := &p.h.lib.fn
	var errs []error
	if p.w != 0 {
		errs = append(errs, p.h.lib.check("cudnnDestroyFilterDescriptor", f.destroyFilterDescriptor(p.w)))
	}
	if p.conv != 0 {
		errs = append(errs, p.h.lib.check("cudnnDestroyConvolutionDescriptor", f.destroyConvolutionDescriptor(p.conv)))
	}
	p.w, p.conv = 0, 0
	return errors.Join(errs...)
}

func (p *ConvPlan) checkWorkspace(call string, ws uintptr, size, need uint64) error {
	if size < need || (need > 0 && ws == 0) {
		return fmt.Errorf("%w: %s needs a workspace of %d bytes, got %d at %#x", ErrShape, call, need, size, ws)
	}
	return nil
}

// Forward queues y = conv(x, w) (cudnnConvolutionForward) with a workspace of at least
// FwdWorkspace bytes at ws.
func (p *ConvPlan) Forward(x, w, y, ws uintptr, wsSize uint64) error {
	if err := p.checkWorkspace("cudnnConvolutionForward", ws, wsSize, p.FwdWorkspace); err != nil {
		return err
	}
	l := p.h.lib
	return l.check("cudnnConvolutionForward", l.fn.convolutionForward(p.h.h, &one, p.x, x, p.w, w, p.conv, p.FwdAlgo,
		ws, uintptr(wsSize), &zero, p.y, y))
}

// BackwardData queues dx = the gradient of the input from w and dy (cudnnConvolutionBackwardData)
// with a workspace of at least BwdDataWorkspace bytes.
func (p *ConvPlan) BackwardData(w, dy, dx, ws uintptr, wsSize uint64) error {
	if err := p.checkWorkspace("cudnnConvolutionBackwardData", ws, wsSize, p.BwdDataWorkspace); err != nil {
		return err
	}
	l := p.h.lib
	return l.check("cudnnConvolutionBackwardData", l.fn.convolutionBackwardData(p.h.h, &one, p.w, w, p.y, dy, p.conv,
		p.BwdDataAlgo, ws, uintptr(wsSize), &zero, p.x, dx))
}

// BackwardFilter queues dw = the gradient of the filters from x and dy
// (cudnnConvolutionBackwardFilter) with a workspace of at least BwdFilterWorkspace bytes.
func (p *ConvPlan) BackwardFilter(x, dy, dw, ws uintptr, wsSize uint64) error {
	if err := p.checkWorkspace("cudnnConvolutionBackwardFilter", ws, wsSize, p.BwdFilterWorkspace); err != nil {
		return err
	}
	l := p.h.lib
	return l.check("cudnnConvolutionBackwardFilter", l.fn.convolutionBackwardFilter(p.h.h, &one, p.x, x, p.y, dy, p.conv,
		p.BwdFilterAlgo, ws, uintptr(wsSize), &zero, p.w, dw))
}
