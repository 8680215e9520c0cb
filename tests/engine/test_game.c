/* The generic game interface: parameters, move text, symmetries, dispatch. */
#include <criterion/criterion.h>
#include <string.h>

#include "engine/game.h"

static game g; /* large: keep off the stack */

static void init_go(int size, double komi)
{
	game_params p = { .kind = GAME_KIND_GO, .size = size, .komi = komi };
	cr_assert_eq(game_init(&g, &p), GAME_OK, "size %d komi %g", size, komi);
}

Test(game, params_are_checked)
{
	game_params p = { .kind = GAME_KIND_GO, .size = 4, .komi = 7.5 };
	cr_assert_eq(game_init(&g, &p), GAME_ERR_PARAMS);
	p.size = 20;
	cr_assert_eq(game_init(&g, &p), GAME_ERR_PARAMS);
	p.size = 9;
	p.komi = 6.25;
	cr_assert_eq(game_init(&g, &p), GAME_ERR_PARAMS, "komi must be a multiple of 0.5");
	p.komi = -3.5;
	cr_assert_eq(game_init(&g, &p), GAME_OK);
	game_kind k;
	cr_assert(game_kind_from_name("Connect4", &k) && k == GAME_KIND_CONNECT4);
	cr_assert(game_kind_from_name("go", &k) && k == GAME_KIND_GO);
	cr_assert(!game_kind_from_name("chess", &k));
}

Test(game, go_move_text_round_trip)
{
	static const int sizes[] = { 5, 9, 13, 19 };
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		init_go(sizes[s], 7.5);
		int n = game_num_actions(&g);
		cr_assert_eq(n, sizes[s] * sizes[s] + 1);
		for (int m = 0; m < n; m++) {
			char buf[8];
			int back = -1;
			game_move_to_text(&g, m, buf);
			cr_assert_eq(game_move_from_text(&g, buf, &back), GAME_OK, "%s", buf);
			cr_assert_eq(back, m, "%s on %dx%d", buf, sizes[s], sizes[s]);
		}
	}
}

Test(game, go_move_text_known_points)
{
	init_go(19, 7.5);
	char buf[8];
	cr_assert_str_eq(game_move_to_text(&g, 0, buf), "A1");
	cr_assert_str_eq(game_move_to_text(&g, 8, buf), "J1", "column I is skipped");
	cr_assert_str_eq(game_move_to_text(&g, 18 * 19 + 18, buf), "T19");
	cr_assert_str_eq(game_move_to_text(&g, 361, buf), "pass");
	int m;
	cr_assert_eq(game_move_from_text(&g, "q16", &m), GAME_OK);
	cr_assert_eq(m, 15 * 19 + 15);
	cr_assert_eq(game_move_from_text(&g, "PASS", &m), GAME_OK);
	cr_assert_eq(m, 361);
	static const char *bad[] = { "I5", "A0", "A20", "U1", "", "A", "5A", "A1x", "Z9", "A-1" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(game_move_from_text(&g, bad[i], &m), GAME_ERR_SYNTAX, "'%s'", bad[i]);
	init_go(9, 7.5);
	cr_assert_eq(game_move_from_text(&g, "K1", &m), GAME_ERR_SYNTAX, "off a 9x9 board");
	cr_assert_eq(game_move_from_text(&g, "J9", &m), GAME_OK);
	cr_assert_eq(m, 8 * 9 + 8);
}

Test(game, go_symmetries_are_a_group)
{
	init_go(9, 7.5);
	int n = 81;
	cr_assert_eq(game_num_symmetries(&g), 8);
	int images[8][81];
	for (int s = 0; s < 8; s++) {
		int seen[81] = { 0 };
		int inv = game_symmetry_inverse(&g, s);
		for (int m = 0; m < n; m++) {
			int t = game_symmetry_move(&g, s, m);
			cr_assert(t >= 0 && t < n);
			seen[t]++;
			images[s][m] = t;
			cr_assert_eq(game_symmetry_move(&g, inv, t), m, "sym %d inverse %d", s, inv);
		}
		for (int m = 0; m < n; m++)
			cr_assert_eq(seen[m], 1, "sym %d is a permutation", s);
		cr_assert_eq(game_symmetry_move(&g, s, 81), 81, "pass is fixed");
		/* the centre is fixed by every symmetry of an odd board */
		cr_assert_eq(game_symmetry_move(&g, s, 40), 40);
	}
	/* all eight are distinct */
	for (int a = 0; a < 8; a++)
		for (int b = a + 1; b < 8; b++)
			cr_assert(memcmp(images[a], images[b], sizeof(images[a])) != 0, "%d == %d", a, b);
	/* corners go to corners */
	for (int s = 0; s < 8; s++) {
		int t = game_symmetry_move(&g, s, 0);
		cr_assert(t == 0 || t == 8 || t == 72 || t == 80);
	}
}

/* Leela Zero's Network::get_symmetry(s): transpose when s & 4, then mirror
 * x when s & 2, mirror y when s & 1. LZ reads the input at point q from the
 * board point get_symmetry(q), so a board point p lands at its inverse:
 * sente's symmetry s must be that inverse for `kata-raw-nn s` to be LZ's
 * `heatmap s`. */
static int lz_get_symmetry(int n, int sym, int move)
{
	int x = move % n, y = move / n;
	if (sym & 4) {
		int t = x;
		x = y;
		y = t;
	}
	if (sym & 2)
		x = n - 1 - x;
	if (sym & 1)
		y = n - 1 - y;
	return y * n + x;
}

/* The table of a symmetry holds game_symmetry_move's image of every
 * action, for every board size, symmetry and Connect Four. */
Test(game, symmetry_tables_agree_with_the_moves)
{
	for (int size = GO_MIN_SIZE; size <= GO_MAX_SIZE + 1; size++) {
		game_params p = game_params_default(GAME_KIND_GO);
		if (size <= GO_MAX_SIZE)
			p.size = size;
		else
			p = game_params_default(GAME_KIND_CONNECT4);
		cr_assert_eq(game_init(&g, &p), GAME_OK);
		for (int s = 0; s < game_num_symmetries(&g); s++) {
			const int16_t *to = game_symmetry_table(&g, s);
			for (int a = 0; a < game_num_actions(&g); a++)
				cr_assert_eq(to[a], game_symmetry_move(&g, s, a), "size %d sym %d action %d",
					     size, s, a);
			/* Go, stated again here: mirror x (s & 2), mirror y
			 * (s & 1), then transpose (s & 4); the pass stays. */
			for (int a = 0; size <= GO_MAX_SIZE && a < size * size; a++) {
				int x = a % size, y = a / size;
				x = s & 2 ? size - 1 - x : x;
				y = s & 1 ? size - 1 - y : y;
				int want = s & 4 ? x * size + y : y * size + x;
				cr_assert_eq(to[a], want, "size %d sym %d point %d", size, s, a);
			}
			if (size <= GO_MAX_SIZE)
				cr_assert_eq(to[size * size], size * size, "the pass");
		}
	}
}

Test(game, go_symmetries_are_numbered_as_leela_zero)
{
	init_go(19, 7.5);
	for (int s = 0; s < 8; s++)
		for (int q = 0; q < 19 * 19; q++)
			cr_assert_eq(game_symmetry_move(&g, s, lz_get_symmetry(19, s, q)), q, "sym %d", s);
	/* Spelled out for a corner-ish point, D3 = (3, 2): 1 mirrors y, 2 mirrors x. */
	int d3 = 2 * 19 + 3;
	cr_assert_eq(game_symmetry_move(&g, 1, d3), 16 * 19 + 3);
	cr_assert_eq(game_symmetry_move(&g, 2, d3), 2 * 19 + 15);
	cr_assert_eq(game_symmetry_move(&g, 4, d3), 3 * 19 + 2);
}

Test(game, connect4_through_interface)
{
	game_params p = game_params_default(GAME_KIND_CONNECT4);
	cr_assert_eq(game_init(&g, &p), GAME_OK);
	cr_assert_eq(game_num_actions(&g), 7);
	cr_assert_eq(game_width(&g), 7);
	cr_assert_eq(game_height(&g), 6);
	cr_assert_eq(game_pass_move(&g), GAME_MOVE_NONE);
	cr_assert_eq(game_num_symmetries(&g), 2);
	cr_assert_eq(game_symmetry_move(&g, 1, 0), 6);
	cr_assert_eq(game_symmetry_move(&g, 1, 3), 3);
	int m;
	cr_assert_eq(game_move_from_text(&g, "4", &m), GAME_OK);
	cr_assert_eq(m, 3);
	cr_assert_eq(game_move_from_text(&g, "8", &m), GAME_ERR_SYNTAX);
	cr_assert_eq(game_move_from_text(&g, "0", &m), GAME_ERR_SYNTAX);
	cr_assert_eq(game_move_from_text(&g, "pass", &m), GAME_ERR_SYNTAX);
	const char *seq = "7141625";
	for (const char *c = seq; *c; c++) {
		cr_assert_eq(game_move_from_text(&g, (char[]){ *c, 0 }, &m), GAME_OK);
		cr_assert_eq(game_play(&g, m), GAME_OK);
	}
	cr_assert(game_is_over(&g));
	cr_assert_eq(game_result(&g), 1);
	cr_assert_eq(game_history_move(&g, 0), 6);
	cr_assert_eq(game_history_move(&g, 6), 4);
	cr_assert_eq(game_history_move(&g, 7), GAME_MOVE_NONE);
	cr_assert_eq(game_play(&g, 0), GAME_ERR_ILLEGAL, "no move after the end");
	cr_assert(game_undo(&g));
	cr_assert(!game_is_over(&g));
	cr_assert_eq(game_cell(&g, 4, 0), -1);
	cr_assert_eq(game_cell(&g, 0, 0), 1, "the second player took column 1 first");
}

Test(game, go_dispatch_and_history)
{
	init_go(9, 7.5);
	int m;
	cr_assert_eq(game_to_move(&g), GAME_BLACK);
	cr_assert_eq(game_move_from_text(&g, "E5", &m), GAME_OK);
	cr_assert_eq(game_play(&g, m), GAME_OK);
	cr_assert_eq(game_to_move(&g), GAME_WHITE);
	cr_assert_eq(game_play(&g, m), GAME_ERR_ILLEGAL, "occupied");
	cr_assert(!game_is_legal(&g, m));
	cr_assert_eq(game_cell(&g, 4, 4), GAME_BLACK);
	cr_assert_eq(game_play(&g, game_pass_move(&g)), GAME_OK);
	cr_assert_eq(game_play(&g, game_pass_move(&g)), GAME_OK);
	cr_assert(game_is_over(&g), "two passes end the game");
	cr_assert_eq(game_move_count(&g), 3);
	cr_assert_eq(game_history_move(&g, 0), m);
	cr_assert_eq(game_history_move(&g, 2), 81);
	/* One black stone owns the whole empty board by area: 81 - 7.5. */
	cr_assert_float_eq(game_score(&g), 81 - 7.5, 1e-9);
	cr_assert_eq(game_result(&g), 1);
	int moves[GAME_MAX_ACTIONS];
	cr_assert_eq(game_legal_moves(&g, moves), 0);
	char buf[4096];
	size_t len = game_print(&g, buf, sizeof(buf));
	cr_assert(len > 0 && strstr(buf, "X") != NULL);
}
