/* measure.h: a run's strength as it goes, stored as metrics in the run's
 * database: Connect Four error rates against a perfect solver's labels,
 * Go games against the run's first network, and gating matches. Progress
 * lines go to `log` (unless quiet), failures to `log` always; a failed
 * measurement is reported, never fatal. */
#ifndef SENTE_LOOP_MEASURE_H
#define SENTE_LOOP_MEASURE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "data/store.h"
#include "engine/game.h"
#include "engine/progress.h"
#include "nn/backend.h"
#include "nn/net.h"
#include "search/eval.h"
#include "selfplay/strength.h"

/* An evaluator over its own copy of `net` (BN folded) on the CPU, with
 * the evaluator options `eo` and the backend options `bo` (NULL: the
 * defaults, fp32; int8 calibrates at create as self-play's backend does);
 * NULL with a message. The caller frees the evaluator, then *be, then
 * *copy (each may be left NULL on failure). */
evaluator *loop_measure_evaluator(const nn_net *net, const eval_options *eo,
				  const nn_backend_options *bo, nn_net **copy, nn_backend **be,
				  char *err, size_t errlen);

/* Error rates of `net` (training form) on every position of `bench` for
 * the network alone, and, with_search, of an eval_visits search on
 * eval_positions of each set: metrics c4_error_net[/SET] and
 * c4_error_search[/SET] at `step`. The search stops at `deadline` (a
 * clock_now() time; 0: none) and is then not stored; once *stop is set
 * (may be NULL) nothing more is measured. prog (may be NULL)
 * is the caller's progress line on log, cleared before a line is logged.
 * 0 when everything asked for was measured, 1 when the search was cut
 * short, -1 when nothing was (or *stop came first). *net_seconds (may be NULL): how long the
 * network alone took. */
int loop_measure_c4(store *db, const c4bench *bench, const nn_net *net, int eval_visits,
		    int eval_positions, int64_t step, bool with_search, double deadline,
		    const volatile sig_atomic_t *stop, FILE *log, progress *prog, bool quiet,
		    double *net_seconds);

/* Ten games of `net` against the run's first model (id 1) at
 * eval_visits / 4 + 1 visits: metrics NAME_winrate_vs_first and
 * NAME_elo_vs_first (NAME the game's, e.g. go_winrate_vs_first; the Elo
 * difference of the score, clamped at +-ELO_MAX) at `step`. */
void loop_measure_first(store *db, const nn_net *net, const game_params *g, int eval_visits,
			int64_t step, FILE *log, progress *prog, bool quiet);

/* Gating: how a candidate earns self-play. */
typedef struct loop_gate {
	int games;                   /* games of the gating match */
	double threshold;            /* score the candidate needs */
	int visits;                  /* visits per move */
	volatile sig_atomic_t *stop; /* stops the match early; may be NULL */
} loop_gate;

/* Model `cand` plays model `current` (a match stored in the run's
 * database); true when it scores at least the threshold (metric
 * gate_score at `step`). A match that cannot be played fails the gate. */
bool loop_gate_passes(store *db, const game_params *g, const loop_gate *gate, int64_t cand,
		      int64_t current, int64_t step, FILE *log, progress *prog, bool quiet);

#endif
