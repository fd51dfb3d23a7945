//go:build cuda || gmlakegpu

package gpu

// #include "libcuda.h"
import "C"

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"

	"github.com/gmlake/gmlake/gpu/cublas"
	"github.com/gmlake/gmlake/gpu/nvrtc"
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
	ctx      C.CUcontext
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
	var name [256]C.char
	var major, minor, sms C.int
	if err := check("cuDeviceGet", C.gk_device_info(C.int(d.ordinal), &name[0], C.int(len(name)), &major, &minor,
		&sms)); err != nil {
		return nil, fmt.Errorf("gpu: device %d: %w", d.ordinal, err)
	}
	d.name, d.ccMajor, d.ccMinor, d.sms = C.GoString(&name[0]), int(major), int(minor), int(sms)
	if err := check("cuDevicePrimaryCtxRetain", C.gk_primary_retain(C.int(d.ordinal), &d.ctx)); err != nil {
		return nil, err
	}
	var s C.uintptr_t
	if err := check("cuStreamCreate", C.gk_stream_create(d.ctx, &s)); err != nil {
		d.releaseContext()
		return nil, err
	}
	d.stream = uintptr(s)
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
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var prev C.CUcontext
	if err := check("cuCtxSetCurrent", C.gk_enter(d.ctx, &prev)); err != nil {
		return err
	}
	defer C.gk_leave(d.ctx, prev)
	return fn()
}

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
	return check("cuStreamSynchronize", C.gk_stream_synchronize(d.ctx, C.uintptr_t(d.stream)))
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
		err = errors.Join(err, check("cuModuleUnload", C.gk_module_unload(d.ctx, C.uintptr_t(m))))
	}
	d.releaseContext()
	d.closed = true
	return err
}

func (d *Device) releaseContext() {
	if d.stream != 0 {
		C.gk_stream_destroy(d.ctx, C.uintptr_t(d.stream))
		d.stream = 0
	}
	C.gk_primary_release(C.int(d.ordinal))
}

// directAllocator is cuMemAlloc/cuMemFree per request: the no-pool baseline, and the default.
type directAllocator struct {
	ctx C.CUcontext
	mu  sync.Mutex
}

func (a *directAllocator) Alloc(size uint64, _ stitch.Stream) (uintptr, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var p C.uint64_t
	if err := check("cuMemAlloc", C.gk_mem_alloc(a.ctx, C.size_t(size), &p)); err != nil {
		return 0, err
	}
	return uintptr(p), nil
}

func (a *directAllocator) Free(ptr uintptr, _ uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return check("cuMemFree", C.gk_mem_free(a.ctx, C.uint64_t(ptr)))
}
