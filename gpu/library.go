package gpu

import (
	"errors"
	"fmt"

	"github.com/gmlake/gmlake/internal/dl"
	"github.com/gmlake/gmlake/internal/libcuda"
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
	if name := libcuda.ErrorName(libcuda.Result(e.Code)); name != "" {
		return fmt.Sprintf("gpu: %s: %s (%d)", e.Call, name, e.Code)
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

// loadLibrary opens the driver library once per process (GMLAKE_LIBCUDA, else libcuda.so.1; the
// one internal/libcuda opens for driver/cuda too) and initialises the driver API. Without a
// driver it returns an error wrapping ErrUnavailable.
func loadLibrary() error {
	err := libcuda.Init("")
	var ie *libcuda.InitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ie):
		return check("cuInit", ie.Code)
	case errors.Is(err, dl.ErrNotFound), errors.Is(err, dl.ErrMissingSymbol):
		return fmt.Errorf("%w: loading %s: %w", ErrUnavailable, libcuda.Path(), err)
	}
	return err
}

// check turns a CUresult into nil or a *CUDAError.
func check(call string, r libcuda.Result) error {
	if r == libcuda.Success {
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
	n, r := libcuda.DeviceGetCount()
	if err := check("cuDeviceGetCount", r); err != nil {
		return 0, err
	}
	return n, nil
}
