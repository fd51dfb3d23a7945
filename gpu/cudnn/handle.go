package cudnn

import (
	"errors"
	"fmt"
)

// Shape is a 4-D NCHW tensor's dimensions.
type Shape struct{ N, C, H, W int }

func (s Shape) String() string { return fmt.Sprintf("%dx%dx%dx%d", s.N, s.C, s.H, s.W) }

func (s Shape) valid() bool {
	const limit = 1<<31 - 1
	return s.N > 0 && s.C > 0 && s.H > 0 && s.W > 0 && s.N*s.C*s.H*s.W <= limit
}

// ErrShape is wrapped by errors about shapes cuDNN cannot take here.
var ErrShape = errors.New("cudnn: bad shape")

// The scaling factors cuDNN reads through pointers: package variables, so their addresses are
// stable host memory for the duration of every call.
var (
	one  float32 = 1
	zero float32 = 0
)

// Handle is one cuDNN context (cudnnHandle_t) with the descriptors it has made, cached by shape
// and parameters: building a descriptor is host work, but a training step asks for the same few
// hundred every time. Not safe for concurrent use, like the stream it queues on.
type Handle struct {
	lib   *Library
	h     uintptr
	math  MathType
	scale [2]float32 // AddTensor's alpha and beta, kept in the Handle so their addresses are stable

	tensors map[Shape]uintptr
	pools   map[poolKey]uintptr
	act     uintptr
	bn      map[int]uintptr // per-channel descriptors (1×C×1×1) by C
	convs   map[ConvGeometry]*ConvPlan
}

// NewHandle creates a cuDNN handle (cudnnCreate). Its convolutions use math (FMAMath: exact
// float32; DefaultMath: TF32 tensor cores allowed, as PyTorch's default for cuDNN convolutions).
// Call it with the CUDA context current.
func (l *Library) NewHandle(math MathType) (*Handle, error) {
	h := &Handle{lib: l, math: math, tensors: map[Shape]uintptr{}, pools: map[poolKey]uintptr{}, bn: map[int]uintptr{},
		convs: map[ConvGeometry]*ConvPlan{}}
	if err := l.check("cudnnCreate", l.fn.create(&h.h)); err != nil {
		return nil, err
	}
	return h, nil
}

// SetStream makes the handle queue its work on stream (a CUstream; 0 is the legacy default stream).
func (h *Handle) SetStream(stream uintptr) error {
	return h.lib.check("cudnnSetStream", h.lib.fn.setStream(h.h, stream))
}

// Library is the library the handle belongs to.
func (h *Handle) Library() *Library { return h.lib }

// Close destroys the handle and every descriptor and plan it made.
func (h *Handle) Close() error {
	f := &h.lib.fn
	var errs []error
	for _, p := range h.convs {
		errs = append(errs, p.close())
	}
	for _, d := range h.tensors {
		errs = append(errs, h.lib.check("cudnnDestroyTensorDescriptor", f.destroyTensorDescriptor(d)))
	}
	for _, d := range h.bn {
		errs = append(errs, h.lib.check("cudnnDestroyTensorDescriptor", f.destroyTensorDescriptor(d)))
	}
	for _, d := range h.pools {
		errs = append(errs, h.lib.check("cudnnDestroyPoolingDescriptor", f.destroyPoolingDescriptor(d)))
	}
	if h.act != 0 {
		errs = append(errs, h.lib.check("cudnnDestroyActivationDescriptor", f.destroyActivationDescriptor(h.act)))
	}
	errs = append(errs, h.lib.check("cudnnDestroy", f.destroy(h.h)))
	clear(h.convs)
	clear(h.tensors)
	clear(h.bn)
	clear(h.pools)
	h.act = 0
	return errors.Join(errs...)
}

// tensor is the cached float32 NCHW descriptor of s.
func (h *Handle) tensor(s Shape) (uintptr, error) {
	if d, ok := h.tensors[s]; ok {
		return d, nil
	}
	if !s.valid() {
		return 0, fmt.Errorf("%w: tensor %v", ErrShape, s)
	}
	d, err := h.newTensor(s)
	if err != nil {
		return 0, err
	}
	h.tensors[s] = d
	return d, nil
}

func (h *Handle) newTensor(s Shape) (uintptr, error) {
	f := &h.lib.fn
	var d uintptr
	if err := h.lib.check("cudnnCreateTensorDescriptor", f.createTensorDescriptor(&d)); err != nil {
		return 0, err
	}
	if err := h.lib.check("cudnnSetTensor4dDescriptor", f.setTensor4dDescriptor(d, formatNCHW, dataFloat,
		int32(s.N), int32(s.C), int32(s.H), int32(s.W))); err != nil {
		f.destroyTensorDescriptor(d)
		return 0, fmt.Errorf("tensor %v: %w", s, err)
	}
	return d, nil
}

// flat is the descriptor of n contiguous elements, for elementwise calls.
func (h *Handle) flat(n int) (uintptr, error) { return h.tensor(Shape{1, 1, 1, n}) }
