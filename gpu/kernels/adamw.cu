// One AdamW step, in PyTorch's formulation (torch.optim.AdamW, foreach=False):
//   p *= 1 - lr*wd;  m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2;
//   p -= (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps),  bc1 = 1 - b1^t, bc2 = 1 - b2^t.
// Gradient-norm clipping as torch.nn.utils.clip_grad_norm_: when normsq (the squared global norm,
// a device scalar summed by sumsq_partial_f32 + sum_accumulate_f32) is non-null and max_norm > 0,
// g = grad * min(1, max_norm / (sqrt(*normsq) + 1e-6)); the host never reads the norm.
extern "C" __global__ void adamw_f32(float *param, const float *grad, float *m, float *v, const float *normsq,
                                     long long n, float lr, float beta1, float beta2, float eps,
                                     float weight_decay, float bc1, float bc2, float max_norm) {
	float clip = 1.f;
	if (normsq && max_norm > 0.f) {
		float c = max_norm / (sqrtf(*normsq) + 1e-6f);
		if (c < 1.f) clip = c;
	}
	float step = lr / bc1, sbc2 = sqrtf(bc2);
	GRID_STRIDE(i, n) {
		float g = grad[i] * clip;
		float p = param[i] * (1.f - lr * weight_decay);
		float mi = beta1 * m[i] + (1.f - beta1) * g;
		float vi = beta2 * v[i] + (1.f - beta2) * g * g;
		m[i] = mi;
		v[i] = vi;
		param[i] = p - step * mi / (sqrtf(vi) / sbc2 + eps);
	}
}
