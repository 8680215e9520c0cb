/* checkpoint.h: the learner checkpoint format (trainer.h describes it) as
 * functions over plain host arrays, so that the CPU trainer and the GPU
 * trainer (train/cuda/gpu_train.h) write and read the same files: a
 * checkpoint written by one loads into the other when the optimizer is
 * the same. */
#ifndef SENTE_TRAIN_CHECKPOINT_H
#define SENTE_TRAIN_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "nn/net.h"

/* Current format version: 3 added the loss scale after the world size. */
#define TRAIN_CKPT_VERSION 3u

/* What a checkpoint holds besides the net (arch, meta, weights). */
typedef struct train_ckpt_state {
	uint32_t optimizer;  /* train_optimizer */
	int n_mom;           /* moment arrays (SGD 1, AdamW 2) */
	int64_t step;        /* optimizer steps done */
	uint64_t rng;        /* splitmix64 state of the trainer's RNG */
	uint32_t world;      /* ranks that trained (1 for version 1 files) */
	float loss_scale;    /* dynamic loss scale; 0 when the file has none
			      * (versions 1 and 2: the reader picks its default) */
} train_ckpt_state;

/* Writes net (training form), the n_mom moment arrays (each net->n_floats
 * long), s and the blob to path (tmp file, fsync, rename). 0, or -1 with a
 * message (path untouched). */
int train_ckpt_write(const char *path, const nn_net *net, float *const *mom,
		     const train_ckpt_state *s, const void *blob, size_t blob_len, char *err,
		     size_t errlen);
/* Reads path into net (which must have the same architecture; weights and
 * meta replaced) and mom[0..n_mom) (n_mom and optimizer as in *s on entry,
 * which must match the file's), and fills *s. *blob (malloc'd) and
 * *blob_len receive the caller blob when blob is not NULL. Checks
 * everything before writing anything: on failure nothing changed. 0, or
 * -1 with a message. */
int train_ckpt_read(const char *path, nn_net *net, float *const *mom, train_ckpt_state *s,
		    void **blob, size_t *blob_len, char *err, size_t errlen);
/* The same over a checkpoint held in memory (for the fuzzer); `name` stands
 * for the file in messages. */
int train_ckpt_read_mem(const void *buf, size_t len, const char *name, nn_net *net,
			float *const *mom, train_ckpt_state *s, void **blob, size_t *blob_len,
			char *err, size_t errlen);
/* The network a checkpoint in memory holds (trainer_checkpoint_net's
 * parser): NULL with a message when the bytes are not a valid checkpoint. */
nn_net *train_ckpt_net_mem(const void *buf, size_t len, const char *name, char *err,
			   size_t errlen);

#endif
