// Reductions over one axis, and the squared-norm reduction behind gradient clipping.

// out[r] = sum(in[r, :]) over rows of cols; one block per row.
extern "C" __global__ void sum_last_f32(float *out, const float *in, long long rows, long long cols) {
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		const float *p = in + r * cols;
		float s = 0.f;
		for (long long c = threadIdx.x; c < cols; c += blockDim.x) s += p[c];
		s = block_sum(s);
		if (threadIdx.x == 0) out[r] = s;
	}
}

// out[r] = max(in[r, :]); one block per row.
extern "C" __global__ void max_last_f32(float *out, const float *in, long long rows, long long cols) {
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		const float *p = in + r * cols;
		float m = NEG_INF;
		for (long long c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, p[c]);
		m = block_max(m);
		if (threadIdx.x == 0) out[r] = m;
	}
}

// Over the middle axis of in viewed as (outer, len, inner): out[o, i] = sum_k in[o, k, i]. One
// thread per output, reading along k with stride inner (coalesced across i).
extern "C" __global__ void sum_axis_f32(float *out, const float *in, long long outer, long long len,
                                        long long inner) {
	GRID_STRIDE(j, outer * inner) {
		long long o = j / inner, i = j % inner;
		const float *p = in + o * len * inner + i;
		float s = 0.f;
		for (long long k = 0; k < len; k++) s += p[k * inner];
		out[j] = s;
	}
}

// As sum_axis_f32, with max.
extern "C" __global__ void max_axis_f32(float *out, const float *in, long long outer, long long len,
                                        long long inner) {
	GRID_STRIDE(j, outer * inner) {
		long long o = j / inner, i = j % inner;
		const float *p = in + o * len * inner + i;
		float m = NEG_INF;
		for (long long k = 0; k < len; k++) m = fmaxf(m, p[k * inner]);
		out[j] = m;
	}
}

// partial[blockIdx.x] = this block's share of sum(in[i]^2). The grid is fixed by the host, so the
// result does not depend on timing (no atomics).
extern "C" __global__ void sumsq_partial_f32(float *partial, const float *in, long long n) {
	float s = 0.f;
	GRID_STRIDE(i, n) {
		float x = in[i];
		s += x * x;
	}
	s = block_sum(s);
	if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

// *acc += sum(partial[0:n]); launched with one block.
extern "C" __global__ void sum_accumulate_f32(float *acc, const float *partial, long long n) {
	float s = 0.f;
	for (long long i = threadIdx.x; i < n; i += blockDim.x) s += partial[i];
	s = block_sum(s);
	if (threadIdx.x == 0) *acc += s;
}
