// Fused softmax cross-entropy over rows of logits (rows, v) with int32 targets; rows whose target is
// ignore_index contribute nothing (Hugging Face's -100 for padding and the shifted-out last token).

// loss[r] = logsumexp(logits[r, :]) - logits[r, target[r]] (0 when ignored); lse[r] saved for the
// backward pass. One block per row.
extern "C" __global__ void cross_entropy_fwd_f32(float *loss, float *lse, const float *logits, const int *target,
                                                 long long rows, long long v, int ignore_index) {
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		const float *x = logits + r * v;
		float m = NEG_INF;
		for (long long c = threadIdx.x; c < v; c += blockDim.x) m = fmaxf(m, x[c]);
		m = block_max(m);
		float s = 0.f;
		for (long long c = threadIdx.x; c < v; c += blockDim.x) s += expf(x[c] - m);
		s = block_sum(s);
		if (threadIdx.x == 0) {
			float l = m + logf(s);
			lse[r] = l;
			int t = target[r];
			loss[r] = (t == ignore_index || t < 0 || t >= v) ? 0.f : l - x[t];
		}
	}
}

// dlogits[r, c] = (softmax(logits[r, :])[c] - [c == target[r]]) * (*dloss) * scale, 0 for ignored
// rows. dloss is the upstream gradient of the reduced loss (a device scalar, so no host round trip);
// scale is 1/count for a mean over the counted rows.
extern "C" __global__ void cross_entropy_bwd_f32(float *dlogits, const float *logits, const float *lse,
                                                 const int *target, const float *dloss, long long rows, long long v,
                                                 int ignore_index, float scale) {
	float g = *dloss * scale;
	GRID_STRIDE(i, rows * v) {
		long long r = i / v, c = i % v;
		int t = target[r];
		if (t == ignore_index || t < 0 || t >= v) {
			dlogits[i] = 0.f;
		} else {
			float p = expf(logits[i] - lse[r]);
			dlogits[i] = (p - (c == t ? 1.f : 0.f)) * g;
		}
	}
}
