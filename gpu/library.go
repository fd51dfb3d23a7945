//go:build cuda

package gpu

// #cgo LDFLAGS: -ldl
// #include <stdlib.h>
// #include "libcuda.h"
import "C"

import (
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/gmlake/gmlake/driver/cuda"
)

var (
	loadOnce sync.Once
	loadErr  error
)

// loadLibrary opens the driver library once per process (GMLAKE_LIBCUDA, else libcuda.so.1) and
// initialises the driver API. Without a driver it returns an error wrapping cuda.ErrUnavailable.
func loadLibrary() error {
	loadOnce.Do(func() {
		path := os.Getenv(cuda.LibraryEnv)
		if path == "" {
			path = "libcuda.so.1"
		}
		cpath := C.CString(path)
		defer C.free(unsafe.Pointer(cpath))
		var msg [512]C.char
		if C.gk_load(cpath, &msg[0], C.size_t(len(msg))) != 0 {
			loadErr = fmt.Errorf("%w: loading %s: %s", cuda.ErrUnavailable, path, C.GoString(&msg[0]))
			return
		}
		loadErr = check("cuInit", C.gk_init())
	})
	return loadErr
}

// check turns a CUresult into nil or a *cuda.Error (errors.Is(err, stitch.ErrOutOfMemory) for an
// out-of-memory code, cuda.ErrUnavailable for "no usable GPU").
func check(call string, r C.CUresult) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	return &cuda.Error{Call: call, Code: cuda.Result(r)}
}

// DeviceCount returns how many CUDA devices the driver sees; an error wrapping cuda.ErrUnavailable
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
