/* gpu_layers.h: the GPU trainer's layers one at a time, with the CPU
 * trainer's signatures (train/layers.h), so that a table-driven test
 * (tests/train_cuda/test_gpu_layers.c) compares each with its CPU twin,
 * forward and backward, as ggml's test-backend-ops does per op. Not an API
 * for production code: every call allocates, uploads, runs the trainer's
 * own kernels (train_kernels.cu) on the default stream, downloads and frees.
 *
 * Tensors are the CPU side's: NCHW activations, OI FC weights, fp32; the
 * functions lay them out as the trainer does (NHWC rows padded to a multiple
 * of 8 channels) and back. Each returns 0, 1 when there is no device or no
 * CUDA in this build (err says which), or -1 on a CUDA error. */
#ifndef SENTE_TRAIN_CUDA_GPU_LAYERS_H
#define SENTE_TRAIN_CUDA_GPU_LAYERS_H

#include <stddef.h>

/* Batch norm in training mode (tk_bn_stats, tk_bn_apply, tk_bn_backward),
 * no activation: as train_layer_bn. */
int gpu_layer_bn(int n, int c, int h, int w, const float *x, const float *gamma,
		 const float *beta, const float *dy, float *y, float *mean, float *var, float *dx,
		 float *dgamma, float *dbeta, char *err, size_t errlen);
/* ReLU (tk_bias_act, tk_relu_backward): as train_layer_relu. */
int gpu_layer_relu(int n, int c, int h, int w, const float *x, const float *dy, float *y,
		   float *dx, char *err, size_t errlen);
/* The small fully connected layer (tk_fc_small and its backward, the value
 * head's last layer): as train_layer_fc; dx may be NULL. */
int gpu_layer_fc(int n, int nin, int nout, const float *x, const float *wt, const float *b,
		 const float *dy, float *y, float *dx, float *dw, float *db, char *err,
		 size_t errlen);
/* Squeeze-excitation of an SE block (tk_se_forward, tk_se_backward): as
 * train_layer_se; skip and pw may be NULL. */
int gpu_layer_se(int n, int c, int s, int h, int w, const float *u, const float *skip,
		 const float *pw, const float *w1, const float *b1, const float *w2,
		 const float *b2, const float *dy, float *y, float *du, float *dskip,
		 float *dw1, float *db1, float *dw2, float *db2, char *err, size_t errlen);
/* Both losses of n rows (tk_loss): the means train_loss_policy and
 * train_loss_value return, and their gradients (dlogits [n][np], dvout
 * [n][vo]); wdl may be NULL (the target derived from value). */
int gpu_layer_losses(int n, int np, const float *logits, const float *policy, int vo,
		     const float *vout, const float *value, const float *wdl, double *loss_policy,
		     double *loss_value, float *dlogits, float *dvout, char *err, size_t errlen);
/* The opponent-reply loss of n rows (tk_policy_loss): the mean
 * train_loss_policy returns against target (a row of zeros: no reply), and
 * its gradient times the loss's weight w (dlogits [n][np]), as the CPU
 * trainer scales it. */
int gpu_layer_opp_loss(int n, int np, const float *logits, const float *target, float w,
		       double *loss, float *dlogits, char *err, size_t errlen);

#endif
