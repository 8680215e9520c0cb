/* arena.c: games between two evaluators (see arena.h). */
#include "selfplay/arena.h"

#include <stdio.h>
#include <string.h>

#include "search/mcts.h"

int arena_play(evaluator *a, evaluator *b, const game_params *gp, int games, int visits_a,
	       int visits_b, int random_moves, uint64_t seed, arena_result *out, char *err,
	       size_t errlen)
{
	memset(out, 0, sizeof(*out));
	mcts_options o = mcts_options_default();
	o.threads = 1;
	o.gather = 8;
	o.max_memory = (size_t)64 << 20;
	mcts *m[2] = { NULL, NULL };
	int rc = -1;
	for (int p = 0; p < 2; p++) {
		o.seed = seed * 2 + (uint64_t)p + 1;
		o.max_visits = p == 0 ? visits_a : visits_b;
		m[p] = mcts_new(p == 0 ? a : b, &o, err, errlen);
		if (!m[p])
			goto out;
	}
	static _Thread_local game g;
	for (int i = 0; i < games; i++) {
		if (game_init(&g, gp) != GAME_OK) {
			snprintf(err, errlen, "bad game parameters");
			goto out;
		}
		/* Player index of A's colour: A is Black in even games. */
		int a_color = i % 2 == 0 ? GAME_BLACK : GAME_WHITE;
		mcts_clear(m[0]);
		mcts_clear(m[1]);
		while (!game_is_over(&g)) {
			int mover = game_to_move(&g) == a_color ? 0 : 1;
			mcts_set_position(m[mover], &g);
			mcts_search(m[mover]);
			float temp = game_move_count(&g) < random_moves ? 1.0f : 0.0f;
			int mv = mcts_choose_move(m[mover], temp, temp == 0);
			if (mv == GAME_MOVE_NONE || game_play(&g, mv) != GAME_OK) {
				snprintf(err, errlen, "arena: no legal move chosen");
				goto out;
			}
		}
		int r = game_result(&g); /* +1: Black */
		int for_a = a_color == GAME_BLACK ? r : -r;
		out->games++;
		out->wins += for_a > 0;
		out->losses += for_a < 0;
		out->draws += for_a == 0;
	}
	rc = 0;
out:
	mcts_free(m[0]);
	mcts_free(m[1]);
	return rc;
}
