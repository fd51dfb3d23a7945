// Softmax over the last axis (one block per row), plain and causal-masked for attention, and the
// backward pass shared by both.

// out[r, :] = softmax(in[r, :]).
extern "C" __global__ void softmax_f32(float *out, const float *in, long long rows, long long cols) {
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		const float *x = in + r * cols;
		float *y = out + r * cols;
		float m = NEG_INF;
		for (long long c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, x[c]);
		m = block_max(m);
		float s = 0.f;
		for (long long c = threadIdx.x; c < cols; c += blockDim.x) s += expf(x[c] - m);
		s = block_sum(s);
		float inv = 1.f / s;
		for (long long c = threadIdx.x; c < cols; c += blockDim.x) y[c] = expf(x[c] - m) * inv;
	}
}

// Attention scores: rows are (..., q) with q = r % tq, over cols = tk keys. out = softmax(scale * in)
// where key k is visible to query q iff k <= q + (tk - tq) (a causal mask aligned to the end, so a
// query block appended to a cache works too); masked entries are 0.
extern "C" __global__ void causal_softmax_f32(float *out, const float *in, long long rows, long long cols,
                                              long long tq, float scale) {
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		const float *x = in + r * cols;
		float *y = out + r * cols;
		long long visible = r % tq + (cols - tq) + 1; // keys [0, visible)
		if (visible > cols) visible = cols;
		float m = NEG_INF;
		for (long long c = threadIdx.x; c < visible; c += blockDim.x) m = fmaxf(m, scale * x[c]);
		m = block_max(m);
		float s = 0.f;
		for (long long c = threadIdx.x; c < visible; c += blockDim.x) s += expf(scale * x[c] - m);
		s = block_sum(s);
		float inv = s > 0.f ? 1.f / s : 0.f;
		for (long long c = threadIdx.x; c < cols; c += blockDim.x)
			y[c] = c < visible ? expf(scale * x[c] - m) * inv : 0.f;
	}
}

// Given y = softmax(scale * x) (masked or not) and dy: dx = scale * y * (dy - sum(dy * y)).
extern "C" __global__ void softmax_backward_f32(float *dx, const float *y, const float *dy, long long rows,
                                                long long cols, float scale) {
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		const float *yr = y + r * cols, *dyr = dy + r * cols;
		float *dxr = dx + r * cols;
		float dot = 0.f;
		for (long long c = threadIdx.x; c < cols; c += blockDim.x) dot += dyr[c] * yr[c];
		dot = block_sum(dot);
		for (long long c = threadIdx.x; c < cols; c += blockDim.x) dxr[c] = scale * yr[c] * (dyr[c] - dot);
	}
}
