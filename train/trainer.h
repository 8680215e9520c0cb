/* trainer.h: the CPU learner: loss, backward pass, optimizer, checkpoints.
 *
 * A trainer owns a copy of a network in training form (BN unfolded, with
 * running statistics) and everything one training step needs for a fixed
 * batch size: oneDNN primitives, activations, gradients, optimizer moments.
 * All of it is allocated by trainer_new; trainer_step allocates nothing.
 *
 * Loss (mean over the batch):
 *   policy: cross-entropy of softmax(logits over ALL actions) against the
 *       target distribution (normalised visits; illegal actions are 0);
 *   value: 1-output nets: (tanh(v) - z)^2 with z in [-1, 1] from the side
 *       to move; 3-output (WDL) nets: cross-entropy of softmax(logits)
 *       against the WDL target (given, or derived from z: W = max(z, 0),
 *       L = max(-z, 0), D = 1 - |z|);
 *   opponent reply (nets with the head): the policy's cross-entropy
 *       against the reply's target (batch.opp; rows of zeros count 0);
 *   ownership (nets with the head): per point, the cross-entropy of
 *       ((1 + tanh(z)) / 2) against ((1 + t) / 2), t the target in [-1, 1],
 *       averaged over the points, positions without a target (own_w 0)
 *       counting 0 (KataGo's ownership loss);
 *   score (nets with the head): (s - target)^2, s the head's output, the
 *       target the final score over the board's points, averaged over the
 *       positions (those without a target counting 0);
 *   total = policy + value_weight * value + opp_weight * opponent reply
 *       + own_weight * ownership + score_weight * score (+ l2 for SGD).
 * Weight decay, on conv and FC weights only (never biases or BN):
 *   SGD: L2 in the loss, l2 = weight_decay * sum w^2 (gradient 2 c w);
 *   AdamW: decoupled, w -= lr * weight_decay * w each step; l2 is then
 *       reported in the stats but not part of the loss.
 * Batch norm in training: batch statistics (biased variance, as PyTorch),
 * running mean/var updated PyTorch-style: r = (1 - m) r + m * batch stat,
 * the variance unbiased (x M / (M - 1), M = batch * H * W).
 * Optimizers follow PyTorch's torch.optim.SGD(nesterov=True, dampening 0)
 * and torch.optim.AdamW. Gradient clipping scales every gradient by
 * clip_norm / norm when the global L2 norm exceeds clip_norm.
 *
 * Squeeze-excitation blocks train too (their pooling and gates in plain
 * loops beside oneDNN).
 *
 * Precision (train_options.precision): fp32, or bf16 operands for the
 * tower's convolutions with fp32 everywhere else (mixed precision as on
 * GPUs, without a loss scale: bf16 has fp32's range).
 *
 * Determinism: for a fixed thread count, the same CPU and the same oneDNN,
 * a step is a pure function of (weights, optimizer state, batch), so a
 * checkpoint resumes bit for bit.
 *
 * Data parallel: trainer_set_comm(t, c) with K ranks makes every rank's
 * trainer one share of a global batch of K * batch positions. In training
 * passes batch norm uses the statistics of the global batch (synchronised
 * batch norm: two small all-reduces per BN layer, forward and backward),
 * so running statistics come out the same on every rank; trainer_step
 * averages the gradients (and the loss terms) over the ranks and applies
 * the same update everywhere. K ranks with equal shares so take the step
 * one rank takes on the whole batch, to float rounding (tests/train).
 */
#ifndef SENTE_TRAIN_TRAINER_H
#define SENTE_TRAIN_TRAINER_H

#include <stddef.h>
#include <stdint.h>

#include "nn/backend.h"
#include "nn/net.h"
#include "train/comm.h"

#define TRAIN_MAX_LR_STEPS 16

typedef enum train_optimizer {
	TRAIN_OPTIMIZER_SGD = 0,   /* SGD with Nesterov momentum */
	TRAIN_OPTIMIZER_ADAMW = 1, /* Adam with decoupled weight decay */
} train_optimizer;

typedef enum train_lr_schedule {
	TRAIN_LR_SCHEDULE_CONSTANT = 0, /* lr throughout */
	TRAIN_LR_SCHEDULE_STEP = 1,     /* lr * gamma^(drops passed) */
	TRAIN_LR_SCHEDULE_COSINE = 2,   /* lr -> lr_min over lr_total_steps */
} train_lr_schedule;

typedef enum train_layout {
	TRAIN_LAYOUT_AUTO = 0,    /* blocked when the width is a multiple of 16, else NHWC */
	TRAIN_LAYOUT_BLOCKED = 1, /* nChw16c (oneDNN's AVX-512 layout; width % 16 == 0) */
	TRAIN_LAYOUT_NHWC = 2,    /* channels last, any width */
} train_layout;


typedef struct train_options {
	int batch;                 /* training batch size (fixed) */
	int threads;               /* oneDNN threads; 0 = the runtime's default */
	train_optimizer optimizer; /* SGD or AdamW */
	double lr;                 /* base learning rate */
	double momentum;           /* SGD momentum (Nesterov) */
	double weight_decay;       /* L2 coefficient c (SGD) or decoupled rate (AdamW) */
	double adam_beta1;         /* AdamW first-moment decay */
	double adam_beta2;         /* AdamW second-moment decay */
	double adam_eps;           /* AdamW denominator guard */
	double clip_norm;          /* global gradient-norm clip; <= 0: none */
	double value_weight;       /* weight of the value loss in the total */
	double opp_weight;         /* weight of the opponent-reply loss (nets with
				    * the head; KataGo's is 0.15) */
	double own_weight;         /* weight of the ownership loss (nets with the
				    * head; KataGo's 1.5 / points summed is 1.5 on
				    * the mean) */
	double score_weight;       /* weight of the score loss (nets with the head) */
	double bn_momentum;        /* running-stat update rate (PyTorch's momentum) */
	train_lr_schedule lr_schedule; /* how lr moves with the step */
	int64_t lr_steps[TRAIN_MAX_LR_STEPS]; /* STEP: steps at which lr drops */
	int n_lr_steps;            /* used entries of lr_steps */
	double lr_gamma;           /* STEP: factor per drop */
	int64_t lr_total_steps;    /* COSINE: length of the decay */
	double lr_min;             /* COSINE: final rate */
	int64_t warmup_steps;      /* linear warm-up from 0 over this many steps */
	uint64_t seed;             /* seed of the trainer's RNG (trainer_random) */
	train_layout layout;       /* activation layout of the tower */
	nn_conv_algo algo;         /* the tower's 3x3 convolutions: NN_CONV_DIRECT, or
				    * Winograd F(4x4, 3x3) where oneDNN 2.6 has all three
				    * passes for the shape (AVX-512, the blocked layout, a
				    * width that is a multiple of 16; auto: and at least 32
				    * wide), else direct. fp32 either way: results differ
				    * by rounding */
	nn_dtype precision;        /* the tower's 3x3 convolutions: NN_DTYPE_FP32, or
				    * NN_DTYPE_BF16: their sources, output gradients and
				    * weights rounded to bfloat16 at each convolution, the
				    * products summed in fp32; activations, batch norm,
				    * the heads, the master weights and the optimizer stay
				    * fp32. bf16 takes the NHWC layout and direct
				    * convolutions (oneDNN 2.6 runs them on AMX tiles
				    * there, not in nChw16c) and needs AVX-512 BF16 */
} train_options;

/* A minibatch, laid out for the net's arch. */
typedef struct train_batch {
	int n;          /* positions used */
	int cap;        /* positions allocated */
	int in_size;    /* floats of planes per position (C * H * W) */
	int n_actions;  /* policy targets per position */
	int frame_w, frame_h; /* the net's board (H x W): a smaller game's
			 * positions sit in its lower left corner, their
			 * targets where the frame has their points */
	float *planes;  /* [cap][C][H][W] input planes */
	float *policy;  /* [cap][n_actions] target probabilities */
	float *value;   /* [cap] result in [-1, 1] from the side to move */
	float *wdl;     /* [cap][3] win/draw/loss target, or NULL (then derived
			 * from value) */
	float *opp;     /* [cap][n_actions] the opponent's reply (nets with the
			 * opponent-reply head), or NULL; a row of zeros: none
			 * (the game ended), which the loss skips */
	int n_points;   /* points of the board (ownership targets per position) */
	float *own;     /* [cap][n_points] who owns each point at the end, +1 the
			 * side to move (nets with the ownership head), or NULL */
	float *own_w;   /* [cap] 1 where own holds a target, 0 where the game
			 * has none (resigned, or not played out) */
	float *score;   /* [cap] the final score from the side to move's view,
			 * over the board's points (nets with the score head),
			 * or NULL */
	float *score_w; /* [cap] 1 where score holds a target, 0 where none */
} train_batch;

typedef struct train_stats {
	double loss;        /* total that was minimised */
	double policy_loss; /* policy cross-entropy */
	double value_loss;  /* value MSE or WDL cross-entropy (unweighted) */
	double opp_loss;    /* opponent-reply cross-entropy (unweighted; 0 without
			     * the head) */
	double own_loss;    /* ownership cross-entropy per point (unweighted; 0
			     * without the head) */
	double score_loss;  /* score squared error (unweighted; 0 without the head) */
	double l2;          /* weight_decay * sum w^2 (before the step) */
	double grad_norm;   /* global gradient norm before clipping (step only) */
	double lr;          /* learning rate used (step only) */
	int64_t step;       /* steps done after this call */
	double comm_seconds; /* seconds in collectives during the step (trainer_step
			      * with a comm; 0 otherwise) */
	/* The GPU learner (train/cuda/gpu_train.h) also fills these; the CPU
	 * learner leaves loss_scale 1 and the rest 0. */
	double loss_scale;     /* dynamic loss scale used by the step (fp16) */
	int skipped;           /* 1: the step overflowed and was skipped */
	int64_t skipped_steps; /* steps skipped since the trainer was made */
	double data_seconds;   /* seconds assembling the batch (sampling, expansion) */
	double compute_seconds; /* seconds in forward, backward and the update */
} train_stats;

typedef struct trainer trainer;

/* Defaults: batch 64, threads 0, SGD, lr 0.02, momentum 0.9, weight decay
 * 1e-4, Adam 0.9/0.999/1e-8, no clipping, value weight 1, opponent-reply
 * weight 0.15, ownership weight 1.5, score weight 1, BN momentum 0.01,
 * constant lr, gamma 0.1, seed 1, layout auto, fp32. */
train_options train_options_default(void);

/* A trainer for a copy of `net` (the caller keeps and may free its own);
 * the net must be unfolded (training form). NULL with a message on bad
 * options (bf16 where oneDNN has no bf16 convolution), an unsupported net
 * or short memory. */
trainer *trainer_new(const nn_net *net, const train_options *o, char *err, size_t errlen);
void trainer_free(trainer *t);

/* Whether bf16 training is the fast choice on this CPU: AMX tiles, on
 * which the tower's bf16 convolutions run (not ONEDNN_MAX_CPU_ISA-hidden).
 * sente run's CPU learner trains bf16 by default where this holds. */
bool trainer_bf16_fast(void);

/* One optimizer step on b (b->n must equal the batch size): forward in
 * training mode, backward, running-stat update, clipping, update. 0, or -1
 * with trainer_error() set (a oneDNN or collective failure). st may be
 * NULL. With a comm of K ranks, b is this rank's share: the gradient and
 * st's losses are the global batch's (see the top of this file). */
int trainer_step(trainer *t, const train_batch *b, train_stats *st);
/* The second half of trainer_step without the all-reduce: running-stat
 * update from the last trainer_gradient, clipping, and the optimizer update
 * with `grad` (parallel to trainer_net(t)->data; may be trainer_grad(t)).
 * For callers that reduce gradients themselves (tests, a GPU learner
 * overlapping the reduction with the backward pass). st gets the losses of
 * the last trainer_gradient. 0. */
int trainer_apply(trainer *t, const float *grad, train_stats *st);
/* Makes t one rank of c (not owned; NULL: back to a lone trainer). Every
 * rank must use the same options and start from the same state
 * (trainer_broadcast). */
void trainer_set_comm(trainer *t, comm *c);
comm *trainer_comm(const trainer *t);
/* Copies root's weights, running statistics, optimizer moments, step and
 * RNG state to every rank of the trainer's comm. 0, or -1 with a message. */
int trainer_broadcast(trainer *t, int root);
/* Ranks of the trainer's comm (1 without one): what checkpoints record. */
int trainer_world(const trainer *t);
/* The world size recorded in the checkpoint last loaded into t: 1 for a
 * file from before world sizes were recorded, 0 when none was loaded. */
int trainer_checkpoint_world(const trainer *t);
/* Loss only, BN in inference mode (running statistics), 1 <= b->n <= batch;
 * changes nothing. */
int trainer_eval(trainer *t, const train_batch *b, train_stats *st);
/* Loss and gradient (trainer_grad) in training mode without changing the
 * weights or running statistics; b->n == batch. For tests and tools. With
 * a comm of several ranks batch norm uses the global statistics, but the
 * gradient and losses are this rank's (not averaged). */
int trainer_gradient(trainer *t, const train_batch *b, train_stats *st);
/* Batch-norm running statistics recomputed from data ("precise BN"), so
 * that they match the weights (the running averages lag them, and start
 * from 0 and 1): trainer_bn_begin, then trainer_bn_add for each of a few
 * full batches (a training-mode forward each: every layer's batch mean and
 * variance, with a comm the global batch's), then trainer_bn_commit sets
 * every layer's running mean and variance to those of all the batches
 * together (the variance unbiased, as the momentum rule does). Weights,
 * step and RNG are unchanged. Each 0, or -1 with trainer_error(). */
int trainer_bn_begin(trainer *t);
int trainer_bn_add(trainer *t, const train_batch *b);
int trainer_bn_commit(trainer *t);
/* The gradient of the last trainer_gradient / trainer_step (before
 * clipping), parallel to trainer_net(t)->data (0 for running stats). */
const float *trainer_grad(const trainer *t);

/* The current weights (training form), owned by the trainer and updated in
 * place by every step. Callers clone, fold and save them for inference;
 * tests may perturb them between calls. */
nn_net *trainer_net(trainer *t);
const train_options *trainer_options(const trainer *t);
int64_t trainer_steps(const trainer *t);
/* Learning rate the schedule gives at `step`. */
double trainer_lr_at(const trainer *t, int64_t step);
/* The same as a pure function of the options (shared with the GPU learner). */
double train_lr_at(const train_options *o, int64_t step);
/* Checks options as trainer_new does: 0, or -1 with a message. */
int train_options_check(const train_options *o, char *err, size_t errlen);
/* Next number of the trainer's RNG (splitmix64, seeded by options.seed and
 * saved in checkpoints) so that callers' sampling resumes exactly. */
uint64_t trainer_random(trainer *t);
/* Message of the last failure. */
const char *trainer_error(const trainer *t);

/* The tower's convolution algorithm as made: "winograd" or "direct". */
const char *trainer_conv_name(const trainer *t);

/* Checkpoints (train/checkpoint.c; the format as functions over plain
 * arrays in train/checkpoint.h): the weights, optimizer moments, step,
 * RNG state and an opaque caller blob (e.g. the replay position), with magic,
 * version, header and CRC-32, written to PATH.tmp, fsync'd and renamed.
 * Format (little-endian):
 *   "SENTECKP", u32 version, u32 header length L, header (L bytes):
 *     u32 arch fields x 13 (as the model file), u32 flags (bit 0 BN
 *     folded, bits 1-3 the opponent-reply, ownership and score heads),
 *     u8 block kind
 *     [blocks], u64 meta train_step, u64 meta created, char[64] parent,
 *     char[64] name, u32 optimizer, u32 moment arrays K, u64 step,
 *     u64 rng state, u64 float count N, u64 blob length B,
 *     u32 world size (version 2; version 1 files have none and read as 1),
 *     f32 loss scale (version 3: the GPU learner's dynamic fp16 scale, 1
 *     from this trainer; versions 1 and 2 have none)
 *   N floats of weights, K x N floats of optimizer moments, B blob bytes,
 *   u32 CRC-32 (zlib) of every byte before it. */
int trainer_checkpoint_save(trainer *t, const char *path, const void *blob, size_t blob_len,
			    char *err, size_t errlen);
/* Restores a checkpoint into t, which must have been made for the same
 * architecture and optimizer. *blob (malloc'd, the caller frees) and
 * *blob_len receive the caller blob when blob is not NULL. On failure t is
 * unchanged. 0, or -1 with a message. */
int trainer_checkpoint_load(trainer *t, const char *path, void **blob, size_t *blob_len,
			    char *err, size_t errlen);
/* The network stored in a checkpoint (to build a trainer to load it into).
 * NULL with a message. */
nn_net *trainer_checkpoint_net(const char *path, char *err, size_t errlen);

/* Batches (train/batch.c). */
/* A batch with room for cap positions of arch a (wdl: allocate WDL targets).
 * NULL when memory is short. */
train_batch *train_batch_new(const nn_arch *a, int cap, int wdl);
void train_batch_free(train_batch *b);
/* Encodes g under symmetry sym into slot `slot` of b, with the policy target
 * the normalised visits permuted the same way (target at
 * game_symmetry_move(g, sym, a) = visits of a / total) and the value target
 * (side to move); WDL targets, when b has them, are derived from it. 0, or
 * -1 when the encoding does not fit the game or the batch, a move is out of
 * range, or there are no visits. */
int train_batch_from_position(const game *g, nn_encoding enc, int sym, const int16_t *visit_moves,
			      const uint16_t *visit_counts, int n_visits, float value_target,
			      train_batch *b, int slot);
/* The opponent-reply target of slot `slot`, whose position is g (before
 * the move the slot's policy target is about): the reply's distribution
 * (n moves with counts, normalised; moves in g's frame, permuted by sym as
 * train_batch_from_position permutes the policy), or, with n 0 or no
 * counts, a row of zeros (no reply: the loss skips it). 0, or -1 when b
 * has no such targets or an argument is out of range. */
int train_batch_opp_target(const game *g, int sym, const int16_t *moves, const uint16_t *counts,
			   int n, train_batch *b, int slot);
/* The ownership target of slot `slot`, whose position is g: owner (NULL:
 * none, own_w 0) gives each point's owner at the game's end from the first
 * player's view (game_desc.ownership), turned to the view of g's side to
 * move and permuted by sym as the planes are. 0, or -1 when b has no such
 * targets or an argument is out of range. */
int train_batch_own_target(const game *g, int sym, const float *owner, train_batch *b, int slot);
/* The score target of slot `slot`, whose position is g: `score` the game's
 * final score from the first player's view (NAN: none, score_w 0), turned
 * to the view of g's side to move and divided by the board's points. 0,
 * or -1 when b has no such targets or slot is out of range. */
int train_batch_score_target(const game *g, double score, train_batch *b, int slot);

#endif
