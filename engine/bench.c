#include "engine/bench.h"

#include <stdlib.h>

#include "engine/clock.h"
#include "engine/go.h"
#include "engine/rng.h"

static board_bench finish(long games, long moves, double seconds)
{
	board_bench r = { .games = games, .seconds = seconds };
	r.games_per_s = seconds > 0 ? games / seconds : 0;
	r.moves_per_game = games ? (double)moves / games : 0;
	r.moves_per_s = seconds > 0 ? moves / seconds : 0;
	return r;
}

board_bench board_bench_go(int size, double seconds, uint64_t seed)
{
	/* Large: off the stack. */
	go_board *empty = malloc(sizeof(*empty)), *b = malloc(sizeof(*b));
	if (!empty || !b) {
		free(empty);
		free(b);
		return finish(0, 0, 0);
	}
	go_init(empty, size, 7.5);
	uint64_t rng = seed ? seed : 1;
	long games = 0, moves = 0;
	double t0 = clock_now(), t;
	do {
		for (int i = 0; i < 64; i++) {
			*b = *empty;
			moves += go_playout(b, &rng);
			games++;
		}
		t = clock_now() - t0;
	} while (t < seconds);
	free(empty);
	free(b);
	return finish(games, moves, t);
}

board_bench board_bench_random(const game_params *p, double seconds, uint64_t seed)
{
	game *g = malloc(sizeof(*g));
	if (!g)
		return finish(0, 0, 0);
	int moves[GAME_MAX_ACTIONS];
	uint64_t rng = seed ? seed : 1;
	long games = 0, plies = 0;
	double t0 = clock_now(), t;
	do {
		for (int i = 0; i < 256; i++) {
			if (game_init(g, p) != GAME_OK) {
				free(g);
				return finish(0, 0, 0);
			}
			int n;
			while ((n = game_legal_moves(g, moves)) > 0) {
				game_play(g, moves[rng_next(&rng) % (uint64_t)n]);
				plies++;
			}
			games++;
		}
		t = clock_now() - t0;
	} while (t < seconds);
	free(g);
	return finish(games, plies, t);
}
