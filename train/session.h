/* session.h: a learner of its own on a run's folder, as `sente train` runs
 * it: the window of recent positions from DIR/sente.db, a model exported
 * into DIR/models (registered) and DIR/checkpoints/learner.ckpt written
 * every export_steps steps and at the end, the window refilled with the
 * games added since.
 *
 * Ranks: the session is one rank of a comm (train/comm.h). Rank 0 alone
 * reads the database and writes files and metrics; it broadcasts its
 * set-up (the network's shape), the games (learner_refill) and, each step,
 * whether to go on, so every rank stops at the same step and none needs
 * DIR. A failure on one rank alone aborts the job (comm_abort) rather than
 * leave the others waiting in a collective.
 *
 * train_session_main makes the ranks the way the process was started:
 * alone; one of `mpirun -np K`; the parent of one process per GPU (--gpus
 * without mpirun: it launches them, train/launch.h, and waits); or one of
 * those children (NCCL only, host traffic staged through the device).
 * train_session_run is one rank given its comm, so tests can run several
 * ranks as threads of one process. */
#ifndef SENTE_TRAIN_SESSION_H
#define SENTE_TRAIN_SESSION_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/game.h"
#include "nn/backend.h"
#include "train/comm.h"
#include "train/learner.h"

/* Outcomes, as `sente train` exits with them. */
enum {
	TRAIN_SESSION_OK = 0,     /* done or stopped at a step boundary */
	TRAIN_SESSION_FAILED = 1, /* the work failed (message on the log) */
	TRAIN_SESSION_USAGE = 2,  /* the options do not fit the ranks */
};

typedef struct train_session_options {
	const char *dir;               /* the run's folder */
	int64_t steps;                 /* steps of this session */
	double minutes;                /* time limit; 0 none */
	int batch;                     /* global batch, split evenly over the ranks */
	double lr;                     /* SGD learning rate */
	double value_q_weight;         /* value target (1 - l) z + l q (learner.h) */
	double value_lambda;           /* z as a lambda-return (learner.h); 1: the result */
	int value_cut;                 /* that return cut at exploring moves (learner.h) */
	double opp_weight;             /* the opponent-reply loss's weight; > 0: a new
					* network has the head */
	double own_weight;             /* the ownership loss's weight; > 0: a new (Go)
					* network has the head; < 0 (the default): 1.5
					* for a network with the head, else 0 */
	double score_weight;           /* the score loss's weight; > 0: a new (Go)
					* network has the head */
	int64_t window;                /* positions; 0: the game's default */
	int export_steps;              /* steps between exports and refills */
	int threads;                   /* oneDNN threads per rank; 0 the runtime's */
	game_params game;              /* a new network's game (no checkpoint yet) */
	int blocks, channels;          /* a new network's shape */
	int se_channels;               /* > 0: its blocks squeeze-excitation, this bottleneck */
	uint64_t seed;                 /* a new network's seed, and the trainer's */
	const learner_ops *learner;    /* learner_cpu or learner_cuda */
	nn_dtype precision;            /* CUDA arithmetic: fp32, fp16, bf16 */
	int micro_batch;               /* CUDA: 0 automatic */
	int gpus[NN_MAX_GPUS];         /* GPUs, one rank each */
	int n_gpus;                    /* entries of gpus; 0: device 0 */
	FILE *log;                     /* progress and errors (rank 0, or the
					* failing rank); NULL: none */
	bool quiet;                    /* errors only on the log */
	FILE *json;                    /* one JSON line per step (rank 0), or NULL */
	volatile sig_atomic_t *stop;   /* set (by a signal handler) to stop at the
					* next step boundary; may be NULL */
} train_session_options;

/* Defaults as `sente train` documents them: runs/connect4, 1000 steps,
 * batch 256, lr 0.02, export every 100 steps, Connect Four 4x48 seed 1,
 * the CPU learner, fp16 on CUDA. */
train_session_options train_session_options_default(void);

/* One rank of the session over `c` (host traffic); `nccl` is the device
 * comm for the CUDA learner's gradients when there are several ranks
 * (else NULL). A TRAIN_SESSION_* outcome. */
int train_session_run(const train_session_options *o, comm *c, comm *nccl);

/* The whole session as this process was started (see above): argv (argc
 * entries, argv[0] the command's name) is what a launched rank is started
 * with. A TRAIN_SESSION_* outcome. */
int train_session_main(const train_session_options *o, int argc, char **argv);

#endif
