/* learner.h: what `sente run` and `sente train` drive, whichever device
 * trains: the window of recent positions and the trainer behind one table
 * of operations, as the inference backends are (nn/backend.h).
 *
 *   learner_cpu   the window in RAM as game records (train/replay.h),
 *                 batches rebuilt and encoded on the host (train/batch.c),
 *                 the oneDNN trainer (train/trainer.h); train/cpu_learner.c.
 *   learner_cuda  the window in device memory as packed positions
 *                 (train/cuda/gpu_replay.h), batches drawn with cuRAND and
 *                 expanded on the device, the cuDNN/cuBLAS trainer
 *                 (train/cuda/gpu_train.h) in fp32, fp16 or bf16 with fp32
 *                 master weights; train/cuda/gpu_learner.c. In a build
 *                 without CUDA and cuDNN its create refuses with the reason.
 *
 * Data parallel: with a comm of K ranks each learner is one rank; every
 * rank draws the same global batch from the trainer's RNG (saved in
 * checkpoints) and computes the share [first, first + share).
 *
 * Adding a learner: fill a learner_ops (every field), declare it here and
 * add it to learner_by_name. */
#ifndef SENTE_TRAIN_LEARNER_H
#define SENTE_TRAIN_LEARNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data/record.h"
#include "data/store.h"
#include "nn/dtype.h"
#include "nn/net.h"
#include "train/comm.h"
#include "train/trainer.h"

typedef struct learner_options {
	train_options train;         /* train.batch: this rank's share */
	int64_t window;              /* positions sampled from: the most set_window allows */
	double reuse_cap;            /* the CPU learner's reuse cap (replay_set_reuse_cap);
				      * 0: none. The CUDA learner has none. */
	float value_q_weight;        /* value target (1 - l) z + l q; 0: z alone;
				      * default 0.5 (docs/LEARNING.md) */
	float value_lambda;          /* z above is the lambda-return of the root
				      * values that follow (record_value_target);
				      * 1, the default: the result itself */
	bool value_cut;              /* ... cut at exploring moves (Watkins'
				      * Q(lambda), record_value_target); default off */
	int device;                  /* CUDA device */
	nn_dtype precision;          /* CUDA arithmetic: fp32; fp16 (fp32 master
				      * weights, dynamic loss scale) or bf16 (fp32
				      * master weights). The CPU learner trains bf16
				      * when this is bf16 (train_options.precision),
				      * else fp32. */
	int micro_batch;             /* CUDA: 0 = chosen from free memory */
} learner_options;

/* One learner implementation. A context is made by create and used by one
 * thread at a time; every other entry takes it. Entries return 0 or -1
 * (then error() says why) unless said otherwise. */
typedef struct learner_ops {
	const char *name; /* "cpu", "cuda": what --backend names */
	/* A learner for a copy of net (training form). `what` (whatlen bytes)
	 * receives a line for learner_describe, e.g. "cpu fp32" or "cuda fp16
	 * on GPU 0 (NVIDIA H100), micro-batch 256". NULL with a message. */
	void *(*create)(const nn_net *net, const learner_options *o, char *what, size_t whatlen,
			char *err, size_t errlen);
	void (*destroy)(void *ctx); /* NULL is fine */
	/* Adds a finished game to the window; the oldest games fall out. */
	int (*add_game)(void *ctx, const game_record *r);
	int64_t (*positions)(const void *ctx); /* recorded positions in the window */
	/* See learner_step. */
	int (*step)(void *ctx, int global, int first, train_stats *st);
	/* See learner_set_window and learner_recompute_bn. */
	int (*set_window)(void *ctx, int64_t window);
	int (*recompute_bn)(void *ctx, int batches);
	/* The weights in training form, owned by the context (a host copy
	 * refreshed by the call where they live on a device); NULL on failure. */
	nn_net *(*net)(void *ctx);
	int64_t (*steps)(const void *ctx); /* optimizer steps taken */
	/* The ranks to train with (NULL or one rank: alone); the comm outlives
	 * the context. A failure here shows at the next broadcast. */
	void (*set_comm)(void *ctx, comm *c);
	/* Makes every rank's state root's (weights, optimizer, step, RNG). */
	int (*broadcast)(void *ctx, int root);
	/* The checkpoint file (train/checkpoint.h), written atomically; the
	 * message goes to err. */
	int (*checkpoint_save)(void *ctx, const char *path, char *err, size_t errlen);
	int (*checkpoint_load)(void *ctx, const char *path, char *err, size_t errlen);
	/* World size recorded in the checkpoint last loaded (1 for old files,
	 * 0 before any load). */
	int (*checkpoint_world)(const void *ctx);
	const char *(*error)(const void *ctx); /* the last failure's message */
} learner_ops;

extern const learner_ops learner_cpu;
extern const learner_ops learner_cuda;

/* A learner: the table and its context. */
typedef struct learner learner;

/* Defaults: train_options_default, window 100000, device 0, fp16 on CUDA,
 * automatic micro-batch. */
learner_options learner_options_default(void);
/* "cpu" -> &learner_cpu, "cuda" -> &learner_cuda; NULL when unknown. */
const learner_ops *learner_by_name(const char *name);

/* A learner of kind ops for a copy of net (training form). NULL with a
 * message. */
learner *learner_new(const learner_ops *ops, const nn_net *net, const learner_options *o,
		     char *err, size_t errlen);
void learner_free(learner *l); /* NULL is fine */
const learner_ops *learner_kind(const learner *l);

/* Adds a finished game to the window (oldest games fall out). 0, or -1. */
int learner_add_game(learner *l, const game_record *r);
int64_t learner_positions(const learner *l);

/* One step: draws a global batch of `global` positions (the same draw on
 * every rank) and trains on positions [first, first + share) of it, share
 * being options.train.batch. st gets the losses and timings
 * (data_seconds: drawing and assembling the batch). 0; LEARNER_USED_UP
 * (no step taken) when the reuse cap has retired the whole window, so
 * more games are needed; or -1 with learner_error. */
#define LEARNER_USED_UP 1
int learner_step(learner *l, int global, int first, train_stats *st);
/* Narrows the window to `window` positions (at most options.window), the
 * oldest games leaving: the loop's growing window. 0, or -1 with
 * learner_error where the learner's window is fixed (CUDA). */
int learner_set_window(learner *l, int64_t window);
/* Recomputes the batch-norm running statistics from `batches` batches
 * drawn from the window (trainer_bn_begin): what an exported network
 * normalises with then matches its weights. The draws do not count toward
 * the reuse cap. 0, or -1 with learner_error (CUDA: not done there). */
int learner_recompute_bn(learner *l, int batches);

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

/* Several learner ranks driven by one (`sente run --learner-ranks L`):
 * rank 0 of c makes its learner as usual (options.train.batch its share of
 * the global batch), then calls learner_lead, which sends its network and
 * options to ranks 1..n-1 of c, each in learner_follow, and makes their
 * state its own. From then on the calls that change the window or train
 * (learner_add_game, learner_step, learner_set_window,
 * learner_recompute_bn, learner_checkpoint_load and the broadcast after
 * it) are sent to every follower before rank 0 makes them, and each
 * follower makes the same call (a step at first = its rank times its
 * share): their windows hold the same games, and their gradients meet in
 * the trainer's all-reduce over c. learner_free on rank 0 ends the
 * followers. Commands travel as point-to-point messages that followers
 * poll for with short sleeps. c must outlive the learner. 0, or -1 with a
 * message (c of one rank or NULL: nothing to do). */
int learner_lead(learner *l, comm *c, const learner_options *o, char *err, size_t errlen);
/* A follower (rank > 0 of c): makes a learner of kind ops from rank 0's
 * network and options and does what rank 0's learner is told, until rank
 * 0 ends it. 0 when ended; -1 with a message when a command failed here
 * alone (the caller aborts the job: rank 0 would wait in the next
 * collective). */
int learner_follow(comm *c, const learner_ops *ops, char *err, size_t errlen);

/* Refills the window from the store: the games with id > *last_id, newest
 * first up to `window` positions, added oldest first (as they were played),
 * and *last_id moved to the newest. With a comm of several ranks, rank 0
 * alone reads (db may be NULL elsewhere) and broadcasts the records, so
 * every rank adds the same games in the same order. *added gets the games
 * added. 0; or -1 with a message, where *added == -1 means every rank
 * failed together (rank 0 could not read) and anything else this rank
 * alone (the caller then aborts the job rather than leave the others in a
 * collective). */
int learner_refill(learner *l, store *db, comm *c, int64_t window, int64_t *last_id, int *added,
		   char *err, size_t errlen);

#endif
