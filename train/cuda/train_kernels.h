/* train_kernels.h: the GPU trainer's own kernels (train_kernels.cu),
 * launched from C on a stream. Tensors are NHWC rows of `cp` channels
 * (a multiple of 8, of which the first `creal` are real) in one of three
 * element types (nn_dtype fp32, fp16 or bf16) given per pointer; reductions
 * accumulate in fp32 within a thread and in double across them, in a fixed
 * order, so a step is deterministic. Every launcher returns cudaGetLastError(). */
#ifndef SENTE_TRAIN_CUDA_TRAIN_KERNELS_H
#define SENTE_TRAIN_CUDA_TRAIN_KERNELS_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "nn/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Row-chunks of the two-stage column reductions (partials are [TK_PARTS][cp]). */
#define TK_PARTS 64
/* Partials of the whole-gradient reduction. */
#define TK_NORM_PARTS 256

/* out[i] = map[i] >= 0 ? master[map[i]] : 0, as dt (weights' compute copies). */
cudaError_t tk_gather(const float *master, const int32_t *map, long n, nn_dtype dt, void *out,
		      cudaStream_t st);
/* grad[map[i]] = (acc ? grad[map[i]] : 0) + src[i] for map[i] >= 0 (weight
 * gradients from compute layout back to the net's order). */
cudaError_t tk_scatter(const void *src, nn_dtype dt, const int32_t *map, long n, float *grad,
		       int acc, cudaStream_t st);

/* Training batch norm statistics of z + bias over M rows: mean, biased var,
 * rstd = 1/sqrt(var + eps) [cp] (0 past creal); acc_mean/acc_var/acc_m2
 * [creal] get (reset ? = : +=) mean, var and mean^2 (the running update).
 * part: [TK_PARTS][cp] scratch. */
cudaError_t tk_bn_stats(const void *z, nn_dtype dz, long M, int cp, int creal, const float *bias,
			float *part, float *mean, float *var, float *rstd, float *acc_mean,
			float *acc_var, float *acc_m2, int reset, cudaStream_t st);
/* y = act(gamma (z + b - mean) rstd + beta [+ skip]), 0 past creal. */
cudaError_t tk_bn_apply(const void *z, nn_dtype dz, long M, int cp, int creal, const float *bias,
			const float *mean, const float *rstd, const float *gamma, const float *beta,
			const void *skip, nn_dtype dskip, int relu, void *y, nn_dtype dy,
			cudaStream_t st);
/* Backward of tk_bn_apply given g = dL/dy (and y for the ReLU mask):
 * gamma/beta/bias gradients into ggamma/gbeta/gbias ((acc ? += : =)), the
 * conv-output gradient into dzout (type dz), and dL/dskip into dskip when
 * not NULL (type ds). part: [3][TK_PARTS][cp] scratch, loc: [2][cp]. */
cudaError_t tk_bn_backward(const void *g, nn_dtype dg, const void *y, nn_dtype dyt, int relu,
			   const void *z, nn_dtype dz, long M, int cp, int creal,
			   const float *bias, const float *mean, const float *rstd,
			   const float *gamma, float *part, float *loc, float *ggamma,
			   float *gbeta, float *gbias, int acc, void *dzout, void *dskip,
			   nn_dtype ds, cudaStream_t st);

/* y[rows][n] = act(y + b). */
cudaError_t tk_bias_act(float *y, const float *b, int rows, int n, int relu, cudaStream_t st);
/* dy[i] *= (y[i] > 0) over n values. */
cudaError_t tk_relu_backward(float *dy, const float *y, long n, cudaStream_t st);
/* out[j] = (acc ? out[j] : 0) + sum_r x[r][j]. */
cudaError_t tk_colsum(const float *x, int rows, int n, float *out, int acc, cudaStream_t st);
/* Activations of tk_fc_small's outputs. */
enum {
	TK_ACT_NONE = 0,
	TK_ACT_RELU = 1,
	TK_ACT_SE_GATE = 2, /* sigmoid of the first nout / 2, identity on the rest */
};
/* Small FC: y[r][o] = act(b[o] + sum_j x[r][j] w[o][j]), act a TK_ACT_*. */
cudaError_t tk_fc_small(const float *x, int rows, int nin, const float *w, const float *b,
			int nout, int act, float *y, cudaStream_t st);
/* Its backward: dx[r][j] = sum_o dy[r][o] w[o][j]; gw, gb (acc ? += : =). */
cudaError_t tk_fc_small_backward(const float *x, int rows, int nin, const float *w, int nout,
				 const float *dy, float *dx, float *gw, float *gb, int acc,
				 cudaStream_t st);

/* Losses of rows r in [0, m): policy CE of softmax(logits) against policy;
 * value (vo 1: (tanh v - z)^2; vo 3: CE against wdl or the target derived
 * from value). dlogits and dvout get scale * inv_n * dL/d(.) (dvout also
 * times vw); rowloss [m][2] the rows' policy and value losses. */
cudaError_t tk_loss(const float *logits, const float *policy, int np, const float *vout,
		    const float *value, const float *wdl, int vo, int m, float inv_n, float scale,
		    float vw, float *dlogits, float *dvout, float *rowloss, cudaStream_t st);
/* The opponent-reply head's loss (train_loss_policy against its target,
 * cpu_train.c), rows r in [0, m): rowloss[r] the row's cross-entropy (0
 * for a target of zeros: no reply) and dlogits the gradient as tk_loss
 * gives the policy's, times w (the loss's weight). */
cudaError_t tk_policy_loss(const float *logits, const float *target, int np, int m, float inv_n,
			   float w, float scale, float *dlogits, float *rowloss, cudaStream_t st);
/* tail[1] (+)= inv_n sum policy, tail[2] (+)= inv_n sum value, tail[0] =
 * tail[1] + vw tail[2] + rw tail[6] + ow tail[4] + sw tail[5] (the heads'
 * terms, summed by tk_sum_into before this), tail[3] = 1. */
cudaError_t tk_loss_sum(const float *rowloss, int m, float inv_n, float vw, float rw, float ow,
			float sw, float *tail, int acc, cudaStream_t st);

/* The training heads of Go (the CPU trainer's tr_own_loss and
 * tr_score_loss, cpu_train.c). */
/* Ownership, one row per point of the m positions (rows = m * hw): z = b +
 * sum_{c < vc} w[c] x[r][c] on the value conv's output x ([rows][ld],
 * fp32), then against target t = own[r] with weight own_w[r / hw]:
 * rowloss[r] = weight (softplus(2z) - (1 + t) z) and dz[r] = gscale weight
 * (tanh z - t). */
cudaError_t tk_own_loss(const float *x, long rows, int ld, int vc, int hw, const float *w,
			const float *b, const float *own, const float *own_w, float gscale,
			float *dz, float *rowloss, cudaStream_t st);
/* Score, one row per position: e = s[r] - score[r], rowloss[r] = score_w[r]
 * e^2, dy[r] = gscale score_w[r] 2 e. */
cudaError_t tk_score_loss(const float *s, int m, const float *score, const float *score_w,
			  float gscale, float *dy, float *rowloss, cudaStream_t st);
/* *out += f sum_{i < n} x[i] (one block, in double). */
cudaError_t tk_sum_into(const float *x, long n, float f, float *out, cudaStream_t st);
/* Gradient of a one-output FC: gw[j] += sum_r dy[r] x[r][j] for j < n
 * (x [rows][ld]), gb[0] += sum_r dy[r]; one block per output, in double. */
cudaError_t tk_dot_rows(const float *x, long rows, int ld, int n, const float *dy, float *gw,
			float *gb, cudaStream_t st);
/* Its input gradient: dx[r][j] += dy[r] w[j] for j < n (dx [rows][ld]). */
cudaError_t tk_add_outer(float *dx, long rows, int ld, int n, const float *dy, const float *w,
			 cudaStream_t st);

/* Squeeze-excitation of an SE block (the CPU trainer's tr_se_fwd and
 * tr_se_bwd, cpu_train.c; net.h's definition) over u, the block's second
 * batch norm's output: NHWC rows of cp channels, creal = C of them real.
 * The FCs are fp32 (k_fc_small and its backward, as the value head's
 * last layer). */
typedef struct tk_se {
	int m, hw, cp, creal, s;        /* positions, points, padded and real channels, S */
	const float *w1, *b1, *w2, *b2; /* se1 [S][C] + [S], se2 [2C][S] + [2C] */
	float *gw1, *gb1, *gw2, *gb2;   /* their gradients (+=) */
	float *pool, *hid, *gate;       /* forward, kept for the backward: [m][C] means,
					 * [m][S] ReLU(se1), [m][2C] sigmoid | shift */
	float *dz, *dhid, *dpool;       /* backward scratch: [m][2C], [m][S], [m][C] */
	const float *pw;                /* [m][hw] each point's weight in the means
					 * (masked pooling, tk_board_pool_weights),
					 * or NULL: 1 / hw */
} tk_se;
/* nn_board_pool_weights of m positions' input planes x (NHWC rows of cin
 * channels, type dx) into w [m][hw]: 1 / (points on the board) where
 * channel `on` (or `also`, -1: none) is above 0.5, else 0; every point
 * when `on` is -1 or a position has none (nn_board_planes gives them). */
cudaError_t tk_board_pool_weights(const void *x, nn_dtype dx, int m, int hw, int cin, int on,
				  int also, float *w, cudaStream_t st);
/* y = ReLU(sigmoid(z[c]) u + z[C + c] [+ skip]) with z = se2(ReLU(se1(the
 * channel means of u))) per position, 0 past creal. */
cudaError_t tk_se_forward(const tk_se *e, const void *u, nn_dtype du, const void *skip,
			  nn_dtype dskip, void *y, nn_dtype dy, cudaStream_t st);
/* Its backward given g = dL/dy and y (the ReLU's mask): the gradient before
 * the ReLU (the skip's) into gs, dL/du into gu (which may be g: it is read
 * before gu is written), and the FCs' gradients added to e's. */
cudaError_t tk_se_backward(const tk_se *e, const void *g, nn_dtype dg, const void *y,
			   nn_dtype dyt, const void *u, nn_dtype du, void *gs, nn_dtype dgs,
			   void *gu, nn_dtype dgu, cudaStream_t st);

/* What the step's reduction found, on the device. */
typedef struct tk_step_result {
	double norm2;   /* squared norm of the unscaled gradient (+ L2 term) */
	double wsq;     /* sum of squares of the decayed weights */
	int bad;        /* non-finite gradient entries (step skipped) */
	float coef;     /* clipping factor */
} tk_step_result;

/* Roles of the floats of net->data. */
enum { TK_ROLE_BUFFER = 0, TK_ROLE_PARAM = 1, TK_ROLE_DECAY = 2 };

/* Reduces g = grad * inv_scale (+ l2c * w on decayed weights) into *r with
 * the clipping factor for clip (<= 0: none). part: [TK_NORM_PARTS][3]
 * doubles. */
cudaError_t tk_grad_norm(const float *grad, const float *w, const uint8_t *role, long n,
			 float inv_scale, float l2c, double clip, double *part, tk_step_result *r,
			 cudaStream_t st);

typedef struct tk_opt_params {
	int adamw;       /* 0: SGD Nesterov, 1: AdamW */
	float lr, momentum, inv_scale, l2c;
	float b1, b2, eps, bc1, sbc2, decay; /* AdamW: bias corrections, 1 - lr wd */
} tk_opt_params;

/* The fused update of every parameter (buffers untouched); nothing when
 * r->bad. */
cudaError_t tk_optimizer(float *w, const float *grad, const uint8_t *role, float *m0, float *m1,
			 long n, tk_opt_params p, const tk_step_result *r, cudaStream_t st);
/* Running statistics: for j < J, w[rm[j]] and w[rv[j]] move towards the
 * batch mean and unbias x variance (from the micro-batches' accumulators)
 * at rate mo; nothing when r->bad. */
cudaError_t tk_running(float *w, const int32_t *rm, const int32_t *rv, const float *acc_mean,
		       const float *acc_var, const float *acc_m2, int J, float inv_k, float mo, float unbias,
		       const tk_step_result *r, cudaStream_t st);

#ifdef __cplusplus
}
#endif

#endif
