// Package cublas binds the few cuBLAS calls the project needs (single-precision GEMM, plain and
// strided-batched), with the library opened at run time and called without cgo (see
// internal/dl): one binary works with cuBLAS 11 (Debian's CUDA 11.8), 12 or 13, whichever the
// machine has, and builds with no CUDA headers. Every call returns a cublasStatus_t (a 32-bit C
// enum); scalars (alpha, beta) are passed by pointer, as cuBLAS takes them. The tests check the
// argument passing of every call against testdata/fakecublas.c, the same calls over host memory.
//
// The library is looked up by GMLAKE_CUBLAS (a path, when set) or by the sonames of Candidates.
// cuBLAS is column-major; package gpu maps row-major tensors onto it. Device addresses are plain
// uintptrs (never Go pointers), and calls must be made on a thread where the CUDA context that owns
// them is current, as for every CUDA library.
package cublas

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/gmlake/gmlake/internal/dl"
)

// EnvVar names the environment variable that, when set, is the only cuBLAS library tried.
const EnvVar = "GMLAKE_CUBLAS"

// Candidates are the cuBLAS sonames tried, newest first, each also under the usual CUDA folders.
var Candidates = dl.CuBLAS.Candidates

// ErrCublas is wrapped by every *Error.
var ErrCublas = errors.New("cublas call failed")

// Error is a failed cuBLAS call.
type Error struct {
	Call   string
	Status int // cublasStatus_t
}

var statusNames = map[int]string{
	1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED", 7: "CUBLAS_STATUS_INVALID_VALUE",
	8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR", 13: "CUBLAS_STATUS_EXECUTION_FAILED",
	14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED", 16: "CUBLAS_STATUS_LICENSE_ERROR",
}

func (e *Error) Error() string {
	name, ok := statusNames[e.Status]
	if !ok {
		name = fmt.Sprintf("status %d", e.Status)
	}
	return fmt.Sprintf("cublas: %s: %s", e.Call, name)
}

// Unwrap makes errors.Is(err, ErrCublas) hold.
func (e *Error) Unwrap() error { return ErrCublas }

func check(call string, s int32) error {
	if s != 0 {
		return &Error{Call: call, Status: int(s)}
	}
	return nil
}

// Library is an opened cuBLAS.
type Library struct {
	lib                                 *dl.Library
	create, destroy, setStream, version uintptr
	sgemm, sgemmStridedBatched          uintptr
}

// Open opens cuBLAS (GMLAKE_CUBLAS, else Candidates) and resolves the symbols used. It needs no GPU;
// creating a Handle does. Errors wrap dl.ErrNotFound or dl.ErrMissingSymbol.
func Open() (*Library, error) {
	lib, err := dl.Open(dl.CuBLAS.What, EnvVar, Candidates)
	if err != nil {
		return nil, err
	}
	l := &Library{lib: lib}
	err = lib.Symbols(map[string]*uintptr{
		"cublasCreate_v2":           &l.create,
		"cublasDestroy_v2":          &l.destroy,
		"cublasSetStream_v2":        &l.setStream,
		"cublasGetVersion_v2":       &l.version,
		"cublasSgemm_v2":            &l.sgemm,
		"cublasSgemmStridedBatched": &l.sgemmStridedBatched,
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Path is the name the library was opened under.
func (l *Library) Path() string { return l.lib.Path() }

// Handle is a cuBLAS context (cublasHandle_t), bound to the CUDA context current when it was made.
// Not safe for concurrent use.
type Handle struct {
	lib *Library
	h   uintptr // cublasHandle_t
}

// NewHandle creates a handle (cublasCreate_v2) in the current CUDA context.
func (l *Library) NewHandle() (*Handle, error) {
	var h uintptr
	if err := check("cublasCreate_v2", dl.Call32(l.create, uintptr(unsafe.Pointer(&h)))); err != nil {
		return nil, err
	}
	return &Handle{lib: l, h: h}, nil
}

// Close destroys the handle.
func (h *Handle) Close() error {
	if h.h == 0 {
		return nil
	}
	err := check("cublasDestroy_v2", dl.Call32(h.lib.destroy, h.h))
	h.h = 0
	return err
}

// Version is cuBLAS's version number, e.g. 130000.
func (h *Handle) Version() (int, error) {
	var v int32
	err := check("cublasGetVersion_v2", dl.Call32(h.lib.version, h.h, uintptr(unsafe.Pointer(&v))))
	return int(v), err
}

// SetStream makes the handle queue its work on stream (a CUstream; 0 is the default stream).
func (h *Handle) SetStream(stream uintptr) error {
	return check("cublasSetStream_v2", dl.Call32(h.lib.setStream, h.h, stream))
}

// Op says whether GEMM reads a matrix as stored or transposed.
type Op int

// The cublasOperation_t values used.
const (
	NoTrans Op = 0
	Trans   Op = 1
)

// Sgemm computes, column-major, C = alpha * op(A) * op(B) + beta * C with op(A) m×k, op(B) k×n,
// C m×n (cublasSgemm_v2).
func (h *Handle) Sgemm(ta, tb Op, m, n, k int, alpha float32, a uintptr, lda int, b uintptr, ldb int,
	beta float32, c uintptr, ldc int) error {
	return check("cublasSgemm_v2", dl.Call32(h.lib.sgemm, h.h, cint(int(ta)), cint(int(tb)), cint(m), cint(n), cint(k),
		uintptr(unsafe.Pointer(&alpha)), a, cint(lda), b, cint(ldb), uintptr(unsafe.Pointer(&beta)), c, cint(ldc)))
}

// SgemmStridedBatched is Sgemm over count matrices, the i-th at a + i*strideA (elements) and so on
// (cublasSgemmStridedBatched).
func (h *Handle) SgemmStridedBatched(ta, tb Op, m, n, k int, alpha float32, a uintptr, lda int, strideA int64,
	b uintptr, ldb int, strideB int64, beta float32, c uintptr, ldc int, strideC int64, count int) error {
	return check("cublasSgemmStridedBatched", dl.Call32(h.lib.sgemmStridedBatched, h.h, cint(int(ta)), cint(int(tb)),
		cint(m), cint(n), cint(k), uintptr(unsafe.Pointer(&alpha)), a, cint(lda), uintptr(strideA), b, cint(ldb),
		uintptr(strideB), uintptr(unsafe.Pointer(&beta)), c, cint(ldc), uintptr(strideC), cint(count)))
}

// cint passes a Go int as a C int argument: the low 32 bits of its slot.
func cint(v int) uintptr { return uintptr(uint32(int32(v))) }
