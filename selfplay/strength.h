/* strength.h: Connect Four strength against perfect play.
 *
 * The positions in data/connect4/ (Pascal Pons' benchmark sets, labelled
 * with the game-theoretic value of every column) measure the "error rate":
 * the fraction of positions where the agent's move is worse than the best
 * available (win > draw > loss), as AlphaZero.jl reports it. Measured for
 * the network alone (its most probable legal move) and for the search.
 */
#ifndef SENTE_SELFPLAY_STRENGTH_H
#define SENTE_SELFPLAY_STRENGTH_H

#include <signal.h>
#include <stddef.h>

#include "search/eval.h"

#define C4BENCH_MAX_SETS 8

typedef struct c4bench_position {
	char moves[44];    /* columns played, "1".."7", NUL-terminated */
	char classes[7];   /* per column: 'W', 'D', 'L', or '-' when full */
} c4bench_position;

typedef struct c4bench_set {
	char name[32];             /* file name without .tsv, e.g. "begin-hard" */
	int n;                     /* positions */
	c4bench_position *pos;     /* [n] */
} c4bench_set;

typedef struct c4bench {
	int n_sets;                          /* loaded sets */
	c4bench_set set[C4BENCH_MAX_SETS];   /* in a fixed order */
} c4bench;

typedef struct c4bench_result {
	char name[32];  /* the set */
	int n;          /* positions measured */
	int errors;     /* moves worse than the best class */
} c4bench_result;

/* Where the positions are: $SENTE_DATA/connect4, then data/connect4 beside
 * the executable's parent folder (bin/../data), then ./data/connect4.
 * Writes the folder into dir; -1 when none has them. */
int c4bench_find(char *dir, size_t len);
/* Loads every set found in dir. -1 with a message when none loads or a
 * line is malformed. */
int c4bench_load(const char *dir, c4bench *b, char *err, size_t errlen);
void c4bench_free(c4bench *b);

/* Error rates of the network alone (eval_raw, symmetry 0: its most probable
 * legal move), over at most max_per_set positions of each set (0: all).
 * Writes one result per set; returns the number of sets, or -1. Once
 * *stop is set (a signal; stop may be NULL) it returns C4BENCH_CUT_SHORT
 * between positions. */
int c4bench_network(const c4bench *b, evaluator *ev, int max_per_set,
		    const volatile sig_atomic_t *stop, c4bench_result *out);
/* The same for a search of `visits` visits per position (no noise,
 * most-visited move). deadline: a clock_now() time past which it stops
 * between positions and returns C4BENCH_CUT_SHORT (0: none); *stop does
 * the same. */
int c4bench_search(const c4bench *b, evaluator *ev, int visits, int threads, int max_per_set,
		   double deadline, const volatile sig_atomic_t *stop, c4bench_result *out);
#define C4BENCH_CUT_SHORT (-2)

#endif
