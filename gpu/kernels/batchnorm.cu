// Batch normalization's backward pass over x [N, C, HW] (NCHW, HW = H*W), training statistics.
// cuDNN's cudnnBatchNormalizationBackward takes 19 arguments, more than a call without cgo can pass,
// so the backward pass is these two kernels; the forward pass is cuDNN's.

// One block per channel c: mean and rstd = 1/sqrt(var + eps) of x, and, when dy is given, the sums
// sdy = sum(dy) and sdyx = sum(dy * xhat) with xhat = (x - mean) * rstd. stats[4c..4c+3] = mean,
// rstd, sdy, sdyx. Accumulated in double: a channel may hold millions of values.
__device__ double block_sum_d(double v) {
	__shared__ double partial[32];
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
	__syncthreads();
	if (lane == 0) partial[warp] = v;
	__syncthreads();
	v = threadIdx.x < warps ? partial[threadIdx.x] : 0.0;
	if (warp == 0)
		for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
	if (threadIdx.x == 0) partial[0] = v;
	__syncthreads();
	return partial[0];
}

// at is the flat index of value i (of n*hw) of channel c: 32-bit division, since one channel's
// values always number fewer than 2^32 here (the Go side checks).
__device__ __forceinline__ long long at(unsigned int i, unsigned int hw, long long channels, long long c) {
	return ((long long)(i / hw) * channels + c) * hw + i % hw;
}

extern "C" __global__ void batchnorm_stats_f32(float *stats, const float *x, const float *dy, long long n,
                                               long long channels, long long hw, float eps) {
	unsigned int m = (unsigned int)(n * hw), h = (unsigned int)hw;
	for (long long c = blockIdx.x; c < channels; c += gridDim.x) {
		double s = 0.0;
		for (unsigned int i = threadIdx.x; i < m; i += blockDim.x) s += x[at(i, h, channels, c)];
		double mean = block_sum_d(s) / (double)m;
		double q = 0.0;
		for (unsigned int i = threadIdx.x; i < m; i += blockDim.x) {
			double d = x[at(i, h, channels, c)] - mean;
			q += d * d;
		}
		double rstd = 1.0 / sqrt(block_sum_d(q) / (double)m + (double)eps);
		double sdy = 0.0, sdyx = 0.0;
		if (dy) {
			for (unsigned int i = threadIdx.x; i < m; i += blockDim.x) {
				long long j = at(i, h, channels, c);
				sdy += dy[j];
				sdyx += dy[j] * (x[j] - mean) * rstd;
			}
			sdy = block_sum_d(sdy);
			sdyx = block_sum_d(sdyx);
		}
		if (threadIdx.x == 0) {
			stats[4 * c] = (float)mean;
			stats[4 * c + 1] = (float)rstd;
			stats[4 * c + 2] = (float)sdy;
			stats[4 * c + 3] = (float)sdyx;
		}
	}
}

// dx = gamma * rstd / M * (M * dy - sdy - xhat * sdyx), M = N * HW, from the stats above.
extern "C" __global__ void batchnorm_bwd_dx_f32(float *dx, const float *dy, const float *x, const float *gamma,
                                                const float *stats, long long n, long long channels, long long hw) {
	float m = (float)(n * hw);
	GRID_STRIDE(i, n * channels * hw) {
		long long c = i / hw % channels;
		float mean = stats[4 * c], rstd = stats[4 * c + 1], sdy = stats[4 * c + 2], sdyx = stats[4 * c + 3];
		float xhat = (x[i] - mean) * rstd;
		dx[i] = gamma[c] * rstd / m * (m * dy[i] - sdy - xhat * sdyx);
	}
}

// dgamma[c] = sdyx, dbeta[c] = sdy (either may be null).
extern "C" __global__ void batchnorm_bwd_params_f32(float *dgamma, float *dbeta, const float *stats, long long channels) {
	GRID_STRIDE(c, channels) {
		if (dgamma) dgamma[c] = stats[4 * c + 3];
		if (dbeta) dbeta[c] = stats[4 * c + 2];
	}
}
