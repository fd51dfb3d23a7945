// Rotary position embedding in Hugging Face's rotate_half form:
//   out = x * cos + rotate_half(x) * sin, rotate_half(x) = concat(-x[h:], x[:h]), h = d/2,
// with cos and sin given as (t, d) tables (row p for position p). x is a set of rows of d elements;
// row r is at position (r / inner) % t, so (batch, heads, t, d) uses inner = 1 and
// (batch, t, heads, d) uses inner = heads.

extern "C" __global__ void rope_fwd_f32(float *out, const float *x, const float *cos_t, const float *sin_t,
                                        long long rows, long long t, long long d, long long inner) {
	long long h = d / 2;
	GRID_STRIDE(i, rows * d) {
		long long r = i / d, j = i % d, p = (r / inner) % t;
		const float *xr = x + r * d;
		float rot = j < h ? -xr[j + h] : xr[j - h];
		out[i] = xr[j] * cos_t[p * d + j] + rot * sin_t[p * d + j];
	}
}

// The adjoint: dx[j] = dy[j] cos[j] + (j < h ? dy[j+h] sin[j+h] : -dy[j-h] sin[j-h]).
extern "C" __global__ void rope_bwd_f32(float *dx, const float *dy, const float *cos_t, const float *sin_t,
                                        long long rows, long long t, long long d, long long inner) {
	long long h = d / 2;
	GRID_STRIDE(i, rows * d) {
		long long r = i / d, j = i % d, p = (r / inner) % t;
		const float *dyr = dy + r * d;
		const float *s = sin_t + p * d;
		float rot = j < h ? dyr[j + h] * s[j + h] : -dyr[j - h] * s[j - h];
		dx[i] = dyr[j] * cos_t[p * d + j] + rot;
	}
}
