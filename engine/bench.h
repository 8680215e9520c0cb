/* bench.h: how fast the rules run, for `sente bench board`: random games
 * from the empty board on one core, measured against the one clock. */
#ifndef SENTE_ENGINE_BENCH_H
#define SENTE_ENGINE_BENCH_H

#include <stdint.h>

#include "engine/game.h"

/* What a board benchmark measured. */
typedef struct board_bench {
	long games;            /* finished */
	double seconds;        /* they took */
	double games_per_s;
	double moves_per_game;
	double moves_per_s;
} board_bench;

/* Go playouts (go_playout: random moves that fill no eye, simple ko) from
 * the empty `size` board, in rounds of 64, for at least `seconds`. */
board_bench board_bench_go(int size, double seconds, uint64_t seed);

/* Uniformly random legal moves to the end, through the generic game
 * interface (any game), in rounds of 256, for at least `seconds`. */
board_bench board_bench_random(const game_params *p, double seconds, uint64_t seed);

#endif
