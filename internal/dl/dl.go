// Package dl opens shared libraries at run time (dlopen) and resolves their symbols, so that one
// binary works against whichever CUDA libraries (cuBLAS, NVRTC, NCCL) a machine has: their sonames
// change with every major CUDA release (libcublas.so.11 in Debian's 11.8 packages, .so.13 on a
// CUDA 13 machine), so linking against one at build time would tie the binary to that release, and
// a binary linked against NCCL would not even start where it is missing. It sits at the module
// root so that both gpu/ and dist/ can use it.
//
// A Library is opened from a list of candidate names, tried in order; an environment variable, when
// set, replaces the list with the one path it names. Every failure is an *OpenError or a
// *SymbolError that says what was tried and why each candidate failed.
package dl

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

static void *gmlake_dlopen(const char *name) { return dlopen(name, RTLD_NOW | RTLD_LOCAL); }
static const char *gmlake_dlerror(void) { return dlerror(); }
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"unsafe"
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
	return fmt.Sprintf("%s: cannot open any of [%s] (set %s to the library's path)",
		e.Library, strings.Join(e.Tried, "; "), e.EnvVar)
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

// Library is an opened shared library. It is never closed: the CUDA libraries keep global state
// that does not survive an unload, and a process opens each of them once.
type Library struct {
	what   string
	path   string
	handle unsafe.Pointer
}

// dlerrorMu serialises dlopen/dlsym with dlerror, whose message is per thread but may be clobbered
// by another call on the same thread before it is read.
var dlerrorMu sync.Mutex

// Open opens the library described by what (used in errors). When the environment variable envVar is
// set and non-empty, only its value is tried; otherwise each of candidates in turn.
func Open(what, envVar string, candidates []string) (*Library, error) {
	if v := os.Getenv(envVar); v != "" {
		candidates = []string{v}
	}
	oe := &OpenError{Library: what, EnvVar: envVar}
	for _, name := range candidates {
		h, reason := open(name)
		if h != nil {
			return &Library{what: what, path: name, handle: h}, nil
		}
		oe.Tried = append(oe.Tried, name+": "+reason)
	}
	return nil, oe
}

func open(name string) (unsafe.Pointer, string) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	dlerrorMu.Lock()
	defer dlerrorMu.Unlock()
	h := C.gmlake_dlopen(cname)
	if h == nil {
		return nil, C.GoString(C.gmlake_dlerror())
	}
	return h, ""
}

// Path is the name the library was opened under.
func (l *Library) Path() string { return l.path }

// Symbol resolves name to its address.
func (l *Library) Symbol(name string) (unsafe.Pointer, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	dlerrorMu.Lock()
	defer dlerrorMu.Unlock()
	C.gmlake_dlerror() // clear a stale message
	p := C.dlsym(l.handle, cname)
	if p == nil {
		return nil, &SymbolError{Library: l.what, Path: l.path, Symbol: name}
	}
	return p, nil
}

// Symbols resolves each name into the pointer it is paired with, stopping at the first missing one.
func (l *Library) Symbols(table map[string]*unsafe.Pointer) error {
	for name, dst := range table {
		p, err := l.Symbol(name)
		if err != nil {
			return err
		}
		*dst = p
	}
	return nil
}
