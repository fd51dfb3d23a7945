package cuda

import (
	"errors"
	"fmt"

	"github.com/gmlake/gmlake/internal/libcuda"
	"github.com/gmlake/gmlake/stitch"
)

// Result is a CUresult, the status code every CUDA driver call returns.
type Result int

// The codes this package tests for; any other code is still reported with its name.
const (
	Success              Result = Result(libcuda.Success)
	InvalidValue         Result = Result(libcuda.InvalidValue)
	OutOfMemory          Result = Result(libcuda.OutOfMemory)
	NotInitialized       Result = Result(libcuda.NotInitialized)
	StubLibrary          Result = Result(libcuda.StubLibrary)
	SystemDriverMismatch Result = Result(libcuda.SystemDriverMismatch)
	DeviceUnavailable    Result = Result(libcuda.DeviceUnavailable)
	NoDevice             Result = Result(libcuda.NoDevice)
	InvalidDevice        Result = Result(libcuda.InvalidDevice)
	InvalidContext       Result = Result(libcuda.InvalidContext)
	InvalidHandle        Result = Result(libcuda.InvalidHandle)
	NotReady             Result = Result(libcuda.NotReady)
	IllegalAddress       Result = Result(libcuda.IllegalAddress)
	NotPermitted         Result = Result(libcuda.NotPermitted)
	NotSupported         Result = Result(libcuda.NotSupported)
)

var resultNames = map[Result]string{
	Success: "CUDA_SUCCESS", InvalidValue: "CUDA_ERROR_INVALID_VALUE", OutOfMemory: "CUDA_ERROR_OUT_OF_MEMORY",
	NotInitialized: "CUDA_ERROR_NOT_INITIALIZED", StubLibrary: "CUDA_ERROR_STUB_LIBRARY",
	SystemDriverMismatch: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", DeviceUnavailable: "CUDA_ERROR_DEVICE_UNAVAILABLE",
	NoDevice: "CUDA_ERROR_NO_DEVICE", InvalidDevice: "CUDA_ERROR_INVALID_DEVICE",
	InvalidContext: "CUDA_ERROR_INVALID_CONTEXT", InvalidHandle: "CUDA_ERROR_INVALID_HANDLE",
	NotReady: "CUDA_ERROR_NOT_READY", IllegalAddress: "CUDA_ERROR_ILLEGAL_ADDRESS",
	NotPermitted: "CUDA_ERROR_NOT_PERMITTED", NotSupported: "CUDA_ERROR_NOT_SUPPORTED",
}

// String names the code as cuda.h does, asking the driver for codes this package does not list.
func (r Result) String() string {
	if name, ok := resultNames[r]; ok {
		return name
	}
	if name := libcuda.ErrorName(libcuda.Result(r)); name != "" {
		return name
	}
	return fmt.Sprintf("CUresult(%d)", int(r))
}

// Error is a failed driver call: which call, and the code it returned.
type Error struct {
	Call string // the driver function, e.g. "cuMemCreate"
	Code Result
}

func (e *Error) Error() string {
	return fmt.Sprintf("cuda: %s: %v (%d)", e.Call, e.Code, int(e.Code))
}

// Unwrap lets callers test the meaning of a code with errors.Is: CUDA_ERROR_OUT_OF_MEMORY is
// stitch.ErrOutOfMemory; codes that mean "no usable GPU here" are ErrUnavailable.
func (e *Error) Unwrap() error {
	switch e.Code {
	case OutOfMemory:
		return stitch.ErrOutOfMemory
	case NoDevice, StubLibrary, SystemDriverMismatch, DeviceUnavailable, NotSupported:
		return ErrUnavailable
	}
	return nil
}

// check turns a CUresult into nil or an *Error naming call.
func check(call string, r libcuda.Result) error {
	if r == libcuda.Success {
		return nil
	}
	return &Error{Call: call, Code: Result(r)}
}

var (
	// ErrUnavailable is wrapped by every error that means this process cannot use a GPU: no
	// driver library, no device, a stub library, a driver too old, or a device without virtual
	// memory management. Callers fall back to another driver on it.
	ErrUnavailable = errors.New("cuda: no usable GPU")
	// ErrClosed is returned by calls on a closed Driver.
	ErrClosed = errors.New("cuda: driver closed")
	// ErrGranularity is returned by New for a granularity that is not a power-of-two multiple of
	// the device's minimum, and by calls whose sizes or offsets are not multiples of it.
	ErrGranularity = errors.New("cuda: size not a multiple of the granularity")
	// ErrUnknownHandle is returned for a PhysHandle that Create did not return or that was released.
	ErrUnknownHandle = errors.New("cuda: unknown physical handle")
	// ErrLibraryLoaded is returned by New when WithLibrary names a library other than the one
	// this process already loaded.
	ErrLibraryLoaded = errors.New("cuda: another driver library is already loaded")
	// ErrOutOfRange is returned by Map for a range that is not the whole physical allocation
	// (cuMemMap maps a handle only whole, from offset 0).
	ErrOutOfRange = errors.New("cuda: range not the whole physical allocation")
)
