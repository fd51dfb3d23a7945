package nccl

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gmlake/gmlake/internal/dl"
)

// ErrUnavailable is wrapped by every error saying that NCCL (or the CUDA driver) cannot be used here.
var ErrUnavailable = errors.New("nccl: library unavailable")

// ErrNCCL is wrapped by every *Error.
var ErrNCCL = errors.New("nccl call failed")

// Sentinels for NCCL's result codes; an *Error wraps the one of its code.
var (
	ErrUnhandledCuda   = errors.New("nccl: unhandled cuda error")
	ErrSystem          = errors.New("nccl: system error")
	ErrInternal        = errors.New("nccl: internal error")
	ErrInvalidArgument = errors.New("nccl: invalid argument")
	ErrInvalidUsage    = errors.New("nccl: invalid usage")
	ErrRemote          = errors.New("nccl: remote error")
	ErrInProgress      = errors.New("nccl: operation in progress")
)

// Result is an ncclResult_t.
type Result int

// NCCL's result codes (nccl.h).
const (
	Success            Result = 0
	UnhandledCudaError Result = 1
	SystemError        Result = 2
	InternalError      Result = 3
	InvalidArgument    Result = 4
	InvalidUsage       Result = 5
	RemoteError        Result = 6
	InProgress         Result = 7
)

var resultInfo = map[Result]struct {
	name     string
	sentinel error
}{
	Success:            {"ncclSuccess", nil},
	UnhandledCudaError: {"ncclUnhandledCudaError", ErrUnhandledCuda},
	SystemError:        {"ncclSystemError", ErrSystem},
	InternalError:      {"ncclInternalError", ErrInternal},
	InvalidArgument:    {"ncclInvalidArgument", ErrInvalidArgument},
	InvalidUsage:       {"ncclInvalidUsage", ErrInvalidUsage},
	RemoteError:        {"ncclRemoteError", ErrRemote},
	InProgress:         {"ncclInProgress", ErrInProgress},
}

func (r Result) String() string {
	if info, ok := resultInfo[r]; ok {
		return info.name
	}
	return fmt.Sprintf("ncclResult(%d)", int(r))
}

// Error is a failed NCCL call.
type Error struct {
	Call    string // e.g. "ncclAllReduce"
	Result  Result
	Message string // ncclGetErrorString's text, when the library was there to ask
}

func (e *Error) Error() string {
	msg := "nccl: " + e.Call + ": " + e.Result.String()
	if e.Message != "" && !strings.EqualFold(e.Message, e.Result.String()) {
		msg += " (" + e.Message + ")"
	}
	return msg
}

// Unwrap returns ErrNCCL and the sentinel of the result code, so errors.Is matches either.
func (e *Error) Unwrap() []error {
	errs := []error{ErrNCCL}
	if info, ok := resultInfo[e.Result]; ok && info.sentinel != nil {
		errs = append(errs, info.sentinel)
	}
	return errs
}

// OpenError says that a library could not be opened from any candidate; Open's error wraps it
// together with ErrUnavailable.
type OpenError = dl.OpenError

// SymbolError says that an opened library lacks a symbol (a version too old); Open's error wraps
// it together with ErrUnavailable: a library without the calls is as good as none.
type SymbolError = dl.SymbolError
