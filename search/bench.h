/* bench.h: search speed from the empty board, as `sente bench search`
 * measures it (its flags are parsed in cli/bench.c, which prints each
 * result as a JSON line).
 *
 * The backends are opened once for the network (a file, or a random one
 * of blocks x channels), their raw speed measured (forward calls alone at
 * the search's batch, every backend at once, for raw_seconds), then
 * `repeat` searches run as genmove would, each with a fresh evaluator (its
 * cache must not carry over) and a fresh tree. */
#ifndef SENTE_SEARCH_BENCH_H
#define SENTE_SEARCH_BENCH_H

#include <stdint.h>
#include <stdio.h>

#include "engine/game.h"
#include "nn/backend.h"

typedef struct search_bench_options {
	const char *weights;        /* network file (.sente or Leela Zero), or
				     * NULL: a random network */
	int blocks, channels;       /* the random network's shape */
	game_params game;           /* game and Go board; a file's board replaces size */
	int visits;                 /* visits per search */
	int threads;                /* search threads */
	int batch;                  /* largest network batch; each thread gathers
				     * batch/threads leaves per round */
	int repeat;                 /* searches, each from a fresh tree */
	int virtual_loss;           /* losses per descent in flight; < 0: the search's default */
	nn_backend_options backend; /* --backend, --gpus, --precision, threads */
	double raw_seconds;         /* time for the raw speed */
	FILE *log;                  /* the backend line; NULL: none */
} search_bench_options;

/* One search's figures. */
typedef struct search_bench_result {
	int run;                    /* 0, 1, ... of repeat */
	const char *backend;        /* the first backend's name, "cpu" or "cuda" */
	nn_dtype precision;         /* what the backends run */
	int gpus;                   /* CUDA contexts; 0 on the CPU */
	int lanes;                  /* CPU lanes (each running one search
				     * thread's batch); 0 on CUDA */
	game_params game;           /* as searched */
	int blocks, channels;       /* the network's */
	int visits;                 /* root visits after the search */
	uint64_t playouts;          /* descents that reached a leaf */
	double seconds;             /* the search's wall time */
	double playouts_per_s;      /* playouts / seconds */
	uint64_t evals;             /* network evaluations */
	double mean_batch;          /* evaluations per network call */
	uint64_t cache_hits;        /* NN cache hits */
	double raw_evals_per_s;     /* the backends' own speed at the batch */
	double search_to_raw;       /* playouts_per_s / raw_evals_per_s */
} search_bench_result;

/* Called after each search (the result valid during the call). */
typedef void (*search_bench_fn)(void *ctx, const search_bench_result *r);

/* Defaults as `sente bench search` documents them: random 6x64 network,
 * Go 19x19, 3200 visits, 2 threads, batch 16, 2 searches, 1 s of raw
 * speed, the auto backend. */
search_bench_options search_bench_options_default(void);

/* Runs the searches, fn after each. 0, or -1 with a message (a bad
 * weights file, no backend, a search that cannot be made). */
int search_bench_run(const search_bench_options *o, search_bench_fn fn, void *ctx, char *err,
		     size_t errlen);

#endif
