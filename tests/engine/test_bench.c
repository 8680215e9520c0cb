/* The rules' benchmark (engine/bench.h): it runs for the time asked and
 * its figures agree with each other and with the games' bounds. */
#include <criterion/criterion.h>
#include <math.h>

#include "engine/bench.h"
#include "engine/game_desc.h"

Test(board_bench, figures_hold_together)
{
	board_bench g = board_bench_go(9, 0.05, 3);
	cr_assert(g.games >= 64 && g.games % 64 == 0, "%ld games", g.games);
	cr_assert(g.seconds >= 0.05);
	cr_assert_float_eq(g.games_per_s, g.games / g.seconds, 1e-6 * g.games_per_s);
	/* A 9x9 playout fills most of the board's 81 points. */
	cr_assert(g.moves_per_game > 40 && g.moves_per_game < 400, "%f", g.moves_per_game);
	cr_assert_float_eq(g.moves_per_s, g.moves_per_game * g.games_per_s, 1e-6 * g.moves_per_s);

	game_params c4 = game_desc_by_name("connect4")->defaults;
	board_bench c = board_bench_random(&c4, 0.02, 3);
	cr_assert(c.games >= 256 && c.games % 256 == 0, "%ld games", c.games);
	/* Four in a row needs 7 plies at least; the board holds 42. */
	cr_assert(c.moves_per_game >= 7 && c.moves_per_game <= 42, "%f", c.moves_per_game);
	/* The same seed plays the same games. */
	board_bench again = board_bench_random(&c4, 0, 3);
	board_bench once = board_bench_random(&c4, 0, 3);
	cr_assert_eq(again.games, 256);
	cr_assert_float_eq(again.moves_per_game, once.moves_per_game, 1e-12);
}
