/* gpu_batch.h: a training minibatch in device memory, as the GPU replay
 * buffer (gpu_replay.h) assembles it and the GPU trainer (gpu_train.h)
 * consumes it.
 *
 * Planes are in the trainer's input layout: NHWC, [cap][H*W][c_pad] with
 * c_pad = nn_pad8(in_planes) and the padding channels zero, of the
 * trainer's compute type (fp32, or fp16/bf16 for the mixed-precision
 * modes). Targets are fp32 as in train_batch: policy [cap][n_actions]
 * (probabilities summing to 1), value [cap] in [-1, 1] from the side to
 * move, wdl [cap][3] or NULL (then derived from value). For a network
 * with the ownership head, own [cap][hw] (who owns each point at the
 * game's end, +1 the side to move, in the position's orientation) and
 * own_w [cap] (1 where the game was played out and own holds a target, 0
 * where none: its points then count 0); with the score head, score [cap]
 * (the final score from the side to move's view over the board's points)
 * and score_w [cap] (1 or 0, likewise); with the opponent-reply head, opp
 * [cap][n_actions] (the reply's distribution, a row of zeros where there
 * is none: it then counts 0). Without a head its arrays are NULL;
 * train_batch (train/trainer.h) defines the same targets.
 */
#ifndef SENTE_TRAIN_CUDA_GPU_BATCH_H
#define SENTE_TRAIN_CUDA_GPU_BATCH_H

#include "nn/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpu_batch {
	int n;          /* positions filled */
	int cap;        /* positions allocated */
	int hw;         /* board points (H * W) */
	int c_pad;      /* channels of the planes (in_planes rounded up to 8) */
	int n_actions;  /* policy targets per position */
	nn_dtype dtype; /* type of planes: fp32, fp16 or bf16 */
	void *planes;   /* device [cap][hw][c_pad] */
	float *policy;  /* device [cap][n_actions] */
	float *value;   /* device [cap] */
	float *wdl;     /* device [cap][3], or NULL */
	float *own;     /* device [cap][hw], or NULL (no ownership head) */
	float *own_w;   /* device [cap], with own */
	float *score;   /* device [cap], or NULL (no score head) */
	float *score_w; /* device [cap], with score */
	float *opp;     /* device [cap][n_actions], or NULL (no opponent-reply head) */
} gpu_batch;

#ifdef __cplusplus
}
#endif

#endif
