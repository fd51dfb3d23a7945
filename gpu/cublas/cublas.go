// Package cublas binds the few cuBLAS calls the project needs (single-precision GEMM, plain and
// strided-batched), with the library opened at run time (see internal/dl): one binary works
// with cuBLAS 11 (Debian's CUDA 11.8), 12 or 13, whichever the machine has.
//
// The library is looked up by GMLAKE_CUBLAS (a path, when set) or by the sonames of Candidates.
// cuBLAS is column-major; package gpu maps row-major tensors onto it. Device addresses are plain
// uintptrs (never Go pointers), and calls must be made on a thread where the CUDA context that owns
// them is current, as for every CUDA library.
package cublas

/*
#include <stdint.h>
#include <stddef.h>

typedef int cublasStatus_t;
typedef void *cublasHandle_t;

typedef cublasStatus_t (*create_t)(cublasHandle_t *);
typedef cublasStatus_t (*destroy_t)(cublasHandle_t);
typedef cublasStatus_t (*setStream_t)(cublasHandle_t, void *);
typedef cublasStatus_t (*getVersion_t)(cublasHandle_t, int *);
typedef cublasStatus_t (*sgemm_t)(cublasHandle_t, int, int, int, int, int, const float *, const float *, int,
                                  const float *, int, const float *, float *, int);
typedef cublasStatus_t (*sgemmBatched_t)(cublasHandle_t, int, int, int, int, int, const float *, const float *,
                                         int, long long, const float *, int, long long, const float *, float *,
                                         int, long long, int);

static cublasStatus_t call_create(void *f, cublasHandle_t *h) { return ((create_t)f)(h); }
static cublasStatus_t call_destroy(void *f, cublasHandle_t h) { return ((destroy_t)f)(h); }
static cublasStatus_t call_set_stream(void *f, cublasHandle_t h, uintptr_t s) {
	return ((setStream_t)f)(h, (void *)s);
}
static cublasStatus_t call_version(void *f, cublasHandle_t h, int *v) { return ((getVersion_t)f)(h, v); }
static cublasStatus_t call_sgemm(void *f, cublasHandle_t h, int ta, int tb, int m, int n, int k, float alpha,
                                 uintptr_t a, int lda, uintptr_t b, int ldb, float beta, uintptr_t c, int ldc) {
	return ((sgemm_t)f)(h, ta, tb, m, n, k, &alpha, (const float *)a, lda, (const float *)b, ldb, &beta,
	                    (float *)c, ldc);
}
static cublasStatus_t call_sgemm_batched(void *f, cublasHandle_t h, int ta, int tb, int m, int n, int k,
                                         float alpha, uintptr_t a, int lda, long long sa, uintptr_t b, int ldb,
                                         long long sb, float beta, uintptr_t c, int ldc, long long sc, int count) {
	return ((sgemmBatched_t)f)(h, ta, tb, m, n, k, &alpha, (const float *)a, lda, sa, (const float *)b, ldb, sb,
	                           &beta, (float *)c, ldc, sc, count);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/gmlake/gmlake/internal/dl"
)

// EnvVar names the environment variable that, when set, is the only cuBLAS library tried.
const EnvVar = "GMLAKE_CUBLAS"

// Candidates are the cuBLAS sonames tried, newest first, each also under the usual CUDA folders.
var Candidates = dl.CUDACandidates("libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so")

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

func check(call string, s C.cublasStatus_t) error {
	if s != 0 {
		return &Error{Call: call, Status: int(s)}
	}
	return nil
}

// Library is an opened cuBLAS.
type Library struct {
	lib                                 *dl.Library
	create, destroy, setStream, version unsafe.Pointer
	sgemm, sgemmStridedBatched          unsafe.Pointer
}

// Open opens cuBLAS (GMLAKE_CUBLAS, else Candidates) and resolves the symbols used. It needs no GPU;
// creating a Handle does. Errors wrap dl.ErrNotFound or dl.ErrMissingSymbol.
func Open() (*Library, error) {
	lib, err := dl.Open("cuBLAS", EnvVar, Candidates)
	if err != nil {
		return nil, err
	}
	l := &Library{lib: lib}
	err = lib.Symbols(map[string]*unsafe.Pointer{
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
	h   C.cublasHandle_t
}

// NewHandle creates a handle (cublasCreate_v2) in the current CUDA context.
func (l *Library) NewHandle() (*Handle, error) {
	var h C.cublasHandle_t
	if err := check("cublasCreate_v2", C.call_create(l.create, &h)); err != nil {
		return nil, err
	}
	return &Handle{lib: l, h: h}, nil
}

// Close destroys the handle.
func (h *Handle) Close() error {
	if h.h == nil {
		return nil
	}
	err := check("cublasDestroy_v2", C.call_destroy(h.lib.destroy, h.h))
	h.h = nil
	return err
}

// Version is cuBLAS's version number, e.g. 130000.
func (h *Handle) Version() (int, error) {
	var v C.int
	err := check("cublasGetVersion_v2", C.call_version(h.lib.version, h.h, &v))
	return int(v), err
}

// SetStream makes the handle queue its work on stream (a CUstream; 0 is the default stream).
func (h *Handle) SetStream(stream uintptr) error {
	return check("cublasSetStream_v2", C.call_set_stream(h.lib.setStream, h.h, C.uintptr_t(stream)))
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
	return check("cublasSgemm_v2", C.call_sgemm(h.lib.sgemm, h.h, C.int(ta), C.int(tb), C.int(m), C.int(n),
		C.int(k), C.float(alpha), C.uintptr_t(a), C.int(lda), C.uintptr_t(b), C.int(ldb), C.float(beta),
		C.uintptr_t(c), C.int(ldc)))
}

// SgemmStridedBatched is Sgemm over count matrices, the i-th at a + i*strideA (elements) and so on
// (cublasSgemmStridedBatched).
func (h *Handle) SgemmStridedBatched(ta, tb Op, m, n, k int, alpha float32, a uintptr, lda int, strideA int64,
	b uintptr, ldb int, strideB int64, beta float32, c uintptr, ldc int, strideC int64, count int) error {
	return check("cublasSgemmStridedBatched", C.call_sgemm_batched(h.lib.sgemmStridedBatched, h.h, C.int(ta),
		C.int(tb), C.int(m), C.int(n), C.int(k), C.float(alpha), C.uintptr_t(a), C.int(lda),
		C.longlong(strideA), C.uintptr_t(b), C.int(ldb), C.longlong(strideB), C.float(beta), C.uintptr_t(c),
		C.int(ldc), C.longlong(strideC), C.int(count)))
}
