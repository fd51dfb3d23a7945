// fakecublas.c: the cuBLAS calls package cublas binds, over host memory, for testing the binding's
// argument passing without a GPU (each SGEMM has 14 or 18 arguments: most on the stack, scalars by
// pointer). "Device" pointers are host pointers; matrices are column-major as in cuBLAS. A handle
// records the stream it was given, which fake_stream_of returns to the test. Plain C, no CUDA
// header. Build: cc -shared -fPIC -o libfakecublas.so fakecublas.c
#include <stdint.h>
#include <stdlib.h>

typedef int cublasStatus_t;
enum { ok = 0, not_initialized = 1, invalid_value = 7 };
typedef struct { void *stream; int alive; } handle_t;

cublasStatus_t cublasCreate_v2(handle_t **h) {
	*h = calloc(1, sizeof **h);
	if (*h == NULL) return 3;
	(*h)->alive = 1;
	return ok;
}
cublasStatus_t cublasDestroy_v2(handle_t *h) {
	if (h == NULL || !h->alive) return not_initialized;
	h->alive = 0;
	free(h);
	return ok;
}
cublasStatus_t cublasSetStream_v2(handle_t *h, void *s) {
	if (h == NULL || !h->alive) return not_initialized;
	h->stream = s;
	return ok;
}
cublasStatus_t cublasGetVersion_v2(handle_t *h, int *v) {
	if (h == NULL || !h->alive) return not_initialized;
	*v = 130099;
	return ok;
}
void *fake_stream_of(handle_t *h) { return h->stream; }

static float at(const float *m, int ld, int trans, int i, int j) { return trans ? m[j + (long)i * ld] : m[i + (long)j * ld]; }

static cublasStatus_t gemm(int ta, int tb, int m, int n, int k, const float *alpha, const float *a, int lda,
                           const float *b, int ldb, const float *beta, float *c, int ldc) {
	if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1) || m < 0 || n < 0 || k < 0) return invalid_value;
	if (ldc < m || lda < (ta ? k : m) || ldb < (tb ? n : k)) return invalid_value;
	for (int j = 0; j < n; j++) {
		for (int i = 0; i < m; i++) {
			float s = 0;
			for (int p = 0; p < k; p++) s += at(a, lda, ta, i, p) * at(b, ldb, tb, p, j);
			c[i + (long)j * ldc] = *alpha * s + *beta * c[i + (long)j * ldc];
		}
	}
	return ok;
}

cublasStatus_t cublasSgemm_v2(handle_t *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *a,
                              int lda, const float *b, int ldb, const float *beta, float *c, int ldc) {
	if (h == NULL || !h->alive) return not_initialized;
	return gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

cublasStatus_t cublasSgemmStridedBatched(handle_t *h, int ta, int tb, int m, int n, int k, const float *alpha,
                                         const float *a, int lda, long long sa, const float *b, int ldb,
                                         long long sb, const float *beta, float *c, int ldc, long long sc,
                                         int count) {
	if (h == NULL || !h->alive) return not_initialized;
	if (count < 0) return invalid_value;
	for (int i = 0; i < count; i++) {
		cublasStatus_t r = gemm(ta, tb, m, n, k, alpha, a + i * sa, lda, b + i * sb, ldb, beta, c + i * sc, ldc);
		if (r != ok) return r;
	}
	return ok;
}
