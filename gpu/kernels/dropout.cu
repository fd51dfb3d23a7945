// Dropout with Gorgonia's semantics: the mask is drawn on the host by the graph's own op (so a GPU
// run draws what a CPU run of the op would), the kernels apply it.

// out = mask != 0 ? x / keep : 0
extern "C" __global__ void dropout_f32(float *out, const float *x, const float *mask, float keep, long long n) {
	GRID_STRIDE(i, n) { out[i] = mask[i] != 0.f ? x[i] / keep : 0.f; }
}

// Gorgonia's dropout gradient (dropoutDiffOp): dx = dy / p where the forward output y is non-zero
// and p != 0, else 0.
extern "C" __global__ void dropout_bwd_f32(float *dx, const float *y, const float *dy, float p, long long n) {
	GRID_STRIDE(i, n) { dx[i] = (p != 0.f && y[i] != 0.f) ? dy[i] / p : 0.f; }
}
