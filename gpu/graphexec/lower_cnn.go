package graphexec

import (
	"errors"
	"fmt"

	"github.com/gmlake/gmlake/gpu"
	"github.com/gmlake/gmlake/gpu/cudnn"
)

// lowering runs one op kind that lower.go's switch does not know.
type lowering func(m *Machine, i int, desc Desc, out *gpu.Tensor, in []*gpu.Tensor) error

// lowerings are the convolutional kinds, run through cuDNN (package gpu/cudnn) on the Device's
// stream, except batch norm's backward pass (package gpu's kernels: cuDNN's takes more arguments
// than a call without cgo can pass) and the loss (package gpu's fused cross-entropy).
var lowerings = map[Kind]lowering{
	KindConv:              (*Machine).conv,
	KindBatchNorm:         (*Machine).batchNorm,
	KindReLU:              (*Machine).relu,
	KindPool:              (*Machine).pool,
	KindGlobalAvgPool:     (*Machine).globalAvgPool,
	KindClassCrossEntropy: (*Machine).classCrossEntropy,
}

// cnnState is a Machine's cuDNN handle (the caller's, or its own made on first use) and what its
// convolutions drew from the allocator as workspaces.
type cnnState struct {
	cfg    cnnConfig
	handle *cudnn.Handle
	owned  bool
	stats  WorkspaceStats
}

// WorkspaceStats counts the convolution workspaces a Machine took from the Device's allocator.
type WorkspaceStats struct {
	Allocs   int    // workspaces allocated (a call whose algorithm needs none takes none)
	Bytes    uint64 // their total size
	MaxBytes uint64 // the largest
}

func newCNNState(cfg cnnConfig) *cnnState { return &cnnState{cfg: cfg, handle: cfg.handle} }

func (s *cnnState) close() error {
	if s == nil || !s.owned || s.handle == nil {
		return nil
	}
	h := s.handle
	s.handle, s.owned = nil, false
	return h.Close()
}

// Workspaces returns the convolution workspaces taken since the Machine was compiled.
func (m *Machine) Workspaces() WorkspaceStats { return m.cnn.stats }

// dnn returns the cuDNN handle, making the Machine's own on first use.
func (m *Machine) dnn() (*cudnn.Handle, error) {
	if m.cnn.handle != nil {
		return m.cnn.handle, nil
	}
	lib, err := cudnn.Open()
	if err != nil {
		return nil, err
	}
	math := cudnn.FMAMath
	if m.cnn.cfg.math != nil {
		math = *m.cnn.cfg.math
	}
	h, err := NewCuDNN(m.dev, lib, math)
	if err != nil {
		return nil, err
	}
	m.cnn.handle, m.cnn.owned = h, true
	return h, nil
}

// NewCuDNN makes a cuDNN handle on d's stream, for WithCuDNN.
func NewCuDNN(d *gpu.Device, lib *cudnn.Library, math cudnn.MathType) (h *cudnn.Handle, err error) {
	err = d.Do(func() error {
		if h, err = lib.NewHandle(math); err != nil {
			return err
		}
		if err := h.SetStream(d.StreamHandle()); err != nil {
			return errors.Join(err, h.Close())
		}
		return nil
	})
	return h, err
}

// withDNN runs fn with the handle, on the Device's thread and context.
func (m *Machine) withDNN(fn func(h *cudnn.Handle) error) error {
	h, err := m.dnn()
	if err != nil {
		return err
	}
	return m.dev.Do(func() error { return fn(h) })
}

// workspace allocates n bytes from the Device's allocator for one cuDNN call (none for 0 bytes);
// free returns it right after the call is queued: the allocator hands a freed block only to later
// work on the same stream.
func (m *Machine) workspace(n uint64) (ptr uintptr, free func() error, err error) {
	if n == 0 {
		return 0, func() error { return nil }, nil
	}
	t, err := m.dev.NewTensor(int((n + 3) / 4))
	if err != nil {
		return 0, nil, fmt.Errorf("convolution workspace of %d bytes: %w", n, err)
	}
	s := &m.cnn.stats
	s.Allocs++
	s.Bytes += n
	s.MaxBytes = max(s.MaxBytes, n)
	return t.Ptr(), t.Free, nil
}

func shape4(t *gpu.Tensor) (cudnn.Shape, error) {
	s := t.Shape()
	if len(s) != 4 || !t.Contiguous() {
		return cudnn.Shape{}, fmt.Errorf("%w: want a contiguous NCHW tensor, got %v", gpu.ErrShape, s)
	}
	return cudnn.Shape{N: s[0], C: s[1], H: s[2], W: s[3]}, nil
}

// conv: part 0 y from (x, w), 1 dx from (dy, w), 2 dw from (x, dy), each with its workspace.
func (m *Machine) conv(_ int, desc Desc, out *gpu.Tensor, in []*gpu.Tensor) (err error) {
	h, err := m.dnn()
	if err != nil {
		return err
	}
	var p *cudnn.ConvPlan
	if err := m.dev.Do(func() (err error) { p, err = h.Conv(desc.CNN.Conv); return err }); err != nil {
		return err
	}
	need := [3]uint64{p.FwdWorkspace, p.BwdDataWorkspace, p.BwdFilterWorkspace}[desc.Part]
	ws, free, err := m.workspace(need)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, free()) }()
	return m.dev.Do(func() error {
		switch desc.Part {
		case 1:
			return p.BackwardData(in[1].Ptr(), in[0].Ptr(), out.Ptr(), ws, need)
		case 2:
			return p.BackwardFilter(in[0].Ptr(), in[1].Ptr(), out.Ptr(), ws, need)
		}
		return p.Forward(in[0].Ptr(), in[1].Ptr(), out.Ptr(), ws, need)
	})
}

// batchNorm: part 0 y from (x, γ, β) through cuDNN; 1 dx from (x, γ, dy), 2 dγ from (x, dy) through
// package gpu's kernels; 3 dβ from (dy) as cuDNN's channel sum.
func (m *Machine) batchNorm(_ int, desc Desc, out *gpu.Tensor, in []*gpu.Tensor) error {
	eps := desc.CNN.Eps
	switch desc.Part {
	case 1:
		return m.dev.BatchNormBackward(out, nil, nil, in[2], in[0], in[1], float32(eps))
	case 2:
		return m.dev.BatchNormBackward(nil, out, nil, in[1], in[0], nil, float32(eps))
	}
	s, err := shape4(in[0])
	if err != nil {
		return err
	}
	if desc.Part == 3 {
		return m.withDNN(func(h *cudnn.Handle) error { return h.ChannelSum(s, in[0].Ptr(), out.Ptr()) })
	}
	return m.withDNN(func(h *cudnn.Handle) error {
		return h.BatchNormForwardTraining(s, in[0].Ptr(), out.Ptr(), in[1].Ptr(), in[2].Ptr(), 0, 0, eps)
	})
}

// relu: y = max(x, 0), or dx from (x, dy).
func (m *Machine) relu(_ int, desc Desc, out *gpu.Tensor, in []*gpu.Tensor) error {
	n := out.Len()
	return m.withDNN(func(h *cudnn.Handle) error {
		if desc.CNN.Backward {
			return h.ReLUBackward(n, in[0].Ptr(), in[1].Ptr(), out.Ptr())
		}
		return h.ReLU(n, in[0].Ptr(), out.Ptr())
	})
}

// pool: y from x, or dx from (x, y, dy).
func (m *Machine) pool(_ int, desc Desc, out *gpu.Tensor, in []*gpu.Tensor) error {
	g := desc.CNN.Pool
	return m.withDNN(func(h *cudnn.Handle) error {
		if desc.CNN.Backward {
			return h.PoolBackward(g, in[0].Ptr(), in[1].Ptr(), in[2].Ptr(), out.Ptr())
		}
		return h.PoolForward(g, in[0].Ptr(), out.Ptr())
	})
}

// globalAvgPool: [N, C] means as an H×W average pool; the gradient broadcasts dy/(H·W) back.
func (m *Machine) globalAvgPool(_ int, desc Desc, out *gpu.Tensor, in []*gpu.Tensor) error {
	c := desc.CNN
	if c.Backward {
		s, err := shape4(out)
		if err != nil {
			return err
		}
		return m.withDNN(func(h *cudnn.Handle) error {
			return h.Broadcast(1/float32(c.H*c.W), cudnn.Shape{N: s.N, C: s.C, H: 1, W: 1}, in[0].Ptr(), s, out.Ptr())
		})
	}
	s, err := shape4(in[0])
	if err != nil {
		return err
	}
	g := cudnn.PoolGeometry{X: s, R: s.H, S: s.W, StrideH: 1, StrideW: 1}
	return m.withDNN(func(h *cudnn.Handle) error { return h.PoolForward(g, in[0].Ptr(), out.Ptr()) })
}

// classCrossEntropy: the mean over rows of −log softmax at each row's label; inputs (logits,
// labels) or, for the gradient, (logits, labels, dloss).
func (m *Machine) classCrossEntropy(i int, desc Desc, out *gpu.Tensor, in []*gpu.Tensor) (err error) {
	d, logits := m.dev, in[0]
	rows, classes := logits.Shape()[0], logits.Shape()[1]
	targets, err := m.ids(m.inputs[i][1], toInt32, int32(classes))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, targets.Free()) }()
	loss, err := d.NewTensor(rows)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, loss.Free()) }()
	lse, err := d.NewTensor(rows)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, lse.Free()) }()
	if err := d.CrossEntropy(loss, lse, logits, targets); err != nil {
		return err
	}
	scale := 1 / float32(rows)
	if desc.Grad {
		return d.CrossEntropyBackward(out, logits, lse, targets, in[2], scale)
	}
	if err := d.Sum(out, loss, 0); err != nil {
		return err
	}
	return d.Scale(out, out, scale)
}
