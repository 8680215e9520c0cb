/* gpu_train.h: the GPU learner: the CPU trainer's step (trainer.h: same
 * loss, gradient, batch-norm semantics, optimizers, lr schedule, clipping,
 * checkpoint format) on one CUDA device, in fp32 or mixed precision.
 *
 * Layout on the device: activations NHWC with every channel count padded to
 * a multiple of 8 (as the inference backend, nn/cuda), of the compute type;
 * convolutions by cuDNN (forward, backward data, backward filter), the head
 * FCs by cuBLAS in fp32, everything else by our kernels (train_kernels.cu).
 * The master weights are fp32, parallel to nn_net.data; the compute copies
 * (conv weights KRSC in the compute type, head FC weights permuted to read
 * NHWC) are recast from them after every update.
 *
 * Precision: fp32 (FMA math, no TF32: a step equals the CPU trainer's to
 * float rounding); fp16 (tensor cores, fp32 accumulation, dynamic loss
 * scaling: a step whose gradient holds an inf/NaN is skipped, the scale
 * halved; after `growth_interval` clean steps it doubles); bf16 (tensor
 * cores, scale 1, a step is skipped only on a non-finite gradient).
 *
 * Batch norm in training uses the statistics of the micro-batch on this
 * rank (no synchronisation across ranks, unlike the CPU learner): with K
 * ranks or micro-batches the step differs from one pass over the whole
 * batch by design (ghost batch norm). Running statistics are updated from
 * the local batch's mean and variance (micro-batches combined).
 *
 * The gradient is one device array of net->n_floats + GPU_TRAIN_TAIL
 * floats: the gradient (0 for running statistics) then the loss terms:
 * total without L2, policy, value, 1, ownership, score and opponent reply
 * (0 without the head), so that an average over ranks averages them.
 *
 * The training heads (nn/net.h), Go's ownership and score and the
 * opponent-reply head of either game, train as on the CPU (trainer.h:
 * the same losses, weights and targets, from the batch's own/score/opp
 * arrays); nets of several board sizes train on framed batches with their
 * SE means masked to each position's board (nn_arch.masked_pool), as the
 * CPU trainer's.
 * Backward hands finished ranges to the hooks (grad_hooks.h), the tail
 * first; the clipping and the optimizer read the gradient after finish().
 *
 * Everything is allocated by gpu_trainer_new; a step allocates nothing.
 * One stream per trainer. Without CUDA and cuDNN every entry point that
 * needs a device fails with a message; the helpers at the top work
 * everywhere.
 */
#ifndef SENTE_TRAIN_CUDA_GPU_TRAIN_H
#define SENTE_TRAIN_CUDA_GPU_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "nn/net.h"
#include "train/cuda/gpu_batch.h"
#include "train/cuda/grad_hooks.h"
#include "train/comm.h"
#include "train/trainer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Floats after the gradient in the gradient array (above). */
enum { GPU_TRAIN_TAIL = 7 };

typedef struct gpu_train_options {
	int device;             /* CUDA device index */
	nn_dtype precision;     /* compute type: fp32, fp16 or bf16 */
	int micro_batch;        /* positions per forward/backward; 0: the largest
				 * divisor of the batch whose activations fit */
	double loss_scale;      /* initial loss scale (fp16; others use 1) */
	int growth_interval;    /* clean steps after which the scale doubles */
	double backoff;         /* factor on overflow, in (0, 1) */
} gpu_train_options;

/* device 0, fp32, micro-batch automatic, scale 2^15, growth 2000, backoff 0.5. */
gpu_train_options gpu_train_options_default(void);
/* 0, or -1 with a message when g does not suit a batch of `batch`. */
int gpu_train_options_check(const gpu_train_options *g, int batch, char *err, size_t errlen);
/* Forward FLOPs of one position: 2 x the multiply-adds of its
 * convolutions and FCs (an SE block's two FCs too, as nn_net_flops). */
double gpu_train_forward_flops(const nn_arch *a);
/* True when the GPU trainer was built (CUDA and cuDNN found). */
int gpu_train_built(void);

typedef struct gpu_trainer gpu_trainer;

/* A trainer for a copy of net (training form, plain or squeeze-excitation
 * blocks) on g->device with o's batch and optimizer. NULL with a message:
 * bad options, no device, a cuDNN/cuBLAS that
 * cannot be loaded, short memory. */
gpu_trainer *gpu_trainer_new(const nn_net *net, const train_options *o,
			     const gpu_train_options *g, char *err, size_t errlen);
void gpu_trainer_free(gpu_trainer *t);

/* One optimizer step on the device batch b (b->n == batch, dtype and shape
 * of this trainer). st may be NULL. 0 (also for a skipped step: st says
 * so), or -1 with gpu_trainer_error() set. */
int gpu_trainer_step(gpu_trainer *t, const gpu_batch *b, train_stats *st);
/* The same from a host batch (planes NCHW floats, uploaded and expanded on
 * the device): for tests and tools. */
int gpu_trainer_step_host(gpu_trainer *t, const train_batch *b, train_stats *st);
/* Loss and gradient of a host batch without changing anything (no hooks,
 * no update); the gradient then is gpu_trainer_grad_host's. */
int gpu_trainer_gradient_host(gpu_trainer *t, const train_batch *b, train_stats *st);
/* Downloads the last gradient as trainer_grad has it: unscaled, before
 * clipping, with SGD's L2 term 2 c w on the decayed weights; out holds
 * net->n_floats + GPU_TRAIN_TAIL floats (the tail as above). 0 or -1. */
int gpu_trainer_grad_host(gpu_trainer *t, float *out);

/* Hooks called during backward (copied; NULL: none). */
void gpu_trainer_set_hooks(gpu_trainer *t, const gpu_grad_hooks *h);
/* The trainer's cudaStream_t. */
void *gpu_trainer_stream(gpu_trainer *t);
/* The device gradient array (net->n_floats + GPU_TRAIN_TAIL floats). */
float *gpu_trainer_grad_device(gpu_trainer *t);
/* Downloads the master weights and running statistics into a host net in
 * training form owned by the trainer (valid until the next call or free).
 * NULL with gpu_trainer_error() set. */
nn_net *gpu_trainer_net(gpu_trainer *t);
/* Replaces the weights (and running statistics) by net's, same arch;
 * optimizer moments are kept. 0 or -1. */
int gpu_trainer_set_weights(gpu_trainer *t, const nn_net *net);
int64_t gpu_trainer_steps(const gpu_trainer *t);
double gpu_trainer_loss_scale(const gpu_trainer *t);
/* Positions per forward/backward (the batch unless accumulating). */
int gpu_trainer_micro_batch(const gpu_trainer *t);
/* Overrides the loss scale (tests inject overflows with it). */
void gpu_trainer_set_loss_scale(gpu_trainer *t, double s);
/* Next number of the trainer's RNG: trainer_random's splitmix64. */
uint64_t gpu_trainer_random(gpu_trainer *t);
const train_options *gpu_trainer_options(const gpu_trainer *t);
const gpu_train_options *gpu_trainer_gpu_options(const gpu_trainer *t);
const char *gpu_trainer_error(const gpu_trainer *t);
/* Copies root's master weights, optimizer moments, step, RNG and loss
 * scale to every rank of c (an NCCL comm: device buffers, enqueued on the
 * trainer's stream) and rebuilds the compute copies. 0, or -1 with
 * gpu_trainer_error. */
int gpu_trainer_broadcast(gpu_trainer *t, comm *c, int root);

/* Checkpoints in the CPU trainer's format (train/checkpoint.h), loss scale
 * included; world is the ranks to record (1 for a lone trainer). */
int gpu_trainer_checkpoint_save(gpu_trainer *t, const char *path, int world, const void *blob,
				size_t blob_len, char *err, size_t errlen);
/* Loads a checkpoint of the same arch and optimizer (from either learner);
 * a file without a loss scale leaves the initial one. *world (may be
 * NULL) receives the recorded world size. 0, or -1 with t unchanged. */
int gpu_trainer_checkpoint_load(gpu_trainer *t, const char *path, void **blob, size_t *blob_len,
				int *world, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
