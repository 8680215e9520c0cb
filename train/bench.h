/* bench.h: learner throughput, as `sente bench train` measures it (its
 * flags are parsed in cli/bench.c, which prints the result as a JSON line).
 *
 * A trainer (the CPU one, or the GPU one on a device) for a random network
 * of blocks x channels takes one warm-up step and then `steps` timed steps
 * on one batch of random positions and targets: samples per second over
 * the whole of a step (host upload included) and, on CUDA, the model-FLOPs
 * utilisation, 3 x forward FLOPs x samples/s over the device's fp32 peak
 * (fp32) or tensor-core peak (fp16, bf16). */
#ifndef SENTE_TRAIN_BENCH_H
#define SENTE_TRAIN_BENCH_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/game.h"
#include "train/cuda/gpu_train.h"

typedef struct train_bench_options {
	bool cuda;               /* the GPU trainer, else the CPU one */
	nn_dtype precision;      /* CUDA compute type; the CPU's fp32 or bf16 */
	game_params game;        /* the network's game and Go board */
	int blocks, channels;    /* the network's tower */
	int se_channels;         /* > 0: squeeze-excitation blocks of this bottleneck */
	bool own, score;         /* Go's training heads, trained at the default weights */
	int batch;               /* positions per step */
	int steps;               /* timed steps after one warm-up */
	int micro_batch;         /* CUDA: positions per pass; 0 automatic */
	int threads;             /* CPU: oneDNN threads; 0 the runtime's */
	int device;              /* CUDA device */
	nn_conv_algo algo;       /* CPU: the tower's 3x3 convolutions (train_options.algo) */
	const char *save;        /* write the random network trained here, or NULL */
} train_bench_options;

typedef struct train_bench_result {
	int board;               /* the network's board width */
	double seconds;          /* the timed steps */
	double samples_per_s;    /* batch x steps / seconds */
	double forward_flops;    /* one position's forward (gpu_train_forward_flops) */
	double loss;             /* the last step's */
	const char *conv;        /* CPU: the tower's algorithm ("winograd", "direct") */
	/* CUDA only: */
	int micro_batch;         /* positions per pass in use */
	double compute_samples_per_s; /* over the device's compute time alone */
	double peak_tflops;      /* the device's peak for the precision */
	double mfu;              /* model-FLOPs utilisation */
} train_bench_result;

/* Defaults as `sente bench train` documents them: the CPU trainer, Go 9x9,
 * 6x64, batch 64, 10 steps, fp32. */
train_bench_options train_bench_options_default(void);

/* Runs the steps into *out. 0, or -1 with a message (no CUDA device, a
 * precision the trainer does not have, a trainer that cannot be made, a
 * failed step). */
int train_bench_run(const train_bench_options *o, train_bench_result *out, char *err,
		    size_t errlen);

#endif
