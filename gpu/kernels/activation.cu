// GELU (tanh approximation, as GPT-2's "gelu_new"), SiLU and SwiGLU, forward and backward.

#define GELU_C 0.7978845608028654f // sqrt(2/pi)
#define GELU_A 0.044715f

extern "C" __global__ void gelu_fwd_f32(float *out, const float *x, long long n) {
	GRID_STRIDE(i, n) {
		float v = x[i];
		out[i] = 0.5f * v * (1.f + tanhf(GELU_C * (v + GELU_A * v * v * v)));
	}
}

extern "C" __global__ void gelu_bwd_f32(float *dx, const float *x, const float *dy, long long n) {
	GRID_STRIDE(i, n) {
		float v = x[i];
		float t = tanhf(GELU_C * (v + GELU_A * v * v * v));
		float du = GELU_C * (1.f + 3.f * GELU_A * v * v);
		dx[i] = dy[i] * (0.5f * (1.f + t) + 0.5f * v * (1.f - t * t) * du);
	}
}

__device__ __forceinline__ float sigmoidf_(float v) { return 1.f / (1.f + expf(-v)); }

// silu(x) = x * sigmoid(x)
extern "C" __global__ void silu_fwd_f32(float *out, const float *x, long long n) {
	GRID_STRIDE(i, n) {
		float v = x[i];
		out[i] = v * sigmoidf_(v);
	}
}

extern "C" __global__ void silu_bwd_f32(float *dx, const float *x, const float *dy, long long n) {
	GRID_STRIDE(i, n) {
		float v = x[i], s = sigmoidf_(v);
		dx[i] = dy[i] * s * (1.f + v * (1.f - s));
	}
}

// swiglu(gate, up) = silu(gate) * up
extern "C" __global__ void swiglu_fwd_f32(float *out, const float *gate, const float *up, long long n) {
	GRID_STRIDE(i, n) {
		float g = gate[i];
		out[i] = g * sigmoidf_(g) * up[i];
	}
}

extern "C" __global__ void swiglu_bwd_f32(float *dgate, float *dup, const float *gate, const float *up,
                                          const float *dy, long long n) {
	GRID_STRIDE(i, n) {
		float g = gate[i], s = sigmoidf_(g), d = dy[i];
		dgate[i] = d * up[i] * s * (1.f + g * (1.f - s));
		dup[i] = d * g * s;
	}
}
