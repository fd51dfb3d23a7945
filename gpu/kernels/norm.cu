// LayerNorm and RMSNorm over the last axis: forward (one block per row, saving the per-row
// statistics the backward pass needs), input gradient (one block per row) and parameter gradients
// (one thread per column, summing over rows). gamma and beta may be null (no affine part); so may
// the statistics outputs of the forward pass.

extern "C" __global__ void layernorm_fwd_f32(float *out, float *mean_out, float *rstd_out, const float *x,
                                             const float *gamma, const float *beta, long long rows,
                                             long long cols, float eps) {
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		const float *xr = x + r * cols;
		float *yr = out + r * cols;
		float s = 0.f;
		for (long long c = threadIdx.x; c < cols; c += blockDim.x) s += xr[c];
		float mean = block_sum(s) / (float)cols;
		float v = 0.f;
		for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
			float d = xr[c] - mean;
			v += d * d;
		}
		float rstd = rsqrtf(block_sum(v) / (float)cols + eps);
		for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
			float y = (xr[c] - mean) * rstd;
			if (gamma) y *= gamma[c];
			if (beta) y += beta[c];
			yr[c] = y;
		}
		if (threadIdx.x == 0) {
			if (mean_out) mean_out[r] = mean;
			if (rstd_out) rstd_out[r] = rstd;
		}
	}
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * gamma, xhat = (x - mean) * rstd.
extern "C" __global__ void layernorm_bwd_dx_f32(float *dx, const float *dy, const float *x, const float *mean,
                                                const float *rstd, const float *gamma, long long rows,
                                                long long cols) {
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		const float *xr = x + r * cols, *dyr = dy + r * cols;
		float *dxr = dx + r * cols;
		float mu = mean[r], rs = rstd[r];
		float sg = 0.f, sgx = 0.f;
		for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
			float g = gamma ? dyr[c] * gamma[c] : dyr[c];
			sg += g;
			sgx += g * (xr[c] - mu) * rs;
		}
		float mg = block_sum(sg) / (float)cols;
		float mgx = block_sum(sgx) / (float)cols;
		for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
			float g = gamma ? dyr[c] * gamma[c] : dyr[c];
			dxr[c] = rs * (g - mg - (xr[c] - mu) * rs * mgx);
		}
	}
}

// dgamma[c] = sum_r dy[r, c] * xhat[r, c]; dbeta[c] = sum_r dy[r, c]. Either may be null.
extern "C" __global__ void layernorm_bwd_params_f32(float *dgamma, float *dbeta, const float *dy, const float *x,
                                                    const float *mean, const float *rstd, long long rows,
                                                    long long cols) {
	GRID_STRIDE(c, cols) {
		float sg = 0.f, sb = 0.f;
		for (long long r = 0; r < rows; r++) {
			float d = dy[r * cols + c];
			sg += d * (x[r * cols + c] - mean[r]) * rstd[r];
			sb += d;
		}
		if (dgamma) dgamma[c] = sg;
		if (dbeta) dbeta[c] = sb;
	}
}

// out = x * rstd * gamma with rstd = 1 / sqrt(mean(x^2) + eps), as Hugging Face's Llama RMSNorm.
extern "C" __global__ void rmsnorm_fwd_f32(float *out, float *rstd_out, const float *x, const float *gamma,
                                           long long rows, long long cols, float eps) {
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		const float *xr = x + r * cols;
		float *yr = out + r * cols;
		float s = 0.f;
		for (long long c = threadIdx.x; c < cols; c += blockDim.x) s += xr[c] * xr[c];
		float rstd = rsqrtf(block_sum(s) / (float)cols + eps);
		for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
			float y = xr[c] * rstd;
			yr[c] = gamma ? y * gamma[c] : y;
		}
		if (threadIdx.x == 0 && rstd_out) rstd_out[r] = rstd;
	}
}

// dx = rstd * (g - xhat * mean(g * xhat)) with g = dy * gamma, xhat = x * rstd.
extern "C" __global__ void rmsnorm_bwd_dx_f32(float *dx, const float *dy, const float *x, const float *rstd,
                                              const float *gamma, long long rows, long long cols) {
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		const float *xr = x + r * cols, *dyr = dy + r * cols;
		float *dxr = dx + r * cols;
		float rs = rstd[r];
		float sgx = 0.f;
		for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
			float g = gamma ? dyr[c] * gamma[c] : dyr[c];
			sgx += g * xr[c] * rs;
		}
		float mgx = block_sum(sgx) / (float)cols;
		for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
			float g = gamma ? dyr[c] * gamma[c] : dyr[c];
			dxr[c] = rs * (g - xr[c] * rs * mgx);
		}
	}
}

// dgamma[c] = sum_r dy[r, c] * x[r, c] * rstd[r].
extern "C" __global__ void rmsnorm_bwd_gamma_f32(float *dgamma, const float *dy, const float *x,
                                                 const float *rstd, long long rows, long long cols) {
	GRID_STRIDE(c, cols) {
		float s = 0.f;
		for (long long r = 0; r < rows; r++) s += dy[r * cols + c] * x[r * cols + c] * rstd[r];
		dgamma[c] = s;
	}
}

// Row statistics alone, for backward passes that recompute them from x instead of saving them:
// mean and rstd of LayerNorm (mean may be null), or rstd of RMSNorm when rms != 0.
extern "C" __global__ void norm_stats_f32(float *mean_out, float *rstd_out, const float *x, long long rows,
                                          long long cols, float eps, int rms) {
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		const float *xr = x + r * cols;
		float mean = 0.f;
		if (!rms) {
			float s = 0.f;
			for (long long c = threadIdx.x; c < cols; c += blockDim.x) s += xr[c];
			mean = block_sum(s) / (float)cols;
		}
		float v = 0.f;
		for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
			float d = xr[c] - mean;
			v += d * d;
		}
		float rstd = rsqrtf(block_sum(v) / (float)cols + eps);
		if (threadIdx.x == 0) {
			if (mean_out) mean_out[r] = mean;
			rstd_out[r] = rstd;
		}
	}
}
