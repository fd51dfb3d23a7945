// Copies and accumulations between two strided views of one shape: out is written at element
// strides (o0..o3), in read at (i0..i3), the shape collapsed by the host to (n/(d1*d2*d3), d1, d2,
// d3). They place slices, concatenated parts and repeated elements (a stride of 0 reads one input
// element many times); the output views never overlap themselves, so no two threads write one
// element.

#define STRIDED_INDEX(i)                                                             \
	long long r = i;                                                             \
	long long k3 = r % d3;                                                       \
	r /= d3;                                                                     \
	long long k2 = r % d2;                                                       \
	r /= d2;                                                                     \
	long long k1 = r % d1, k0 = r / d1;                                          \
	long long o = k0 * o0 + k1 * o1 + k2 * o2 + k3 * o3;                         \
	long long s = k0 * i0 + k1 * i1 + k2 * i2 + k3 * i3;

// out[view] = in[view]
extern "C" __global__ void assign_strided_f32(float *out, const float *in, long long n, long long d1,
                                              long long d2, long long d3, long long o0, long long o1,
                                              long long o2, long long o3, long long i0, long long i1,
                                              long long i2, long long i3) {
	GRID_STRIDE(i, n) {
		STRIDED_INDEX(i)
		out[o] = in[s];
	}
}

// out[view] += in[view]
extern "C" __global__ void accumulate_strided_f32(float *out, const float *in, long long n, long long d1,
                                                  long long d2, long long d3, long long o0, long long o1,
                                                  long long o2, long long o3, long long i0, long long i1,
                                                  long long i2, long long i3) {
	GRID_STRIDE(i, n) {
		STRIDED_INDEX(i)
		out[o] += in[s];
	}
}
