// replay_kernels.cu: sampling and expansion for the GPU replay buffer
// (gpu_replay.h). The per-element logic is replay_elem.h's, shared with the
// host reference, so the device can only differ in the fp16/bf16 rounding.
#include "train/cuda/replay_kernels.h"

#include <curand_kernel.h>

#include "nn/cuda/cuda_common.h"

namespace {

// One thread per draw. Philox's skip-ahead is arithmetic, so a state per
// draw costs a few multiplies; 4 * counter keeps one counter's four words
// apart from the next counter's.
__global__ void draw(uint64_t seed, uint64_t counter, int n, int64_t held, int n_sym,
		     int64_t *slots, int *syms)
{
	int k = blockIdx.x * blockDim.x + threadIdx.x;
	if (k >= n)
		return;
	curandStatePhilox4_32_10_t s;
	curand_init(seed, (unsigned long long)k, 4ull * counter, &s);
	uint4 r = curand4(&s);
	// 64 random bits: the modulo's bias is below held / 2^64.
	uint64_t u = (uint64_t)r.x << 32 | r.y;
	slots[k] = (int64_t)(u % (uint64_t)held);
	syms[k] = (int)(r.z % (unsigned)n_sym);
}

// One thread per output plane element; consecutive threads write
// consecutive channels of one point.
template <typename T>
__global__ void expand_planes(gr_dims d, const uint32_t *records, const int16_t *pt_all,
			      const int64_t *slots, const int *syms, int count, T *out)
{
	long total = (long)count * d.hw * d.c_pad;
	for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total;
	     i += (long)gridDim.x * blockDim.x) {
		int c = (int)(i % d.c_pad);
		long nq = i / d.c_pad;
		int q = (int)(nq % d.hw);
		int n = (int)(nq / d.hw);
		const uint32_t *rec = records + slots[n] * (long)d.rec_words;
		const int16_t *pt = pt_all + (long)gr_table(rec, &d, syms[n]) * d.hw;
		cuda_st(out, i, gr_plane_elem(rec, &d, pt, q, c));
	}
}

// The target arrays of a batch, by value for the kernels (any of wdl and
// the heads' may be NULL).
struct targets {
	float *policy, *value, *wdl, *own, *own_w, *score, *score_w, *opp;
};

// One thread per policy entry, which also writes the entry's opponent-reply
// target (the same action table); an entry of a point also writes the point's
// ownership target (the same action table: a point's action is its index,
// and every game with the head has an action per point), and the first
// entry of a position its value, WDL, ownership weight and score targets.
__global__ void expand_targets(gr_dims d, const uint32_t *records, const int16_t *at_all,
			       const int64_t *slots, const int *syms, int count, targets t)
{
	long total = (long)count * d.n_actions;
	for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total;
	     i += (long)gridDim.x * blockDim.x) {
		int b = (int)(i % d.n_actions);
		int n = (int)(i / d.n_actions);
		const uint32_t *rec = records + slots[n] * (long)d.rec_words;
		const int16_t *at = at_all + (long)gr_table(rec, &d, syms[n]) * d.n_actions;
		t.policy[i] = gr_policy_elem(rec, &d, at, b);
		if (t.opp)
			t.opp[i] = gr_opp_elem(rec, &d, at, b);
		if (t.own && b < d.hw)
			t.own[(long)n * d.hw + b] = gr_own_elem(rec, &d, at, b);
		if (b == 0) {
			float z = gr_value(rec);
			t.value[n] = z;
			if (t.wdl)
				for (int k = 0; k < 3; k++)
					t.wdl[3 * (long)n + k] = gr_wdl_elem(z, k);
			if (t.own_w)
				t.own_w[n] = gr_own_weight(rec, &d);
			if (t.score)
				t.score[n] = gr_score(rec, &d);
			if (t.score_w)
				t.score_w[n] = gr_score_weight(rec, &d);
		}
	}
}

} // namespace

extern "C" cudaError_t grk_draw(uint64_t seed, uint64_t counter, int n, int64_t held, int n_sym,
				int64_t *slots, int *syms, cudaStream_t st)
{
	if (n > 0)
		draw<<<(n + 255) / 256, 256, 0, st>>>(seed, counter, n, held, n_sym, slots, syms);
	return cudaGetLastError();
}

extern "C" cudaError_t grk_expand(gr_dims d, const uint32_t *records, const int16_t *tables,
				  const int64_t *slots, const int *syms, int first, int count,
				  const gpu_batch *out, cudaStream_t st)
{
	if (count <= 0)
		return cudaGetLastError();
	const int16_t *pt = tables, *at = tables + (long)d.n_sizes * d.n_sym * d.hw;
	slots += first;
	syms += first;
	long np = (long)count * d.hw * d.c_pad, nt = (long)count * d.n_actions;
	nn_dtype dtype = out->dtype;
	void *planes = out->planes;
	if (dtype == NN_DTYPE_FP16)
		expand_planes<<<cuda_grid(np, 256), 256, 0, st>>>(d, records, pt, slots, syms, count,
								    (__half *)planes);
	else if (dtype == NN_DTYPE_BF16)
		expand_planes<<<cuda_grid(np, 256), 256, 0, st>>>(d, records, pt, slots, syms, count,
								    (__nv_bfloat16 *)planes);
	else
		expand_planes<<<cuda_grid(np, 256), 256, 0, st>>>(d, records, pt, slots, syms, count,
								    (float *)planes);
	cudaError_t e = cudaGetLastError();
	if (e != cudaSuccess)
		return e;
	targets t = { out->policy, out->value, out->wdl, out->own, out->own_w, out->score,
		      out->score_w, out->opp };
	expand_targets<<<cuda_grid(nt, 256), 256, 0, st>>>(d, records, at, slots, syms, count, t);
	return cudaGetLastError();
}
