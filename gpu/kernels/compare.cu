// Elementwise kernels for Gorgonia's remaining binary operators: power, and the comparisons that
// return 1 or 0 in the operands' type (Gorgonia's retSame), in the two forms of elementwise.cu:
// NAME_c for contiguous operands of one shape, NAME for broadcasting at element strides.

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

BINARY(pow_f32, powf(x, y))
BINARY(lt_f32, x < y ? 1.f : 0.f)
BINARY(gt_f32, x > y ? 1.f : 0.f)
BINARY(lte_f32, x <= y ? 1.f : 0.f)
BINARY(gte_f32, x >= y ? 1.f : 0.f)
BINARY(eq_f32, x == y ? 1.f : 0.f)
BINARY(ne_f32, x != y ? 1.f : 0.f)
