/* worker.h: a self-play worker that writes into a store, as `sente
 * selfplay` runs it: games played by selfplay.h, each finished game stored
 * in its own transaction with the worker's name and the model that played
 * it. The model is a file given by the caller (kept for the whole run), or
 * else the newest model registered in the store, and a newer one is taken
 * up between games (looked for every poll_seconds), or, with none
 * registered yet, a uniform policy until one is.
 *
 * The worker takes an open store and options; it parses nothing and prints
 * only to the log it is given, so a caller (the command line, a test, a
 * remote rank) decides where its lines go and when it stops. */
#ifndef SENTE_SELFPLAY_WORKER_H
#define SENTE_SELFPLAY_WORKER_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "data/store.h"
#include "selfplay/selfplay.h"

/* Outcomes, as `sente selfplay` exits with them. */
enum {
	SELFPLAY_WORKER_OK = 0,     /* the games were played and every one stored */
	SELFPLAY_WORKER_FAILED = 1, /* the set-up or a store write failed (message on the log) */
};

typedef struct selfplay_worker_options {
	selfplay_options play;    /* the games. play.game is what is asked for:
				   * a model's game replaces its kind (and a Go
				   * model's board its size; komi is kept);
				   * play.explore.temperature_moves < 0 takes the
				   * default of the game settled on */
	bool game_fixed;          /* play.game.kind was asked for: a model of
				   * another game is refused */
	const char *weights;      /* model file to play with, no pick-up of newer
				   * ones; NULL: the store's newest, followed */
	const char *name;         /* stored with each game; NULL: host-pid */
	int64_t games;            /* stop after this many games; 0: no limit */
	double seconds;           /* stop after this long; 0: no limit */
	double poll_seconds;      /* how often to look for a newer model */
	int max_store_failures;   /* give up after this many failed writes */
	FILE *log;                /* progress and errors; NULL: none */
	volatile sig_atomic_t *stop; /* set (by a signal handler) to stop at once,
				      * finished games kept; may be NULL */
} selfplay_worker_options;

/* What a run did. */
typedef struct selfplay_worker_result {
	bool started;             /* the set-up worked and games were played */
	selfplay_stats stats;     /* the games' totals (selfplay_get_stats) */
	game_params game;         /* what was played */
	int64_t model_id;         /* the model in use at the end; 0: a file or none */
	int models_taken;         /* newer models taken up from the store */
	int store_failures;       /* games whose store write failed */
} selfplay_worker_result;

/* Defaults: selfplay_options_default for Connect Four (temperature by the
 * game), no game asked for, newest model followed, no limits, a look for
 * newer models every 10 s, give up after 3 failed writes, no log. */
selfplay_worker_options selfplay_worker_options_default(void);

/* Plays into db until o->games, o->seconds or *o->stop, or until
 * o->max_store_failures writes have failed; *out (may be NULL) is filled
 * either way (zeros when the set-up failed). A SELFPLAY_WORKER_* outcome:
 * OK only when the set-up worked and every game was stored. */
int selfplay_worker_run(store *db, const selfplay_worker_options *o, selfplay_worker_result *out);

#endif
