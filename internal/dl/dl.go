// Package dl opens the CUDA libraries (the driver, cuBLAS, NVRTC, cuDNN, NCCL) at run time and calls
// into them without cgo, through github.com/ebitengine/purego. It is the one loader every binding
// in this module uses, for two reasons:
//
//   - Their sonames change with every major CUDA release (libcublas.so.11 in Debian's 11.8
//     packages, .so.13 on a CUDA 13 machine): linking against one at build time would tie the
//     binary to that release, and a binary linked against libcuda or NCCL would not even start
//     where they are missing. Opened at run time, one binary works with whichever version a
//     machine has, and says clearly when there is none.
//   - Without cgo nothing CUDA is needed to build: no headers, no link stubs, no C compiler.
//     Every package builds with CGO_ENABLED=0, and `go build` of a user's module includes the
//     GPU support with no flags.
//
// A Library is opened from a Spec: a list of candidate names tried in order, and an environment
// variable that, when set, replaces the list with the one path it names. Every failure is an
// *OpenError or a *SymbolError that says what was tried and why each candidate failed.
//
// Calls go through Call, which takes the C function's address and its arguments as uintptrs in
// the order of the C prototype, under the platform's C calling convention (on x86-64, the first
// six in registers and the rest on the stack, each in a full 8-byte slot). Integer results are
// returned whole: a caller whose C function returns a 32-bit int (CUresult, cublasStatus_t,
// ncclResult_t) keeps only the low 32 bits, the upper ones being undefined. No binding here
// passes floats by value (cuBLAS takes its scalars by pointer), which SyscallN cannot mix with
// integers, and none registers callbacks.
package dl

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// ErrNotFound is wrapped by every error saying that a library could not be opened.
var ErrNotFound = errors.New("shared library not found")

// ErrMissingSymbol is wrapped by every error saying that an opened library lacks a symbol.
var ErrMissingSymbol = errors.New("symbol not found in shared library")

// OpenError says that none of the candidate names of a library could be opened.
type OpenError struct {
	Library string   // what was looked for, e.g. "cuBLAS"
	EnvVar  string   // the variable that overrides the candidates, e.g. "GMLAKE_CUBLAS"
	Tried   []string // each candidate with the loader's reason, in the order tried
}

func (e *OpenError) Error() string {
	msg := fmt.Sprintf("%s: cannot open any of [%s]", e.Library, strings.Join(e.Tried, "; "))
	if e.EnvVar != "" {
		msg += fmt.Sprintf(" (set %s to the library's path)", e.EnvVar)
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrNotFound) hold.
func (e *OpenError) Unwrap() error { return ErrNotFound }

// SymbolError says that an opened library lacks a symbol (usually: a version too old).
type SymbolError struct {
	Library string // what was looked for, e.g. "cuBLAS"
	Path    string // the name it was opened under
	Symbol  string
}

func (e *SymbolError) Error() string {
	return fmt.Sprintf("%s (%s): missing symbol %s", e.Library, e.Path, e.Symbol)
}

// Unwrap makes errors.Is(err, ErrMissingSymbol) hold.
func (e *SymbolError) Unwrap() error { return ErrMissingSymbol }

// cudaDirs are the folders a CUDA toolkit installs its libraries in, after the loader's default
// path ("").
var cudaDirs = []string{"", "/usr/local/cuda/lib64/", "/usr/local/cuda/targets/x86_64-linux/lib/"}

// CUDACandidates lists the sonames on the loader's default path, then under the usual CUDA
// folders, in the order given: a candidate list for Open.
func CUDACandidates(sonames ...string) []string {
	out := make([]string, 0, len(cudaDirs)*len(sonames))
	for _, d := range cudaDirs {
		for _, s := range sonames {
			out = append(out, d+s)
		}
	}
	return out
}

// Spec says how to find one library: what it is (for errors), the environment variable that
// overrides the search, and the names tried otherwise.
type Spec struct {
	What       string
	EnvVar     string
	Candidates []string
}

// The libraries this module binds. Candidates list the newest soname first.
var (
	// CUDADriver is libcuda, which the NVIDIA driver installs on the default library path.
	CUDADriver = Spec{What: "CUDA driver", EnvVar: "GMLAKE_LIBCUDA", Candidates: []string{"libcuda.so.1"}}
	// CuBLAS works from cuBLAS 11 (Debian's CUDA 11.8) through 13.
	CuBLAS = Spec{What: "cuBLAS", EnvVar: "GMLAKE_CUBLAS",
		Candidates: CUDACandidates("libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so")}
	// NVRTC works from 11.2 through 13.
	NVRTC = Spec{What: "NVRTC", EnvVar: "GMLAKE_NVRTC", Candidates: CUDACandidates(
		"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so.11.1", "libnvrtc.so.11.0", "libnvrtc.so")}
	// CuDNN works with cuDNN 8 and 9; Debian and Ubuntu packages put it in /usr/lib/x86_64-linux-gnu.
	CuDNN = Spec{What: "cuDNN", EnvVar: "GMLAKE_CUDNN", Candidates: append([]string{
		"libcudnn.so.9", "libcudnn.so.8",
		"/usr/lib/x86_64-linux-gnu/libcudnn.so.9", "/usr/lib/x86_64-linux-gnu/libcudnn.so.8",
	}, CUDACandidates("libcudnn.so.9", "libcudnn.so.8")[2:]...)}
	// NCCL: Debian and Ubuntu put it in /usr/lib/x86_64-linux-gnu, CUDA's installers in its folders.
	NCCL = Spec{What: "NCCL", EnvVar: "GMLAKE_NCCL", Candidates: []string{
		"libnccl.so.2", "libnccl.so",
		"/usr/lib/x86_64-linux-gnu/libnccl.so.2",
		"/usr/local/cuda/lib64/libnccl.so.2",
		"/usr/local/cuda/targets/x86_64-linux/lib/libnccl.so.2",
	}}
)

// Open opens the library of s.
func (s Spec) Open() (*Library, error) { return Open(s.What, s.EnvVar, s.Candidates) }

// Library is an opened shared library. It is never closed: the CUDA libraries keep global state
// that does not survive an unload, and a process opens each of them once.
type Library struct {
	what   string
	path   string
	handle uintptr
}

// Open opens the library described by what (used in errors). When the environment variable envVar is
// set and non-empty, only its value is tried; otherwise each of candidates in turn.
func Open(what, envVar string, candidates []string) (*Library, error) {
	if v := os.Getenv(envVar); envVar != "" && v != "" {
		candidates = []string{v}
	}
	oe := &OpenError{Library: what, EnvVar: envVar}
	for _, name := range candidates {
		h, err := open(name)
		if err == nil {
			return &Library{what: what, path: name, handle: h}, nil
		}
		oe.Tried = append(oe.Tried, name+": "+err.Error())
	}
	return nil, oe
}

// open keeps the goroutine on one thread so that dlerror reports this thread's dlopen.
func open(name string) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
}

// Path is the name the library was opened under.
func (l *Library) Path() string { return l.path }

// Symbol resolves name to the address of the function (or variable) it names.
func (l *Library) Symbol(name string) (uintptr, error) {
	p, err := purego.Dlsym(l.handle, name)
	if err != nil || p == 0 {
		return 0, &SymbolError{Library: l.what, Path: l.path, Symbol: name}
	}
	return p, nil
}

// Symbols resolves each name into the address it is paired with, stopping at the first missing one.
func (l *Library) Symbols(table map[string]*uintptr) error {
	for name, dst := range table {
		p, err := l.Symbol(name)
		if err != nil {
			return err
		}
		*dst = p
	}
	return nil
}

// Func resolves name and makes the function fptr points to call it, converting arguments and the
// result by their Go types (purego.RegisterFunc: structs by value with the C layout, pointers,
// fixed-size integers). It costs more per call than Call; use it for what Call cannot pass, such
// as a struct by value.
func (l *Library) Func(name string, fptr any) error {
	p, err := l.Symbol(name)
	if err != nil {
		return err
	}
	purego.RegisterFunc(fptr, p)
	return nil
}

// Call calls the C function at fn with args and returns its integer result (see the package
// comment for the convention). A Go pointer given as uintptr(unsafe.Pointer(p)) in the argument
// list is kept alive and in place for the call, as for syscall.Syscall; memory that the C side
// reads through pointers stored inside other memory must be kept alive by the caller
// (runtime.KeepAlive after the call).
//
//go:uintptrescapes
func Call(fn uintptr, args ...uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}

// Call32 is Call for C functions that return a 32-bit int: the low half of the result, signed.
//
//go:uintptrescapes
func Call32(fn uintptr, args ...uintptr) int32 {
	r, _, _ := purego.SyscallN(fn, args...)
	return int32(r)
}

// CString is s as a NUL-terminated C string in Go memory, for passing with BytePtr. It is always
// allocated on the heap, where it does not move.
func CString(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}

// BytePtr is the address of b's first byte, 0 for an empty slice.
func BytePtr(b []byte) uintptr {
	if len(b) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(&b[0]))
}

// GoString copies the NUL-terminated C string at p (memory owned by a C library) into a Go string;
// "" for a null pointer.
func GoString(p uintptr) string {
	if p == 0 {
		return ""
	}
	base := cPointer(p)
	n := 0
	for *(*byte)(unsafe.Add(base, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(base), n))
}

// cPointer turns an address of C memory, which the Go collector neither tracks nor moves, into a
// pointer.
func cPointer(p uintptr) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&p))
}

// CBytes is the n bytes of C memory at p as a slice (no copy; valid while the C side keeps them).
func CBytes(p uintptr, n int) []byte {
	if p == 0 || n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(cPointer(p)), n)
}
