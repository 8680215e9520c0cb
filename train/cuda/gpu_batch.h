/* gpu_batch.h: a training minibatch in device memory, as the GPU replay
 * buffer (gpu_replay.h) assembles it and the GPU trainer (gpu_train.h)
 * consumes it.
 *
 * Planes are in the trainer's input layout: NHWC, [cap][H*W][c_pad] with
 * c_pad = nn_pad8(in_planes) and the padding channels zero, of the
 * trainer's compute type (fp32, or fp16/bf16 for the mixed-precision
 * modes). Targets are fp32 as in train_batch: policy [cap][n_actions]
 * (probabilities summing to 1), value [cap] in [-1, 1] from the side to
 * move, wdl [cap][3] or NULL (then derived from value).
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
} gpu_batch;

#ifdef __cplusplus
}
#endif

#endif
