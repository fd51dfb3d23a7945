//go:build cuda || gmlakegpu

package gpu

// #cgo LDFLAGS: -ldl
// #include <stdlib.h>
// #include "libcuda.h"
import "C"

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/gmlake/gmlake/stitch"
)

// LibraryEnv names the environment variable that overrides the driver library's path (the same
// one driver/cuda reads).
const LibraryEnv = "GMLAKE_LIBCUDA"

// ErrUnavailable is wrapped by every error that means this process cannot use a GPU: no driver
// library, no device, a stub library, a driver too old.
var ErrUnavailable = errors.New("gpu: no usable GPU")

// CUDAError is a failed CUDA driver call: which call, and the CUresult it returned.
type CUDAError struct {
	Call string
	Code int
}

// CUresult codes this package gives a meaning to.
const (
	cuOutOfMemory          = 2
	cuNoDevice             = 100
	cuStubLibrary          = 34
	cuSystemDriverMismatch = 803
	cuDeviceUnavailable    = 46
)

func (e *CUDAError) Error() string {
	var name *C.char
	if loadErr == nil && C.gk_error_name(C.CUresult(e.Code), &name) == C.CUDA_SUCCESS && name != nil {
		return fmt.Sprintf("gpu: %s: %s (%d)", e.Call, C.GoString(name), e.Code)
	}
	return fmt.Sprintf("gpu: %s: CUresult %d", e.Call, e.Code)
}

// Unwrap makes errors.Is(err, stitch.ErrOutOfMemory) hold for CUDA_ERROR_OUT_OF_MEMORY and
// errors.Is(err, ErrUnavailable) for the codes that mean "no usable GPU here".
func (e *CUDAError) Unwrap() error {
	switch e.Code {
	case cuOutOfMemory:
		return stitch.ErrOutOfMemory
	case cuNoDevice, cuStubLibrary, cuSystemDriverMismatch, cuDeviceUnavailable:
		return ErrUnavailable
	}
	return nil
}

var (
	loadOnce sync.Once
	loadErr  error = errors.New("gpu: driver library not loaded yet")
)

// loadLibrary opens the driver library once per process (GMLAKE_LIBCUDA, else libcuda.so.1) and
// initialises the driver API. Without a driver it returns an error wrapping ErrUnavailable.
func loadLibrary() error {
	loadOnce.Do(func() {
		path := os.Getenv(LibraryEnv)
		if path == "" {
			path = "libcuda.so.1"
		}
		cpath := C.CString(path)
		defer C.free(unsafe.Pointer(cpath))
		var msg [512]C.char
		if C.gk_load(cpath, &msg[0], C.size_t(len(msg))) != 0 {
			loadErr = fmt.Errorf("%w: loading %s: %s", ErrUnavailable, path, C.GoString(&msg[0]))
			return
		}
		loadErr = nil
		if err := check("cuInit", C.gk_init()); err != nil {
			loadErr = err
		}
	})
	return loadErr
}

// check turns a CUresult into nil or a *CUDAError.
func check(call string, r C.CUresult) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	return &CUDAError{Call: call, Code: int(r)}
}

// DeviceCount returns how many CUDA devices the driver sees; an error wrapping ErrUnavailable
// when there is no driver or no device.
func DeviceCount() (int, error) {
	if err := loadLibrary(); err != nil {
		return 0, err
	}
	var n C.int
	if err := check("cuDeviceGetCount", C.gk_device_count(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}
