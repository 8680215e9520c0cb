/* kernels.h: the CUDA backend's own kernels, launched from C on a stream.
 * Activations are NHWC with c_pad channels (a multiple of 8), of type float
 * or half (nn_dtype fp32 or fp16; nnk_expand_float takes bf16 too). Each
 * launcher returns the launch's cudaError_t (cudaGetLastError), so callers
 * check it with CUDA_CHECK. */
#ifndef SENTE_NN_CUDA_KERNELS_H
#define SENTE_NN_CUDA_KERNELS_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "nn/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Packed planes (nn/cuda/pack.h) [batch][stride] -> out [batch][hw][c_pad]. */
cudaError_t nnk_expand_packed(nn_dtype dt, const uint32_t *packed, int batch, int planes,
			      int hw, int c_pad, void *out, cudaStream_t st);
/* Float planes NCHW [batch][planes][hw] -> out [batch][hw][c_pad], also
 * bf16 (the GPU trainer's input). */
cudaError_t nnk_expand_float(nn_dtype dt, const float *in, int batch, int planes, int hw,
			     int c_pad, void *out, cudaStream_t st);
/* In place over rows x c: y = act(y + bias[c] + res), res may be NULL,
 * act ReLU when relu, else identity. The epilogue of an unfused conv. */
cudaError_t nnk_bias_res_act(nn_dtype dt, void *y, const float *bias, const void *res,
			     long rows, int c, int relu, cudaStream_t st);
/* Squeeze-excitation, first half: per position, the board mean of each of
 * the c real channels of x [batch][hw][c_pad] (weighted by pw [batch][hw],
 * masked pooling's nn_board_pool_weights, when not NULL), FC1 (w1 [se][c],
 * b1) + ReLU, FC2 (w2 [2c][se], b2) into gates [batch][2c]. */
cudaError_t nnk_se_gates(nn_dtype dt, const void *x, const float *pw, int batch, int hw,
			 int c_pad, int c, int se, const float *w1, const float *b1,
			 const float *w2, const float *b2, float *gates, cudaStream_t st);
/* Second half, with the residual: out = ReLU(sigmoid(g[ch]) * x +
 * g[c + ch] + skip) for the real channels, 0 for the padding. */
cudaError_t nnk_se_apply(nn_dtype dt, const void *x, const void *skip, const float *gates,
			 void *out, int batch, int hw, int c_pad, int c, cudaStream_t st);
/* The heads' tail, one row of `out` per position (row stride `stride`
 * floats): the policy logits out[0..np) get their bias; the value FC1
 * output vh [batch][vhid] gets b1 and ReLU, FC2 (w2 [vout][vhid], b2), then
 * tanh (vout 1) or a softmax (vout 3, win/draw/loss): out[np] = value for
 * the side to move, out[np+1..np+3] = win, draw, loss. */
cudaError_t nnk_heads_finish(float *out, int stride, int np, const float *pbias,
			     const float *vh, int vhid, const float *b1, const float *w2,
			     const float *b2, int vout, int batch, cudaStream_t st);

#ifdef __cplusplus
}
#endif

#endif
