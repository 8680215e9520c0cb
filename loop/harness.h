/* harness.h: the honest harness, as `sente eval` drives it: every saved
 * model of a run measured afterwards, outside the run's timed minutes, and
 * set against the compute the run had spent to reach it (the models'
 * store_compute rows, written by the loop).
 *
 *   Connect Four (a game with solver-labelled positions): the error rate
 *   on each set of data/connect4, the network alone on every position
 *   (method "net") and an N-visit search on every position (method
 *   "search-vN"), or on P positions a set, spread over it ("search-vN-pP");
 *   Go: a match against GNU Go at a level, which also scores the games
 *   (method "gnugo-lL-vN-gG": the win rate, draws half).
 *
 * Connect Four can be measured with the network at another precision of
 * the CPU backend (bf16, int8: the backend self-play would run, int8
 * calibrated the same way); its methods then carry the precision
 * ("net@int8", "search-vN@int8"), beside the fp32 ones, which keep
 * their plain names.
 *
 * Every measurement is stored in the run's database (store_evaluation,
 * keyed by model, method and part), so running it again measures only
 * what is missing, and a Ctrl-C loses at most the model in progress (a
 * Go match resumes game by game).
 *
 * After the table, each model is set against the model measured about
 * regress_minutes of compute before it: a model worse beyond two standard
 * errors of the difference is listed as a regression.
 *
 * harness_compare sets runs side by side at equal compute: each run's
 * curve interpolated at the points asked for, then mean and spread over
 * the runs of one label (the seed varies within a label). */
#ifndef SENTE_LOOP_HARNESS_H
#define SENTE_LOOP_HARNESS_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "data/store.h"
#include "nn/dtype.h"

/* Most models harness_options.models may name; most points of a compare. */
#define HARNESS_MAX_LIST 256
/* The default spacing of the models measured: the run's compute (its last
 * model's, on the axis) in this many equal steps, so a 10-minute run and a
 * 10-hour one take about as long to measure. */
#define HARNESS_AUTO_STEPS 24
/* Most runs harness_compare takes. */
#define HARNESS_MAX_RUNS 64

/* The compute axis: the process's CPU seconds (fair between runs that
 * shared a machine) or the wall seconds of self-play and training. */
typedef enum harness_axis {
	HARNESS_AXIS_CPU = 0,
	HARNESS_AXIS_WALL = 1,
} harness_axis;

typedef struct harness_options {
	char dir[4096];            /* the run's folder */
	int visits;                /* search visits per position (C4) or move (Go) */
	int positions;             /* C4: positions per set for the search; 0 (the
				    * default) all */
	bool net_only;             /* C4: the network alone, no search */
	nn_dtype precision;        /* C4: the CPU backend's arithmetic (fp32, bf16,
				    * int8); fp32 by default */
	int models[HARNESS_MAX_LIST]; /* only these model ids ... */
	int n_models;              /* ... when > 0 */
	double every;              /* > 0: a model about every this many minutes of
				    * compute (the first at or past each multiple),
				    * plus the first and the last; 0: every model;
				    * < 0 (the default): the same with the run's
				    * compute split into HARNESS_AUTO_STEPS */
	harness_axis axis;         /* what `every` and the chart count */
	int gnugo_level;           /* Go: GNU Go's --level */
	int games;                 /* Go: games against it per model */
	char gnugo[1024];          /* Go: GNU Go's program ("gnugo": looked up on PATH
				    * and in /usr/games) */
	char csv[4096];            /* "" or a file for the table, one row per figure */
	double regress_minutes;    /* > 0: after the table, the models worse (beyond two
				    * standard errors) than the measured model this many
				    * minutes of compute before them */
	FILE *log;                 /* progress lines and the table; NULL: none */
	bool quiet;                /* no progress lines */
	volatile sig_atomic_t *stop; /* set (by a signal handler) to stop after the
				      * model in progress; may be NULL */
} harness_options;

harness_options harness_options_default(void);

/* The models `every` picks among n whose compute is x[] (seconds on the
 * axis, ascending): every minutes > 0 the first at or past each multiple,
 * with the first and the last; 0 all; < 0 as > 0 with the last's compute
 * in HARNESS_AUTO_STEPS steps. Sets pick[i] (leaves the others as they
 * are); returns how many are set. */
int harness_spaced(const double *x, int n, double every, bool *pick);

/* Measures the models of o->dir that are not yet measured, prints the
 * table of every model's figures against its compute to o->log, writes
 * o->csv and DIR/report.html. 0 (also when stopped), or -1 with a message:
 * no run in the folder, no models, no GNU Go for a Go run, a model that
 * cannot be loaded. */
int harness_eval(const harness_options *o, char *err, size_t errlen);

typedef struct harness_compare_options {
	const char *runs[HARNESS_MAX_RUNS]; /* "DIR" or "LABEL=DIR" */
	int n_runs;                /* entries */
	int at[HARNESS_MAX_LIST];  /* compute points, minutes */
	int n_at;                  /* entries */
	harness_axis axis;         /* the compute axis */
	const char *part;          /* "all" or a position set's name */
	char csv[4096];            /* "" or a file for the table */
	FILE *out;                 /* the table */
} harness_compare_options;

/* The label of a run given as DIR: its folder's last name without a
 * trailing seed ("c4-fpu-s2" and "c4-fpu-seed2" are "c4-fpu"). */
void harness_label(const char *dir, char *label, size_t len);

/* The runs (already evaluated) side by side: for every method and label,
 * at each point the mean, smallest and largest value over the label's
 * runs that reached it. 0, or -1 with a message. */
int harness_compare(const harness_compare_options *o, char *err, size_t errlen);

#endif
