// Elementwise float32 kernels.
//
// Binary ops come in two forms: NAME_c for contiguous operands of one shape, and NAME for numpy-style
// broadcasting up to rank 4: out is contiguous of shape (n/(d1*d2*d3), d1, d2, d3) and a, b are read
// at element strides (a0..a3), (b0..b3), 0 along a broadcast dimension. The host collapses shapes
// of lower rank into this form.

#define BINARY(name, expr)                                                                        \
	extern "C" __global__ void name##_c(float *out, const float *a, const float *b, long long n) { \
		GRID_STRIDE(i, n) {                                                                    \
			float x = a[i], y = b[i];                                                      \
			out[i] = (expr);                                                               \
		}                                                                                      \
	}                                                                                              \
	extern "C" __global__ void name(float *out, const float *a, const float *b, long long n,       \
	                                long long d1, long long d2, long long d3, long long a0,        \
	                                long long a1, long long a2, long long a3, long long b0,        \
	                                long long b1, long long b2, long long b3) {                    \
		GRID_STRIDE(i, n) {                                                                    \
			long long r = i;                                                               \
			long long i3 = r % d3;                                                         \
			r /= d3;                                                                       \
			long long i2 = r % d2;                                                         \
			r /= d2;                                                                       \
			long long i1 = r % d1, i0 = r / d1;                                            \
			float x = a[i0 * a0 + i1 * a1 + i2 * a2 + i3 * a3];                            \
			float y = b[i0 * b0 + i1 * b1 + i2 * b2 + i3 * b3];                            \
			out[i] = (expr);                                                               \
		}                                                                                      \
	}

BINARY(add_f32, x + y)
BINARY(sub_f32, x - y)
BINARY(mul_f32, x * y)
BINARY(div_f32, x / y)

#define UNARY(name, expr)                                                                     \
	extern "C" __global__ void name(float *out, const float *a, long long n) {                 \
		GRID_STRIDE(i, n) {                                                                \
			float x = a[i];                                                            \
			out[i] = (expr);                                                           \
		}                                                                                  \
	}

UNARY(exp_f32, expf(x))
UNARY(log_f32, logf(x))
UNARY(neg_f32, -x)
UNARY(square_f32, x * x)
UNARY(cube_f32, x * x * x)
UNARY(sqrt_f32, sqrtf(x))
UNARY(inverse_f32, 1.f / x)
UNARY(tanh_f32, tanhf(x))
UNARY(sigmoid_f32, 1.f / (1.f + expf(-x)))
UNARY(abs_f32, fabsf(x))
UNARY(relu_f32, fmaxf(x, 0.f))

// out = alpha * a
extern "C" __global__ void scale_f32(float *out, const float *a, float alpha, long long n) {
	GRID_STRIDE(i, n) { out[i] = alpha * a[i]; }
}

// out = a + s
extern "C" __global__ void add_scalar_f32(float *out, const float *a, float s, long long n) {
	GRID_STRIDE(i, n) { out[i] = a[i] + s; }
}

// y += alpha * x (gradient accumulation)
extern "C" __global__ void axpy_f32(float *y, const float *x, float alpha, long long n) {
	GRID_STRIDE(i, n) { y[i] += alpha * x[i]; }
}

// out = v
extern "C" __global__ void fill_f32(float *out, float v, long long n) {
	GRID_STRIDE(i, n) { out[i] = v; }
}

// out (contiguous, shape (n/(d1*d2*d3), d1, d2, d3)) = in read at element strides s0..s3: transposes,
// permutations and materialised broadcasts.
extern "C" __global__ void copy_strided_f32(float *out, const float *in, long long n, long long d1,
                                            long long d2, long long d3, long long s0, long long s1,
                                            long long s2, long long s3) {
	GRID_STRIDE(i, n) {
		long long r = i;
		long long i3 = r % d3;
		r /= d3;
		long long i2 = r % d2;
		r /= d2;
		long long i1 = r % d1, i0 = r / d1;
		out[i] = in[i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3];
	}
}
