/* learner.h: what `sente run` and `sente train` drive, whichever device
 * trains: the window of recent positions and the trainer behind one face.
 *
 *   cpu   the window in RAM as game records (data/replay.h), batches
 *         rebuilt and encoded on the host (train/batch.c), the oneDNN
 *         trainer (train/trainer.h);
 *   cuda  the window in device memory as packed positions
 *         (train/cuda/gpu_replay.h), batches drawn with cuRAND and expanded
 *         on the device, the cuDNN/cuBLAS trainer (train/cuda/gpu_train.h)
 *         in fp32, fp16 or bf16 with fp32 master weights.
 *
 * Data parallel: with a comm of K ranks each learner is one rank; every
 * rank draws the same global batch from the trainer's RNG (saved in
 * checkpoints) and computes the share [first, first + share). */
#ifndef SENTE_TRAIN_LEARNER_H
#define SENTE_TRAIN_LEARNER_H

#include <stddef.h>
#include <stdint.h>

#include "data/record.h"
#include "nn/net.h"
#include "train/comm.h"
#include "train/trainer.h"

typedef enum learner_backend {
	LEARNER_CPU = 0,
	LEARNER_CUDA = 1,
} learner_backend;

typedef enum learner_precision {
	LEARNER_FP32 = 0,
	LEARNER_FP16 = 1, /* fp16 compute, fp32 master weights, dynamic loss scale */
	LEARNER_BF16 = 2, /* bf16 compute, fp32 master weights */
} learner_precision;

typedef struct learner_options {
	train_options train;         /* train.batch: this rank's share */
	int64_t window;              /* positions sampled from */
	learner_backend backend;     /* where it trains */
	int device;                  /* CUDA device */
	learner_precision precision; /* CUDA arithmetic (the CPU trains fp32) */
	int micro_batch;             /* CUDA: 0 = chosen from free memory */
} learner_options;

typedef struct learner learner;

/* Defaults: train_options_default, window 100000, cpu, device 0, fp16 on
 * CUDA, automatic micro-batch. */
learner_options learner_options_default(void);
/* "fp32", "fp16", "bf16"; parse returns false on anything else. */
const char *learner_precision_name(learner_precision p);
bool learner_precision_from_name(const char *s, learner_precision *out);

/* A learner for a copy of net (training form). NULL with a message. */
learner *learner_new(const nn_net *net, const learner_options *o, char *err, size_t errlen);
void learner_free(learner *l);

/* Adds a finished game to the window (oldest games fall out). 0, or -1. */
int learner_add_game(learner *l, const game_record *r);
int64_t learner_positions(const learner *l);

/* One step: draws a global batch of `global` positions (the same draw on
 * every rank) and trains on positions [first, first + share) of it, share
 * being options.train.batch. st gets the losses and timings
 * (data_seconds: drawing and assembling the batch). 0, or -1 with
 * learner_error. */
int learner_step(learner *l, int global, int first, train_stats *st);

/* The current weights in training form, owned by the learner (for the
 * GPU learner, a host copy refreshed by this call). NULL on failure. */
nn_net *learner_net(learner *l);
int64_t learner_steps(const learner *l);

void learner_set_comm(learner *l, comm *c);
int learner_broadcast(learner *l, int root);
int learner_checkpoint_save(learner *l, const char *path, char *err, size_t errlen);
int learner_checkpoint_load(learner *l, const char *path, char *err, size_t errlen);
/* World size recorded in the checkpoint last loaded (1 for old files). */
int learner_checkpoint_world(const learner *l);

/* e.g. "cpu fp32" or "cuda fp16 on GPU 0 (NVIDIA H100), micro-batch 256". */
const char *learner_describe(const learner *l);
const char *learner_error(const learner *l);

#endif
