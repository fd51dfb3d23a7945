package cudnn

import (
	"errors"
	"fmt"
	"sync"

	"github.com/gmlake/gmlake/internal/dl"
)

// EnvVar names the environment variable that, when set, is the only cuDNN library tried.
const EnvVar = "GMLAKE_CUDNN"

// Candidates are the cuDNN sonames tried when EnvVar is unset, newest first, on the loader's path,
// in the folder where Debian and Ubuntu packages put them, and under the CUDA folders.
var Candidates = dl.CuDNN.Candidates

// ErrUnavailable is wrapped by every error meaning that cuDNN cannot be used in this process: no
// library (the error also wraps a *dl.OpenError naming every candidate tried), or one lacking a
// function this package calls (a *dl.SymbolError), or one older than cuDNN 8.
var ErrUnavailable = errors.New("cudnn: library not available")

// ErrStatus is wrapped by every *Error (a cuDNN call that returned a status other than success).
var ErrStatus = errors.New("cudnn: call failed")

// Error is a failed cuDNN call: which call, its cudnnStatus_t and cuDNN's text for it.
type Error struct {
	Call   string
	Status int
	Text   string
}

func (e *Error) Error() string {
	return fmt.Sprintf("cudnn: %s: %s (status %d)", e.Call, e.Text, e.Status)
}

// Unwrap makes errors.Is(err, ErrStatus) hold.
func (e *Error) Unwrap() error { return ErrStatus }

// Library is the opened cuDNN with its functions. It is never closed: a process opens it once.
type Library struct {
	path    string
	version int
	fn      functions
}

var (
	openOnce sync.Once
	opened   *Library
	openErr  error
)

// Open opens cuDNN once per process (see the package doc for where it looks).
func Open() (*Library, error) {
	openOnce.Do(func() { opened, openErr = open() })
	return opened, openErr
}

func open() (*Library, error) {
	lib, err := dl.Open(dl.CuDNN.What, EnvVar, Candidates)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	l := &Library{path: lib.Path()}
	if err := l.fn.resolve(lib); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	l.version = int(l.fn.getVersion())
	if l.version < 8000 {
		return nil, fmt.Errorf("%w: %s is cuDNN version %d, want 8 or 9", ErrUnavailable, l.path, l.version)
	}
	return l, nil
}

// Path is the name the library was opened under.
func (l *Library) Path() string { return l.path }

// Version is cuDNN's version number (e.g. 91400 for 9.14.0; 8907 for 8.9.7).
func (l *Library) Version() int { return l.version }

// check turns a cudnnStatus_t into an error.
func (l *Library) check(call string, status int32) error {
	if status == statusSuccess {
		return nil
	}
	return &Error{Call: call, Status: int(status), Text: l.fn.getErrorString(status)}
}
