// Embedding lookup (gather rows of a (vocab, dim) table by int32 ids) and its gradient (scatter-add
// into the table's gradient). Ids outside [0, vocab) read as zeros and scatter nowhere; the host
// checks ids before they reach the device.

extern "C" __global__ void embedding_gather_f32(float *out, const float *table, const int *ids, long long n,
                                                long long dim, long long vocab) {
	GRID_STRIDE(i, n * dim) {
		long long k = i / dim, c = i % dim;
		long long id = ids[k];
		out[i] = (id >= 0 && id < vocab) ? table[id * dim + c] : 0.f;
	}
}

// dtable[ids[k], :] += dy[k, :]. Repeated ids make this an atomic sum, so the low bits of the
// result may differ from run to run.
extern "C" __global__ void embedding_scatter_add_f32(float *dtable, const int *ids, const float *dy, long long n,
                                                     long long dim, long long vocab) {
	GRID_STRIDE(i, n * dim) {
		long long k = i / dim, c = i % dim;
		long long id = ids[k];
		if (id >= 0 && id < vocab) atomicAdd(dtable + id * dim + c, dy[i]);
	}
}
