//go:build cuda || gmlakegpu

package cuda

// #cgo LDFLAGS: -ldl
// #include <stdlib.h>
// #include "libcuda.h"
import "C"

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"
)

// LibraryEnv names the environment variable that overrides the driver library's path.
const LibraryEnv = "GMLAKE_LIBCUDA"

// defaultLibrary is the driver's soname; the NVIDIA driver installs it on the default library path.
const defaultLibrary = "libcuda.so.1"

var (
	loadOnce   sync.Once
	loadErr    error
	loadedPath string // the library loadOnce opened (or tried to)
	loadedFlag atomic.Bool
)

func libraryLoaded() bool { return loadedFlag.Load() }

// loadLibrary opens the driver library once per process and initialises the driver API. A later
// call that names another library explicitly fails with ErrLibraryLoaded: one process has one
// CUDA driver.
func loadLibrary(path string) error {
	explicit := path != ""
	loadOnce.Do(func() {
		if path == "" {
			path = os.Getenv(LibraryEnv)
		}
		if path == "" {
			path = defaultLibrary
		}
		loadedPath = path
		cpath := C.CString(path)
		defer C.free(unsafe.Pointer(cpath))
		var msg [512]C.char
		if C.gm_load(cpath, &msg[0], C.size_t(len(msg))) != 0 {
			loadErr = fmt.Errorf("%w: loading %s: %s", ErrUnavailable, path, C.GoString(&msg[0]))
			return
		}
		loadedFlag.Store(true)
		loadErr = check("cuInit", C.gm_init())
	})
	if explicit && path != loadedPath {
		return fmt.Errorf("%w: %s asked, %s in use", ErrLibraryLoaded, path, loadedPath)
	}
	return loadErr
}

// DriverVersion returns the CUDA version the installed driver supports, as 1000*major + 10*minor
// (13000 for CUDA 13.0).
func DriverVersion() (int, error) {
	if err := loadLibrary(""); err != nil {
		return 0, err
	}
	var v C.int
	if err := check("cuDriverGetVersion", C.gm_driver_version(&v)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// DeviceCount returns how many CUDA devices the driver sees. Without a driver it returns an error
// wrapping ErrUnavailable.
func DeviceCount() (int, error) {
	if err := loadLibrary(""); err != nil {
		return 0, err
	}
	var n C.int
	if err := check("cuDeviceGetCount", C.gm_device_count(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}
