/* The arena: a search that sees tactics beats one that does not. */
#include <criterion/criterion.h>

#include "selfplay/arena.h"

Test(arena, more_visits_win_connect4)
{
	/* Same (uniform) evaluator, but A searches 300 visits and B 1: A sees
	 * immediate wins and threats, B plays its first legal column. */
	char err[128];
	evaluator *ev = eval_new(NULL, 0, NN_ENC_C4, NULL, err, sizeof(err));
	cr_assert(ev);
	game_params gp = game_params_default(GAME_KIND_CONNECT4);
	arena_result r;
	cr_assert_eq(arena_play(ev, ev, &gp, 10, 300, 1, 2, 1, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(r.games, 10);
	cr_assert_eq(r.wins + r.losses + r.draws, 10);
	cr_assert(r.wins >= 8, "300 visits against 1: %d wins of 10", r.wins);
	/* And the other way round, from B's seat. */
	cr_assert_eq(arena_play(ev, ev, &gp, 10, 1, 300, 2, 1, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert(r.losses >= 8, "1 visit against 300: %d losses of 10", r.losses);
	eval_free(ev);
}
