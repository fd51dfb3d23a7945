// Elementwise functions of Gorgonia's unary operators that elementwise.cu does not have, computed
// as Gorgonia computes them in float32 (sign of 0 is 0; softplus is x above 14 and 0 below -103).

#define UNARY(name, expr)                                                                     \
	extern "C" __global__ void name(float *out, const float *a, long long n) {                 \
		GRID_STRIDE(i, n) {                                                                \
			float x = a[i];                                                            \
			out[i] = (expr);                                                           \
		}                                                                                  \
	}

UNARY(sign_f32, x > 0.f ? 1.f : (x < 0.f ? -1.f : 0.f))
UNARY(ceil_f32, ceilf(x))
UNARY(floor_f32, floorf(x))
UNARY(sin_f32, sinf(x))
UNARY(cos_f32, cosf(x))
UNARY(log2_f32, log2f(x))
UNARY(inverse_sqrt_f32, 1.f / sqrtf(x))
UNARY(log1p_f32, log1pf(x))
UNARY(expm1_f32, expm1f(x))
UNARY(softplus_f32, x < -103.f ? 0.f : (x > 14.f ? x : (float)log1p(exp((double)x))))
