/* loop.h: the AlphaZero loop on one machine, as `sente run` drives it, in
 * phases a caller (or a test) can take one at a time:
 *
 *   loop_open      the run's folder (train/rundir.h): the store, the
 *                  learner from the checkpoint or a new network (registered
 *                  as the first model), its window refilled from the store,
 *                  the self-play workers on the newest (or, gating, the last
 *                  promoted) model; a new run's strength measured at step 0;
 *   loop_selfplay  games with the self-play model until about
 *                  positions_per_iter new recorded positions (never a game
 *                  cut short), each stored in one transaction and added to
 *                  the window;
 *   loop_train     sample_ratio training samples per new position;
 *   loop_export    the metrics, a new model registered with the run's
 *                  compute so far (store_compute), gating (when on),
 *                  the self-play model swapped, the checkpoint;
 *   loop_measure   strength: Connect Four error rates against a perfect
 *                  solver's labels, Go games against the first network;
 *   loop_report    DIR/report.html;
 *   loop_close     the closing measurement (unless stopped) and report.
 *
 * loop_run is the whole of it until `minutes` of wall time have passed
 * since loop_open (everything included: measurements, gating, the closing
 * measurement and report) or *stop is set. Self-play and training stop
 * early enough for the closing work, whose length is taken from the last
 * measurement; a measurement that would not fit is skipped, a search
 * measurement is cut at the deadline and then not stored. Every
 * phase leaves the run resumable: games are committed one by one, models
 * and checkpoints are written to a temporary file and renamed. */
#ifndef SENTE_LOOP_LOOP_H
#define SENTE_LOOP_LOOP_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "data/store.h"
#include "engine/game.h"
#include "nn/backend.h"
#include "selfplay/selfplay.h"
#include "train/comm.h"
#include "train/trainer.h"

/* A finished game from a game source, with who played it (stored with
 * the game). Nonzero stops the source. */
typedef int (*loop_game_fn)(void *ctx, const game_record *r, int64_t model_id, const char *worker);

/* Where the self-play phase's games come from when not from this
 * process's own workers: MPI self-play ranks (loop/distributed.h). play
 * delivers games to fn until `games` have come, `seconds` have passed, fn
 * asks to stop or *stop is set (play may set it: no games will come), and
 * returns the games delivered, or -1. model is told self-play's model when
 * the run opens and after every export (also when gating kept the old
 * one), with the learner's step; 0, or -1 with a message. */
typedef struct loop_game_source {
	int64_t (*play)(void *ctx, int64_t games, double seconds, loop_game_fn fn, void *fn_ctx,
			volatile sig_atomic_t *stop);
	int (*model)(void *ctx, store *db, int64_t model_id, int64_t step, char *err,
		     size_t errlen);
	void *ctx; /* the first argument of both */
} loop_game_source;

/* The self-play evaluator's largest batch when --eval-batch is not given:
 * the parallel games, at most this (sized for the CPU). */
#define LOOP_EVAL_BATCH_AUTO_MAX 64

/* --own-weight's automatic choice, and the weight it takes (KataGo's;
 * on 9x9, 2026-11-27, it won 70-86 of 100 games against the same compute
 * without it: docs/LEARNING.md). */
#define LOOP_OWN_WEIGHT_AUTO (-1.0)
#define LOOP_OWN_WEIGHT 1.5

typedef struct loop_options {
	game_params game;          /* what to learn */
	char dir[4096];            /* the run's folder */
	double minutes;            /* the session's length in wall time, from loop_open, the
				    * closing work included (gating matches are not cut short) */
	int blocks, channels;      /* a new network's shape */
	int se_channels;           /* > 0: its blocks squeeze-excitation, this bottleneck */
	int parallel_games;        /* self-play games at once */
	int games_per_thread;      /* of them, played by one worker thread
				    * (selfplay_options.games_per_thread) */
	double opp_weight;         /* the opponent-reply loss's weight; > 0: a new
				    * network has the head (a network that has it
				    * trains it with this weight, 0: not at all) */
	double own_weight;         /* the ownership loss's weight; > 0: a new network
				    * has the head (games with territory), which
				    * a network that has it trains with this weight;
				    * LOOP_OWN_WEIGHT_AUTO (the default): Go's new
				    * networks get it at LOOP_OWN_WEIGHT when they
				    * train on the CPU, a network with it trains it
				    * at that weight, else 0 */
	double score_weight;       /* the score loss's weight; > 0: a new network has
				    * the head (games with territory) */
	int eval_batch;            /* the self-play evaluator's largest batch; 0: the
				    * parallel games, at most LOOP_EVAL_BATCH_AUTO_MAX */
	int visits, cheap_visits;  /* full and cheap search visits */
	int64_t positions_per_iter; /* new recorded positions per iteration */
	int64_t window;            /* positions the learner samples from (with a growing
				    * window: the most it grows to) */
	/* KataGo's growing window (replay_window_size): window_min > 0 makes
	 * the window window_min + window_beta * window_min * ((N / window_min)
	 * ^ window_alpha - 1) / window_alpha after N positions of the run, at
	 * most `window`; 0: always `window`. */
	int64_t window_min;
	double window_alpha, window_beta;
	double reuse_cap;          /* the oldest games leave once drawn this many times on
				    * average (replay_set_reuse_cap); 0: no cap */
	int bn_batches;            /* batch-norm statistics recomputed from this many batches
				    * of the window after each iteration's training; 0: the
				    * momentum's alone */
	bool carry_games;          /* self-play games under way when an iteration has
				    * its positions go on in the next (selfplay_options'
				    * carry_games); false: each iteration plays all
				    * its games out. The game's run default */
	float resign_pct;          /* self-play's resignation (selfplay_options): at most this
				    * winrate, percent; 0: never */
	double no_resign_fraction; /* games that never resign, calibrating the threshold */
	int batch;                 /* training batch */
	double sample_ratio;       /* training samples per new position */
	double lr;                 /* base learning rate */
	/* The trainer's (train/trainer.h): optimizer (train_optimizer), lr
	 * schedule (train_lr_schedule) with a linear warm-up, the step
	 * schedule's drops (times lr_gamma), the cosine's length and floor,
	 * weight decay, batch-norm running-statistics momentum. */
	int optimizer, lr_schedule;
	int64_t lr_warmup, lr_total_steps;
	int lr_drops[TRAIN_MAX_LR_STEPS], n_lr_drops;
	double lr_gamma, lr_min, weight_decay, bn_momentum;
	selfplay_explore explore;  /* temperature schedule, cpuct, FPU, noise */
	double value_q_weight;     /* value target (1 - l) z + l q (0: z alone) */
	double value_lambda;       /* z as the lambda-return of the root values that
				    * follow (record_value_target); 1: the result */
	int value_cut;             /* that return cut at exploring moves (Watkins'
				    * Q(lambda), record_value_target); 0: not */
	int measure_every;         /* strength measured every N iterations (the search every
				    * third time), at the start and the end; 0: never */
	double measure_share;      /* a due in-run measurement is skipped while measuring has
				    * taken more than this share of the session so far (the
				    * first and the closing one are not); 1: never skipped */
	int eval_visits;           /* search visits when measuring strength */
	int eval_positions;        /* positions per set for the search measurement */
	uint64_t seed;             /* the first network's, and the trainer's */
	int gate_games;            /* 0: every new network plays self-play */
	double gate_threshold;     /* score a new network needs against the current one */
	int gate_visits;           /* visits per move in gating games */
	nn_backend_options nn;     /* --backend, --gpus, --precision */
	nn_dtype train_precision;  /* the learner's arithmetic when train_precision_given
				    * (learner_options.precision); else the CPU learner
				    * trains fp32 and the CUDA one nn.precision's or fp16 */
	bool train_precision_given;
	FILE *log;                 /* progress and errors; NULL: none */
	bool quiet;                /* fewer progress lines */
	volatile sig_atomic_t *stop; /* set (by a signal handler) to stop soon; may be NULL */
	const loop_game_source *source; /* NULL: self-play in this process */
	int sizes[SELFPLAY_MAX_SIZES]; /* --sizes (Go): a network of these board
				    * sizes, each game one of them; n_sizes 0:
				    * game.size alone */
	int n_sizes;
	int learner_ranks;         /* --learner-ranks: ranks 0..L-1 of an MPI run
				    * train (data parallel), the rest play */
	comm *learners;            /* rank 0's comm of those ranks (set by
				    * loop_run_ranks; NULL: the learner alone) */
} loop_options;

/* The defaults for game g on two CPU cores (README lists them). */
loop_options loop_options_default(const game_params *g);

/* The self-play settings of a run's options (game, games at once, visits,
 * backend, exploration, seed, quiet), as the loop's workers and the MPI
 * self-play ranks play with them. */
selfplay_options loop_selfplay_options(const loop_options *o);

/* The run's configuration as "flag value" lines (the `sente run` flags,
 * without dashes), as loop_open stores it in the meta table under
 * LOOP_CONFIG_KEY (the latest session's) and the report shows it. */
#define LOOP_CONFIG_KEY STORE_META_RUN_CONFIG
void loop_config_text(const loop_options *o, char *buf, size_t len);

/* What one iteration did. */
typedef struct loop_iteration {
	int number;               /* 1, 2, ... in this session */
	int64_t games;            /* self-play games finished */
	int64_t new_positions;    /* recorded positions they gave */
	double selfplay_seconds;  /* self-play phase */
	double policy_entropy;    /* mean entropy (nats) of the games' search policies (their
				   * recorded visit distributions); NaN when none */
	/* The evaluator during self-play (0 when the games came from a game
	 * source, whose evaluations are the ranks'): evaluations per second,
	 * mean batch, the share of requests the NN cache answered. */
	double evals_per_s, mean_batch, cache_hit_rate;
	/* Resignation check, over the session: of the no-resign games where a
	 * resignation would have happened (would_resign), the share the
	 * would-be resigner went on to win or draw (NaN when none); the
	 * threshold in use (percent). */
	double false_resign_rate, resign_threshold;
	int64_t would_resign;
	int steps;                /* training steps */
	int64_t window;           /* positions the learner samples from */
	bool used_up;             /* the reuse cap cut training short */
	double train_seconds;     /* training phase */
	double loss, policy_loss, value_loss, grad_norm, lr; /* means over the steps */
	double opp_loss;           /* the opponent-reply loss's mean; NaN without the head */
	double own_loss;           /* the ownership loss's mean; NaN without the head */
	double score_loss;         /* the score loss's mean; NaN without the head */
	int64_t step;             /* the learner's step after training */
	int64_t model_id;         /* the model exported */
	bool promoted;            /* it plays self-play from now on */
} loop_iteration;

typedef struct loop loop;

/* Opens (or resumes) the run in o->dir. NULL with a message. */
loop *loop_open(const loop_options *o, char *err, size_t errlen);
/* The phases of one iteration, in this order; each returns 0, or -1 with
 * a message (the run stays resumable). loop_selfplay returns 1 when the
 * window cannot yet fill a batch, or it was stopped: then skip the rest. */
int loop_selfplay(loop *r, loop_iteration *it, char *err, size_t errlen);
int loop_train(loop *r, loop_iteration *it, char *err, size_t errlen);
int loop_export(loop *r, loop_iteration *it, char *err, size_t errlen);
/* Measures strength every --measure-every iterations; nothing once
 * stopped (o.stop set). */
void loop_measure(loop *r, const loop_iteration *it);
int loop_report(loop *r, char *err, size_t errlen);
/* The closing measurement (when not stopped) and report, then frees the
 * run. NULL is fine. */
void loop_close(loop *r);

/* What a caller may want to show or check. */
double loop_seconds_left(const loop *r);    /* before self-play and training must stop
					     * (the session's end less its closing work) */
int64_t loop_step(const loop *r);           /* the learner's steps */
int64_t loop_positions(const loop *r);      /* positions in the window */
int64_t loop_selfplay_model(const loop *r); /* model id self-play uses */
bool loop_resumed(const loop *r);           /* opened from a checkpoint */

/* The whole loop: open, iterations until the time is up or *stop, close.
 * 0, or -1 with a message. */
int loop_run(const loop_options *o, char *err, size_t errlen);

#endif
