// Softmax and log-softmax along any axis of a contiguous tensor viewed as (outer, len, inner), and
// their gradients, computed as Gorgonia's CPU engine computes them: one thread per (outer, inner)
// line, reading along the axis at stride inner, in the CPU's order (the maximum, then the sum of
// exponentials in sequence), so results agree with the CPU to rounding of expf and logf.

// y = exp(x - max) / sum exp(x - max), or (log) y = x - max - log(sum exp(x - max)).
extern "C" __global__ void softmax_axis_f32(float *out, const float *in, long long outer, long long len,
                                            long long inner, int log_softmax) {
	GRID_STRIDE(j, outer * inner) {
		long long base = (j / inner) * len * inner + j % inner;
		const float *x = in + base;
		float *y = out + base;
		float m = x[0];
		for (long long k = 1; k < len; k++) m = fmaxf(m, x[k * inner]);
		float s = 0.f;
		for (long long k = 0; k < len; k++) {
			float e = expf(x[k * inner] - m);
			if (!log_softmax) y[k * inner] = e;
			s += e;
		}
		if (log_softmax) {
			float ls = logf(s);
			for (long long k = 0; k < len; k++) y[k * inner] = x[k * inner] - m - ls;
		} else {
			float inv = 1.f / s;
			for (long long k = 0; k < len; k++) y[k * inner] *= inv;
		}
	}
}

// dx = y * (dy - sum(y * dy)), or (log) dx = dy - exp(y) * sum(dy), y the forward output.
extern "C" __global__ void softmax_axis_bwd_f32(float *dx, const float *y, const float *dy, long long outer,
                                                long long len, long long inner, int log_softmax) {
	GRID_STRIDE(j, outer * inner) {
		long long base = (j / inner) * len * inner + j % inner;
		float s = 0.f;
		for (long long k = 0; k < len; k++) {
			long long i = base + k * inner;
			s += log_softmax ? dy[i] : y[i] * dy[i];
		}
		for (long long k = 0; k < len; k++) {
			long long i = base + k * inner;
			dx[i] = log_softmax ? dy[i] - expf(y[i]) * s : y[i] * (dy[i] - s);
		}
	}
}
