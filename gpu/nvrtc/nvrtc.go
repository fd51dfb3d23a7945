// Package nvrtc compiles CUDA C++ to PTX at run time through NVIDIA's NVRTC library, which it opens
// and calls without cgo (see internal/dl): one binary works with NVRTC 11.2 through 13, whichever
// the machine has, and builds with no CUDA headers. NVRTC is a compiler and needs no GPU, so this package (and the check that every
// project kernel compiles) also runs on machines without one, such as CI, given the library.
//
// The library is looked up, in order, by GMLAKE_NVRTC (a path, when set) or by the sonames of
// Candidates. A Compiler is safe for concurrent use.
package nvrtc

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"

	"github.com/gmlake/gmlake/internal/dl"
)

// EnvVar names the environment variable that, when set, is the only NVRTC library tried.
const EnvVar = "GMLAKE_NVRTC"

// Candidates are the NVRTC sonames tried, newest first, each also under the usual CUDA folders.
var Candidates = dl.NVRTC.Candidates

// ErrCompile is wrapped by every *CompileError.
var ErrCompile = errors.New("nvrtc: compilation failed")

// CompileError is a failed compilation, with NVRTC's log (the compiler's diagnostics).
type CompileError struct {
	Program string // the program's name, as given to Compile
	Result  string // NVRTC's result, e.g. NVRTC_ERROR_COMPILATION
	Log     string
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("nvrtc: compiling %s: %s\n%s", e.Program, e.Result, e.Log)
}

// Unwrap makes errors.Is(err, ErrCompile) hold.
func (e *CompileError) Unwrap() error { return ErrCompile }

// APIError is a failed NVRTC call other than the compilation itself.
type APIError struct {
	Call   string
	Result string
}

func (e *APIError) Error() string { return fmt.Sprintf("nvrtc: %s: %s", e.Call, e.Result) }

// Compiler is an opened NVRTC library.
type Compiler struct {
	lib                                                  *dl.Library
	create, compile, ptxSize, ptx, logSize, log, destroy uintptr
	errString, version                                   uintptr
}

// Open opens NVRTC (GMLAKE_NVRTC, else Candidates) and resolves the symbols the Compiler uses.
// Errors wrap dl.ErrNotFound or dl.ErrMissingSymbol.
func Open() (*Compiler, error) {
	lib, err := dl.Open(dl.NVRTC.What, EnvVar, Candidates)
	if err != nil {
		return nil, err
	}
	preloadBuiltins(lib.Path())
	c := &Compiler{lib: lib}
	err = lib.Symbols(map[string]*uintptr{
		"nvrtcCreateProgram":     &c.create,
		"nvrtcCompileProgram":    &c.compile,
		"nvrtcGetPTXSize":        &c.ptxSize,
		"nvrtcGetPTX":            &c.ptx,
		"nvrtcGetProgramLogSize": &c.logSize,
		"nvrtcGetProgramLog":     &c.log,
		"nvrtcDestroyProgram":    &c.destroy,
		"nvrtcGetErrorString":    &c.errString,
		"nvrtcVersion":           &c.version,
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// preloadBuiltins opens the builtins library (libnvrtc-builtins.so.X.Y) that NVRTC dlopens by soname
// at its first compilation, from the folder NVRTC was found in. Once loaded, NVRTC's own dlopen
// resolves to it by soname, so a library given by path (GMLAKE_NVRTC, or CUDA's own folder) works
// without LD_LIBRARY_PATH. Failures are left for NVRTC to report at compile time.
func preloadBuiltins(nvrtcPath string) {
	if !strings.Contains(nvrtcPath, "/") {
		return // found on the loader's path: so is its builtins library
	}
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(nvrtcPath), "libnvrtc-builtins.so.*"))
	for _, m := range matches {
		if _, err := dl.Open("NVRTC builtins", "", []string{m}); err == nil {
			return
		}
	}
}

// Path is the name the library was opened under.
func (c *Compiler) Path() string { return c.lib.Path() }

// Version is NVRTC's version, e.g. 11, 8.
func (c *Compiler) Version() (major, minor int, err error) {
	var ma, mi int32
	if r := dl.Call32(c.version, uintptr(unsafe.Pointer(&ma)), uintptr(unsafe.Pointer(&mi))); r != 0 {
		return 0, 0, c.apiError("nvrtcVersion", r)
	}
	return int(ma), int(mi), nil
}

func (c *Compiler) resultString(r int32) string {
	return dl.GoString(dl.Call(c.errString, uintptr(r)))
}

func (c *Compiler) apiError(call string, r int32) error {
	return &APIError{Call: call, Result: c.resultString(r)}
}

// Compile compiles the CUDA C++ source src (named name in diagnostics) with the given NVRTC options
// (e.g. "--gpu-architecture=compute_90") and returns the PTX, NUL-terminated as cuModuleLoadData
// wants it. A compilation error is a *CompileError carrying the compiler's log.
func (c *Compiler) Compile(name, src string, options ...string) ([]byte, error) {
	csrc, cname := dl.CString(src), dl.CString(name)
	var prog uintptr // nvrtcProgram
	if r := dl.Call32(c.create, uintptr(unsafe.Pointer(&prog)), dl.BytePtr(csrc), dl.BytePtr(cname), 0, 0, 0); r != 0 {
		return nil, c.apiError("nvrtcCreateProgram", r)
	}
	defer func() { dl.Call32(c.destroy, uintptr(unsafe.Pointer(&prog))) }()

	// NVRTC reads the options through an array of pointers: both stay alive until it returns.
	copts := make([][]byte, len(options))
	optv := make([]uintptr, len(options)+1)
	for i, o := range options {
		copts[i] = dl.CString(o)
		optv[i] = dl.BytePtr(copts[i])
	}
	r := dl.Call32(c.compile, prog, uintptr(len(options)), uintptr(unsafe.Pointer(&optv[0])))
	runtime.KeepAlive(copts)
	if r != 0 {
		return nil, &CompileError{Program: name, Result: c.resultString(r), Log: c.programLog(prog)}
	}

	var n uintptr
	if r := dl.Call32(c.ptxSize, prog, uintptr(unsafe.Pointer(&n))); r != 0 {
		return nil, c.apiError("nvrtcGetPTXSize", r)
	}
	buf := make([]byte, max(n, 1))
	if r := dl.Call32(c.ptx, prog, uintptr(unsafe.Pointer(&buf[0]))); r != 0 {
		return nil, c.apiError("nvrtcGetPTX", r)
	}
	return buf[:n], nil
}

func (c *Compiler) programLog(prog uintptr) string {
	var n uintptr
	if dl.Call32(c.logSize, prog, uintptr(unsafe.Pointer(&n))) != 0 || n == 0 {
		return ""
	}
	buf := make([]byte, n)
	if dl.Call32(c.log, prog, uintptr(unsafe.Pointer(&buf[0]))) != 0 {
		return ""
	}
	return strings.TrimRight(string(buf), "\x00")
}
