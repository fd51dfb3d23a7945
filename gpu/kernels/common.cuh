// Shared by every kernel source (prepended by package kernels; NVRTC is given no include paths).
// Conventions: float32 data, sizes and indices as long long, one kernel per operation, extern "C"
// names (no mangling), grid-stride loops so any grid size is correct. Reductions use blocks whose
// size is a multiple of 32, at most 1024.

#define GRID_STRIDE(i, n) \
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); \
	     i += (long long)blockDim.x * gridDim.x)

#define NEG_INF (-__int_as_float(0x7f800000))

__device__ __forceinline__ float warp_sum(float v) {
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

__device__ __forceinline__ float warp_max(float v) {
	for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

// block_sum returns the sum of v over the block to every thread. Every thread must call it.
__device__ float block_sum(float v) {
	__shared__ float partial[32];
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
	v = warp_sum(v);
	__syncthreads(); // partial may still be read by a previous call
	if (lane == 0) partial[warp] = v;
	__syncthreads();
	v = threadIdx.x < warps ? partial[threadIdx.x] : 0.f;
	if (warp == 0) v = warp_sum(v);
	if (threadIdx.x == 0) partial[0] = v;
	__syncthreads();
	return partial[0];
}

// block_max returns the maximum of v over the block to every thread. Every thread must call it.
__device__ float block_max(float v) {
	__shared__ float partial[32];
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
	v = warp_max(v);
	__syncthreads();
	if (lane == 0) partial[warp] = v;
	__syncthreads();
	v = threadIdx.x < warps ? partial[threadIdx.x] : NEG_INF;
	if (warp == 0) v = warp_max(v);
	if (threadIdx.x == 0) partial[0] = v;
	__syncthreads();
	return partial[0];
}
