package cuda

import (
	"errors"
	"fmt"

	"github.com/gmlake/gmlake/internal/dl"
	"github.com/gmlake/gmlake/internal/libcuda"
)

// LibraryEnv names the environment variable that overrides the driver library's path.
const LibraryEnv = "GMLAKE_LIBCUDA"

// loadLibrary opens the driver library once per process (path, else $GMLAKE_LIBCUDA, else
// libcuda.so.1) and initialises the driver API. A later call that names another library
// explicitly fails with ErrLibraryLoaded: one process has one CUDA driver. A missing library or
// symbol wraps ErrUnavailable; a failing cuInit is an *Error, which wraps ErrUnavailable for the
// codes that mean "no usable GPU" (no device, a stub library, a driver too old).
func loadLibrary(path string) error {
	err := libcuda.Init(path)
	var ie *libcuda.InitError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, libcuda.ErrOtherLibrary):
		return fmt.Errorf("%w: %w", ErrLibraryLoaded, err)
	case errors.As(err, &ie):
		return &Error{Call: "cuInit", Code: Result(ie.Code)}
	case errors.Is(err, dl.ErrNotFound), errors.Is(err, dl.ErrMissingSymbol):
		return fmt.Errorf("%w: loading %s: %w", ErrUnavailable, libcuda.Path(), err)
	}
	return err
}

func libraryLoaded() bool { return libcuda.Initialized() }

// DriverVersion returns the CUDA version the installed driver supports, as 1000*major + 10*minor
// (13000 for CUDA 13.0).
func DriverVersion() (int, error) {
	if err := loadLibrary(""); err != nil {
		return 0, err
	}
	v, r := libcuda.DriverGetVersion()
	return v, check("cuDriverGetVersion", r)
}

// DeviceCount returns how many CUDA devices the driver sees. Without a driver it returns an error
// wrapping ErrUnavailable.
func DeviceCount() (int, error) {
	if err := loadLibrary(""); err != nil {
		return 0, err
	}
	n, r := libcuda.DeviceGetCount()
	return n, check("cuDeviceGetCount", r)
}
