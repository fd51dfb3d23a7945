package gpu

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/gmlake/gmlake/gpu/cublas"
	"github.com/gmlake/gmlake/gpu/nvrtc"
	"github.com/gmlake/gmlake/internal/libcuda"
	"github.com/gmlake/gmlake/stitch"
)

// ErrClosed is returned by calls on a closed Device.
var ErrClosed = errors.New("gpu: device closed")

// Device is one GPU with its primary context, one compute stream, a cuBLAS handle bound to that
// stream, the kernels loaded so far and the allocator tensors come from. Not safe for concurrent
// use: one goroutine drives a Device (the executor), as one stream orders its work.
type Device struct {
	ordinal  int
	name     string
	ccMajor  int
	ccMinor  int
	sms      int
	ctx      libcuda.Context
	stream   uintptr
	alloc    Allocator
	blas     *cublas.Handle
	compiler *nvrtc.Compiler
	log      *slog.Logger

	modules   map[string]uintptr // source name -> CUmodule
	functions map[string]uintptr // kernel name -> CUfunction
	kernelSrc map[string]string  // kernel name -> source name
	partials  *Tensor            // scratch for two-pass reductions (SumSquares)
	mem       MemoryStats
	closed    bool
}

// New opens GPU WithDevice (default 0) and prepares it: primary context, a stream, cuBLAS, NVRTC.
// Without a usable GPU the error wraps ErrUnavailable; without cuBLAS or NVRTC it wraps
// dl.ErrNotFound and names what was tried.
func New(opts ...Option) (*Device, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := loadLibrary(); err != nil {
		return nil, err
	}
	d := &Device{ordinal: cfg.ordinal, log: cfg.logger, modules: map[string]uintptr{},
		functions: map[string]uintptr{}, kernelSrc: kernelIndex()}
	if err := d.readInfo(); err != nil {
		return nil, fmt.Errorf("gpu: device %d: %w", d.ordinal, err)
	}
	ctx, r := libcuda.PrimaryCtxRetain(d.ordinal)
	if err := check("cuDevicePrimaryCtxRetain", r); err != nil {
		return nil, err
	}
	d.ctx = ctx
	r = libcuda.In(d.ctx, func() (r libcuda.Result) {
		d.stream, r = libcuda.StreamCreate(libcuda.StreamDefault)
		return r
	})
	if err := check("cuStreamCreate", r); err != nil {
		d.releaseContext()
		return nil, err
	}
	d.alloc = cfg.alloc
	if d.alloc == nil {
		d.alloc = &directAllocator{ctx: d.ctx}
	}
	var err error
	if d.compiler, err = nvrtc.Open(); err != nil {
		d.releaseContext()
		return nil, err
	}
	if err = d.openBLAS(); err != nil {
		d.releaseContext()
		return nil, err
	}
	d.log.Info("gpu: opened", "device", d.name, "arch", d.Arch(), "nvrtc", d.compiler.Path())
	return d, nil
}

// readInfo reads the device's name, compute capability and multiprocessor count.
func (d *Device) readInfo() error {
	dev, r := libcuda.DeviceGet(d.ordinal)
	if r == libcuda.Success {
		d.name, r = libcuda.DeviceGetName(dev)
	}
	for _, a := range []struct {
		attr libcuda.DeviceAttribute
		dst  *int
	}{
		{libcuda.AttrComputeCapabilityMajor, &d.ccMajor},
		{libcuda.AttrComputeCapabilityMinor, &d.ccMinor},
		{libcuda.AttrMultiprocessorCount, &d.sms},
	} {
		if r == libcuda.Success {
			*a.dst, r = libcuda.DeviceGetAttribute(a.attr, dev)
		}
	}
	return check("cuDeviceGet", r)
}

func (d *Device) openBLAS() error {
	lib, err := cublas.Open()
	if err != nil {
		return err
	}
	return d.withContext(func() error {
		h, err := lib.NewHandle()
		if err != nil {
			return err
		}
		if err := h.SetStream(d.stream); err != nil {
			h.Close()
			return err
		}
		d.blas = h
		return nil
	})
}

// withContext runs fn on a locked OS thread with the Device's context current, for calls into
// libraries (cuBLAS) that use the thread's current context.
func (d *Device) withContext(fn func() error) error {
	prev, r := libcuda.Enter(d.ctx)
	if err := check("cuCtxSetCurrent", r); err != nil {
		return err
	}
	defer libcuda.Leave(d.ctx, prev)
	return fn()
}

// in runs f with the Device's context current on the calling thread.
func (d *Device) in(f func() libcuda.Result) libcuda.Result { return libcuda.In(d.ctx, f) }

// Name is the GPU's name, e.g. "NVIDIA H200".
func (d *Device) Name() string { return d.name }

// Arch is the NVRTC virtual architecture the kernels are compiled for, e.g. "compute_90".
func (d *Device) Arch() string { return fmt.Sprintf("compute_%d%d", d.ccMajor, d.ccMinor) }

// Stream is the Device's compute stream, as the allocator sees it.
func (d *Device) Stream() stitch.Stream { return stitch.Stream(d.stream) }

// Synchronize waits until all work queued on the Device's stream has finished; kernel faults
// surface here.
func (d *Device) Synchronize() error {
	if d.closed {
		return ErrClosed
	}
	return check("cuStreamSynchronize", d.in(func() libcuda.Result { return libcuda.StreamSynchronize(d.stream) }))
}

// MarkIteration tells the Device's allocator that a training iteration begins, when it takes the
// hint (gmlake: an iteration of a shape seen before replays the last one's placements).
func (d *Device) MarkIteration() {
	if m, ok := d.alloc.(interface{ MarkIteration() }); ok {
		m.MarkIteration()
	}
}

// Close waits for queued work and releases the stream, modules, cuBLAS handle and context.
// Tensors must have been freed first.
func (d *Device) Close() error {
	if d.closed {
		return nil
	}
	err := d.Synchronize()
	if d.partials != nil {
		err = errors.Join(err, d.partials.Free())
	}
	if d.blas != nil {
		err = errors.Join(err, d.withContext(d.blas.Close))
	}
	for _, m := range d.modules {
		err = errors.Join(err, check("cuModuleUnload", d.in(func() libcuda.Result { return libcuda.ModuleUnload(m) })))
	}
	d.releaseContext()
	d.closed = true
	return err
}

func (d *Device) releaseContext() {
	if d.stream != 0 {
		d.in(func() libcuda.Result { return libcuda.StreamDestroy(d.stream) })
		d.stream = 0
	}
	libcuda.PrimaryCtxRelease(d.ordinal)
}

// directAllocator is cuMemAlloc/cuMemFree per request: the no-pool baseline, and the default.
type directAllocator struct {
	ctx libcuda.Context
	mu  sync.Mutex
}

func (a *directAllocator) Alloc(size uint64, _ stitch.Stream) (uintptr, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var p uint64
	r := libcuda.In(a.ctx, func() (r libcuda.Result) {
		p, r = libcuda.MemAlloc(size)
		return r
	})
	if err := check("cuMemAlloc", r); err != nil {
		return 0, err
	}
	return uintptr(p), nil
}

func (a *directAllocator) Free(ptr uintptr, _ uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return check("cuMemFree", libcuda.In(a.ctx, func() libcuda.Result { return libcuda.MemFree(uint64(ptr)) }))
}
