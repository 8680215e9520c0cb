/* layers.h: the trainer's layers one at a time, and its losses, exposed for
 * gradient tests (tests/train). Not an API for production code: every call
 * of a train_layer_* function builds and destroys its own oneDNN primitives.
 *
 * Tensors are plain NCHW (activations), OIHW (conv weights) and OI (FC
 * weights), fp32. Each function runs the forward pass (writing y) and the
 * backward pass for the upstream gradient dy (writing the gradients; dx may
 * be NULL when the input gradient is not wanted). 0, or -1 with a message.
 */
#ifndef SENTE_TRAIN_LAYERS_H
#define SENTE_TRAIN_LAYERS_H

#include <stddef.h>

/* Convolution k x k (k odd, zero padding k/2, stride 1) with bias. */
int train_layer_conv(int n, int cin, int cout, int k, int h, int w, const float *x,
		     const float *wt, const float *b, const float *dy, float *y, float *dx,
		     float *dw, float *db, char *err, size_t errlen);
/* Batch norm in training mode (batch statistics, eps NN_BN_EPS); mean and
 * var receive the batch statistics (var biased). */
int train_layer_bn(int n, int c, int h, int w, const float *x, const float *gamma,
		   const float *beta, const float *dy, float *y, float *mean, float *var,
		   float *dx, float *dgamma, float *dbeta, char *err, size_t errlen);
/* ReLU over n * c * h * w values. */
int train_layer_relu(int n, int c, int h, int w, const float *x, const float *dy, float *y,
		     float *dx, char *err, size_t errlen);
/* Fully connected: y[n][nout] = x[n][nin] W^T + b. */
int train_layer_fc(int n, int nin, int nout, const float *x, const float *wt, const float *b,
		   const float *dy, float *y, float *dx, float *dw, float *db, char *err,
		   size_t errlen);

/* Squeeze-excitation of an SE block (net.h) with bottleneck s over u, its
 * second batch norm's output: y = ReLU(sigmoid(z[0..c)) u + z[c..2c) +
 * skip), z = FC2(ReLU(FC1(the means of u's channels over the board))),
 * FC1 w1 [s][c] + b1, FC2 w2 [2c][s] + b2; skip may be NULL; pw [n][h w]
 * each point's weight in the means (masked pooling, nn_board_pool_weights)
 * or NULL for the plain mean. Backward:
 * dskip the gradient before the ReLU, du, and the FCs' gradients. The
 * trainer's own loops (tr_se_forward, tr_se_backward). */
int train_layer_se(int n, int c, int s, int h, int w, const float *u, const float *skip,
		   const float *pw, const float *w1, const float *b1, const float *w2,
		   const float *b2, const float *dy, float *y, float *du, float *dskip,
		   float *dw1, float *db1, float *dw2, float *db2, char *err, size_t errlen);

/* Policy loss: mean over n rows of the cross-entropy of softmax(logits)
 * against target; dlogits (may be NULL) receives its gradient. */
double train_loss_policy(int n, int n_actions, const float *logits, const float *target,
			 float *dlogits);
/* Value loss, mean over n rows. outputs 1: out is the pre-tanh value,
 * loss (tanh(out) - value)^2; outputs 3: out holds WDL logits, loss the
 * cross-entropy against wdl (or, when wdl is NULL, the target derived from
 * value as trainer.h says). dout (may be NULL) receives the gradient. */
double train_loss_value(int n, int outputs, const float *out, const float *value,
			const float *wdl, float *dout);

#endif
