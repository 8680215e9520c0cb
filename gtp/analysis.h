/* analysis.h: KataGo's JSON analysis engine (docs/Analysis_Engine.md of
 * KataGo), the protocol KaTrain and analysis tools drive: one JSON query
 * per input line, asking for one or more turns of a game to be analysed;
 * one JSON line per analysed turn, as each finishes, in any order.
 *
 * Every query's turns go into one queue, ordered by priority (higher
 * first, then by arrival). A pool of analysis threads takes turns from it,
 * each searching one position at a time with its own search tree; all of
 * them post their leaves to ONE shared evaluator (search/eval.h), so that
 * the many positions of a game sent at once fill the network's batches.
 * Special actions (terminate, terminate_all, clear_cache, query_version,
 * query_models) are answered at once by the reading thread.
 *
 * Bad input never stops the engine: a malformed line, a wrong field, an
 * illegal move each get one error line worded as KataGo words it
 * ({"error":..} or {"id":..,"field":..,"error":..}); fields sente does not
 * use get a warning ({"id":..,"field":..,"warning":..}) and the query goes
 * on. */
#ifndef SENTE_GTP_ANALYSIS_H
#define SENTE_GTP_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nn/backend.h"
#include "search/eval.h"

typedef struct analysis_options {
	const char *weights;   /* model file (.sente or Leela Zero); NULL: the game's
				* cheap prior and a neutral value, any Go size 5..19 */
	int threads;           /* analysis threads: positions searched at once */
	int search_threads;    /* search threads per position */
	int max_visits;        /* a query's maxVisits when it gives none */
	int batch;             /* largest network batch */
	nn_backend_options nn; /* backend, precision, compute threads */
	size_t cache_bytes;    /* NN cache, shared by every position */
	size_t tree_bytes;     /* search tree memory of each analysis thread */
	int pv_len;            /* a query's analysisPVLen when it gives none */
	int score_playouts;    /* random playouts behind a position's score and
				* ownership estimate; each move's uses a quarter
				* (at least 1); 0: no score or ownership fields */
	uint64_t seed;         /* search and evaluator seed */
	bool quiet;            /* nothing on stderr */
} analysis_options;

/* Figures since the engine started. */
typedef struct analysis_stats {
	uint64_t queries;    /* analysis queries accepted (actions not counted) */
	uint64_t turns;      /* turns answered, terminated ones included */
	uint64_t errors;     /* error lines written */
	uint64_t warnings;   /* warning lines written */
	eval_stats eval;     /* the shared evaluator's: evals, batches, cache hits */
} analysis_stats;

typedef struct analysis_engine analysis_engine;

/* 8 analysis threads of 1 search thread, 500 visits, batch 32, 64 MB
 * cache, 128 MB of tree per thread, PV of 15 moves after the first, 100
 * score playouts. */
analysis_options analysis_options_default(void);

/* An engine writing its answers to `out` (one line each, flushed; the
 * caller keeps `out` open until analysis_engine_free). NULL with a
 * message when the weights do not load or the backend cannot start. */
analysis_engine *analysis_engine_new(const analysis_options *opt, FILE *out, char *err,
				     size_t errlen);
/* Drops what is still queued without answering it, interrupts the
 * searches in progress (their turns are answered with what they found),
 * stops the threads and frees. NULL is fine. */
void analysis_engine_free(analysis_engine *a);

/* Handles one input line (a query or an action; any bytes, any length):
 * checks it, answers errors and warnings, queues its turns. Returns at
 * once; the turns are answered by the analysis threads. */
void analysis_engine_handle(analysis_engine *a, const char *line, size_t len);
/* Waits until every queued turn has been answered. */
void analysis_engine_drain(analysis_engine *a);
/* Reads lines from fd until its end, handling each, then drains (as
 * KataGo does when its input closes). Lines longer than 16 MiB get an
 * error and are skipped. Returns 0, or -1 when reading failed. */
int analysis_engine_run(analysis_engine *a, int fd);

void analysis_engine_get_stats(analysis_engine *a, analysis_stats *out);
/* Which backend runs the network ("none" without one). */
const char *analysis_engine_backend(const analysis_engine *a);
/* The game and board the engine analyses: the network's; Go 19x19 (any
 * size accepted) without one. */
const char *analysis_engine_game(const analysis_engine *a);

#endif
