/* Connect Four rules: wins in all four directions, the draw, undo. */
#include <criterion/criterion.h>

#include <string.h>

#include "engine/connect4.h"

/* Plays a string of columns "1".."7". */
static void play_cols(c4_board *b, const char *cols)
{
	for (const char *c = cols; *c; c++)
		cr_assert_eq(c4_play(b, *c - '1'), 0, "column %c should be legal", *c);
}

/* Plays all but the last column, checks the game is still open, plays the
 * last and checks that `winner` (+1 first, -1 second) has won. Sequences were
 * found by random play and checked by hand: each wins only in the named
 * direction, on its last move. */
static void expect_win_on_last(const char *cols, int winner)
{
	c4_board b;
	c4_init(&b);
	size_t n = strlen(cols);
	for (size_t i = 0; i + 1 < n; i++) {
		cr_assert_eq(c4_play(&b, cols[i] - '1'), 0, "%s: move %zu", cols, i + 1);
		cr_assert(!c4_is_over(&b), "%s: over too early at move %zu", cols, i + 1);
	}
	cr_assert_eq(c4_play(&b, cols[n - 1] - '1'), 0);
	cr_assert(c4_is_over(&b), "%s: the last move wins", cols);
	cr_assert_eq(c4_result(&b), winner, "%s", cols);
	int moves[7];
	cr_assert_eq(c4_legal_moves(&b, moves), 0, "no move after a win");
}

Test(connect4, vertical_wins)
{
	expect_win_on_last("2323252", 1);
	expect_win_on_last("34245424", -1);
}

Test(connect4, horizontal_wins)
{
	expect_win_on_last("7141625", 1);
	expect_win_on_last("73141235", -1);
}

Test(connect4, diagonal_up_right_wins)
{
	expect_win_on_last("3645654756356", 1);
	expect_win_on_last("77716313531733643675", -1);
}

Test(connect4, diagonal_down_right_wins)
{
	expect_win_on_last("4725536343413", 1);
	expect_win_on_last("2777326425725433", -1);
}

Test(connect4, no_wrap_between_columns)
{
	c4_board b;
	c4_init(&b);
	/* Without the sentinel row, column 1 rows 4-6 and column 2 row 1 would
	 * be four consecutive bits. The first player holds exactly those
	 * (plus column 3 rows 1-2) and must not have won. */
	play_cols(&b, "21313114141");
	cr_assert_eq(c4_cell(&b, 0, 3), 0);
	cr_assert_eq(c4_cell(&b, 0, 4), 0);
	cr_assert_eq(c4_cell(&b, 0, 5), 0);
	cr_assert_eq(c4_cell(&b, 1, 0), 0);
	cr_assert(!c4_is_over(&b));
	cr_assert_eq(c4_result(&b), 0);
}

Test(connect4, full_board_draw)
{
	c4_board b;
	c4_init(&b);
	const char *draw = "442761225377252342545563474175371666631311";
	for (int i = 0; i < 41; i++) {
		cr_assert_eq(c4_play(&b, draw[i] - '1'), 0);
		cr_assert(!c4_is_over(&b));
	}
	cr_assert_eq(c4_play(&b, draw[41] - '1'), 0);
	cr_assert_eq(b.n_moves, 42);
	cr_assert(c4_is_over(&b));
	cr_assert_eq(c4_result(&b), 0, "a full board without four in a row is a draw");
	int moves[7];
	cr_assert_eq(c4_legal_moves(&b, moves), 0);
}

Test(connect4, full_column_illegal_and_undo)
{
	c4_board b;
	c4_init(&b);
	play_cols(&b, "121212"); /* no win: alternate colours in two columns */
	play_cols(&b, "3333");
	play_cols(&b, "33");
	cr_assert(!c4_is_legal(&b, 2));
	cr_assert_eq(c4_play(&b, 2), -1);
	uint64_t h = c4_hash(&b);
	c4_board before = b;
	cr_assert_eq(c4_play(&b, 4), 0);
	cr_assert_neq(c4_hash(&b), h);
	cr_assert(c4_undo(&b));
	cr_assert_eq(c4_hash(&b), h);
	cr_assert_eq(memcmp(b.stones, before.stones, sizeof(b.stones)), 0);
	cr_assert_eq(c4_to_move(&b), c4_to_move(&before));
}

Test(connect4, resign)
{
	c4_board b;
	c4_init(&b);
	play_cols(&b, "4");
	c4_resign(&b, 1);
	cr_assert(c4_is_over(&b));
	cr_assert_eq(c4_result(&b), 1);
	cr_assert(c4_undo(&b));
	cr_assert(!c4_is_over(&b), "undo takes back the resignation");
}
