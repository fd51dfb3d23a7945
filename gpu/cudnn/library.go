package cudnn

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/ebitengine/purego"
)

// EnvVar names the environment variable that, when set, is the only cuDNN library tried.
const EnvVar = "GMLAKE_CUDNN"

// Candidates are the cuDNN sonames tried when EnvVar is unset, newest first, each bare (the
// loader's search path) and under the folders where distributions and the CUDA toolkit put them.
var Candidates = candidates("libcudnn.so.9", "libcudnn.so.8")

var folders = []string{"", "/usr/lib/x86_64-linux-gnu/", "/usr/local/cuda/lib64/", "/usr/lib/aarch64-linux-gnu/"}

func candidates(sonames ...string) []string {
	var out []string
	for _, f := range folders {
		for _, s := range sonames {
			out = append(out, f+s)
		}
	}
	return out
}

// ErrUnavailable is wrapped by every error meaning that cuDNN cannot be used in this process:
// no library, or one lacking a function this package calls.
var ErrUnavailable = errors.New("cudnn: library not available")

// OpenError says that none of the candidate libraries could be opened.
type OpenError struct {
	Tried []string // each candidate with the loader's reason
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("cudnn: cannot open any of [%s] (set %s to the library's path)", strings.Join(e.Tried, "; "), EnvVar)
}

// Unwrap makes errors.Is(err, ErrUnavailable) hold.
func (e *OpenError) Unwrap() error { return ErrUnavailable }

// SymbolError says that the opened library lacks a function (a version too old, or not cuDNN).
type SymbolError struct {
	Path, Symbol string
}

func (e *SymbolError) Error() string { return fmt.Sprintf("cudnn: %s has no %s", e.Path, e.Symbol) }

// Unwrap makes errors.Is(err, ErrUnavailable) hold.
func (e *SymbolError) Unwrap() error { return ErrUnavailable }

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
	list := Candidates
	if v := os.Getenv(EnvVar); v != "" {
		list = []string{v}
	}
	var tried []string
	for _, name := range list {
		h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		l := &Library{path: name}
		if err := l.fn.resolve(h, name); err != nil {
			return nil, err
		}
		l.version = int(l.fn.getVersion())
		if l.version < 8000 {
			return nil, fmt.Errorf("%w: %s is cuDNN version %d, want 8 or 9", ErrUnavailable, name, l.version)
		}
		return l, nil
	}
	return nil, &OpenError{Tried: tried}
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
