// Package nvrtc compiles CUDA C++ to PTX at run time through NVIDIA's NVRTC library, which it opens
// with dlopen (see internal/dl): one binary works with NVRTC 11.2 through 13, whichever the
// machine has. NVRTC is a compiler and needs no GPU, so this package (and the check that every
// project kernel compiles) also runs on machines without one, such as CI, given the library.
//
// The library is looked up, in order, by GMLAKE_NVRTC (a path, when set) or by the sonames of
// Candidates. A Compiler is safe for concurrent use.
package nvrtc

/*
#include <stdlib.h>
#include <stddef.h>

typedef int nvrtcResult;
typedef void *nvrtcProgram;

typedef nvrtcResult (*createProgram_t)(nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *);
typedef nvrtcResult (*compileProgram_t)(nvrtcProgram, int, const char *const *);
typedef nvrtcResult (*getSize_t)(nvrtcProgram, size_t *);
typedef nvrtcResult (*getText_t)(nvrtcProgram, char *);
typedef nvrtcResult (*destroyProgram_t)(nvrtcProgram *);
typedef const char *(*getErrorString_t)(nvrtcResult);
typedef nvrtcResult (*version_t)(int *, int *);

static nvrtcResult call_create(void *f, nvrtcProgram *p, const char *src, const char *name) {
	return ((createProgram_t)f)(p, src, name, 0, NULL, NULL);
}
static nvrtcResult call_compile(void *f, nvrtcProgram p, int n, const char *const *opts) {
	return ((compileProgram_t)f)(p, n, opts);
}
static nvrtcResult call_size(void *f, nvrtcProgram p, size_t *n) { return ((getSize_t)f)(p, n); }
static nvrtcResult call_text(void *f, nvrtcProgram p, char *dst) { return ((getText_t)f)(p, dst); }
static nvrtcResult call_destroy(void *f, nvrtcProgram *p) { return ((destroyProgram_t)f)(p); }
static const char *call_errstr(void *f, nvrtcResult r) { return ((getErrorString_t)f)(r); }
static nvrtcResult call_version(void *f, int *major, int *minor) { return ((version_t)f)(major, minor); }
*/
import "C"

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/gmlake/gmlake/internal/dl"
)

// EnvVar names the environment variable that, when set, is the only NVRTC library tried.
const EnvVar = "GMLAKE_NVRTC"

// Candidates are the NVRTC sonames tried, newest first, each also under the usual CUDA folders.
var Candidates = dl.CUDACandidates(
	"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so.11.1", "libnvrtc.so.11.0", "libnvrtc.so",
)

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
	create, compile, ptxSize, ptx, logSize, log, destroy unsafe.Pointer
	errString, version                                   unsafe.Pointer
}

// Open opens NVRTC (GMLAKE_NVRTC, else Candidates) and resolves the symbols the Compiler uses.
// Errors wrap dl.ErrNotFound or dl.ErrMissingSymbol.
func Open() (*Compiler, error) {
	lib, err := dl.Open("NVRTC", EnvVar, Candidates)
	if err != nil {
		return nil, err
	}
	preloadBuiltins(lib.Path())
	c := &Compiler{lib: lib}
	err = lib.Symbols(map[string]*unsafe.Pointer{
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
	var ma, mi C.int
	if r := C.call_version(c.version, &ma, &mi); r != 0 {
		return 0, 0, c.apiError("nvrtcVersion", r)
	}
	return int(ma), int(mi), nil
}

func (c *Compiler) resultString(r C.nvrtcResult) string {
	return C.GoString(C.call_errstr(c.errString, r))
}

func (c *Compiler) apiError(call string, r C.nvrtcResult) error {
	return &APIError{Call: call, Result: c.resultString(r)}
}

// Compile compiles the CUDA C++ source src (named name in diagnostics) with the given NVRTC options
// (e.g. "--gpu-architecture=compute_90") and returns the PTX, NUL-terminated as cuModuleLoadData
// wants it. A compilation error is a *CompileError carrying the compiler's log.
func (c *Compiler) Compile(name, src string, options ...string) ([]byte, error) {
	csrc, cname := C.CString(src), C.CString(name)
	defer C.free(unsafe.Pointer(csrc))
	defer C.free(unsafe.Pointer(cname))

	var prog C.nvrtcProgram
	if r := C.call_create(c.create, &prog, csrc, cname); r != 0 {
		return nil, c.apiError("nvrtcCreateProgram", r)
	}
	defer C.call_destroy(c.destroy, &prog)

	copts := make([]*C.char, len(options))
	for i, o := range options {
		copts[i] = C.CString(o)
		defer C.free(unsafe.Pointer(copts[i]))
	}
	// The options array itself must be C memory: it holds pointers.
	var optv **C.char
	if len(copts) > 0 {
		optv = (**C.char)(C.malloc(C.size_t(len(copts)) * C.size_t(unsafe.Sizeof(copts[0]))))
		defer C.free(unsafe.Pointer(optv))
		copy(unsafe.Slice(optv, len(copts)), copts)
	}
	if r := C.call_compile(c.compile, prog, C.int(len(copts)), optv); r != 0 {
		return nil, &CompileError{Program: name, Result: c.resultString(r), Log: c.programLog(prog)}
	}

	var n C.size_t
	if r := C.call_size(c.ptxSize, prog, &n); r != 0 {
		return nil, c.apiError("nvrtcGetPTXSize", r)
	}
	buf := (*C.char)(C.malloc(n))
	defer C.free(unsafe.Pointer(buf))
	if r := C.call_text(c.ptx, prog, buf); r != 0 {
		return nil, c.apiError("nvrtcGetPTX", r)
	}
	return C.GoBytes(unsafe.Pointer(buf), C.int(n)), nil
}

func (c *Compiler) programLog(prog C.nvrtcProgram) string {
	var n C.size_t
	if C.call_size(c.logSize, prog, &n) != 0 || n == 0 {
		return ""
	}
	buf := (*C.char)(C.malloc(n))
	defer C.free(unsafe.Pointer(buf))
	if C.call_text(c.log, prog, buf) != 0 {
		return ""
	}
	return C.GoString(buf)
}
