/* replay_kernels.h: the GPU replay buffer's kernels (replay_kernels.cu),
 * launched from C (gpu_replay.c) on a stream. Each launcher returns the
 * launch's cudaError_t (cudaGetLastError) for CUDA_CHECK. */
#ifndef SENTE_TRAIN_CUDA_REPLAY_KERNELS_H
#define SENTE_TRAIN_CUDA_REPLAY_KERNELS_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "nn/dtype.h"
#include "train/cuda/gpu_batch.h"
#include "train/cuda/replay_elem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Draw k < n: Philox4_32_10 with curand_init(seed, k, 4 * counter); slot
 * uniform in [0, held) into slots[k], symmetry uniform in [0, n_sym) into
 * syms[k]. */
cudaError_t grk_draw(uint64_t seed, uint64_t counter, int n, int64_t held, int n_sym,
		     int64_t *slots, int *syms, cudaStream_t st);
/* Expands draws first .. first + count - 1 of records [slot][rec_words]
 * into out's slots 0 .. count - 1 (out->n is the caller's to set): planes
 * [count][hw][c_pad] of out->dtype (fp32, fp16 or bf16), policy
 * [count][n_actions], value [count], wdl [count][3] (may be NULL), and
 * own [count][hw], own_w, score, score_w [count], opp [count][n_actions]
 * where not NULL (only for the heads d has: the caller checks). tables:
 * point_inv [n_sizes][n_sym][hw] then action_inv [n_sizes][n_sym][n_actions]
 * (replay_elem.h's gr_table picks a record's set). */
cudaError_t grk_expand(gr_dims d, const uint32_t *records, const int16_t *tables,
		       const int64_t *slots, const int *syms, int first, int count,
		       const gpu_batch *out, cudaStream_t st);

#ifdef __cplusplus
}
#endif

#endif
