/* arena.h: games between two networks in this process, for measuring
 * progress inside a run (the match command with Elo and SPRT is built on
 * the GTP client and the store elsewhere). Colours alternate; the first
 * moves are drawn at temperature 1 so that the games differ. */
#ifndef SENTE_SELFPLAY_ARENA_H
#define SENTE_SELFPLAY_ARENA_H

#include <stddef.h>

#include "search/eval.h"

typedef struct arena_result {
	int games;  /* played */
	int wins;   /* for the first player (A) */
	int losses; /* for A */
	int draws;  /* neither */
} arena_result;

/* Plays `games` games between evaluators a and b (a is Black in the even
 * games) with visits_a and visits_b visits per move, the first
 * `random_moves` moves at temperature 1. 0, or -1 with a message. */
int arena_play(evaluator *a, evaluator *b, const game_params *gp, int games, int visits_a,
	       int visits_b, int random_moves, uint64_t seed, arena_result *out, char *err,
	       size_t errlen);

#endif
