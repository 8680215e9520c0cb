/* Go rules: captures, ko, superko, suicide, scoring, handicap, undo and
 * the argument checks. Positions are drawn as diagrams, top row first. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/go.h"

/* Boards are large (about 30 KB): tests keep them static. */
static go_board board, copy;

/* Sets up an empty board sized by the diagram's first line ('X' Black,
 * 'O' White, '.' empty; lines top row first, separated by '\n') with
 * go_place_stone. Black is to move. */
static void setup(go_board *b, double komi, const char *diagram)
{
	int size = (int)strcspn(diagram, "\n");
	cr_assert_eq(go_init(b, size, komi), 0, "size %d", size);
	const char *s = diagram;
	for (int y = size - 1; y >= 0; y--) {
		for (int x = 0; x < size; x++, s++) {
			cr_assert(*s == 'X' || *s == 'O' || *s == '.', "bad diagram char '%c'", *s);
			if (*s != '.')
				cr_assert_eq(go_place_stone(b, *s == 'X' ? GO_BLACK : GO_WHITE,
							    y * size + x), 0, "stone at %d,%d", x, y);
		}
		cr_assert(*s == (y ? '\n' : '\0'), "diagram row %d has the wrong length", y);
		s++;
	}
	cr_assert(go_check(b));
	cr_assert_eq(go_to_move(b), GO_BLACK);
}

static int pt(const go_board *b, int x, int y)
{
	return y * b->size + x;
}

/* GTP vertex ("D4", no letter I) to a point. */
static int vtx(int size, const char *v)
{
	int x = v[0] - 'A' - (v[0] > 'I');
	return (atoi(v + 1) - 1) * size + x;
}

static void play_ok(go_board *b, int x, int y)
{
	cr_assert_eq(go_play(b, pt(b, x, y)), 0, "move %d,%d should be legal", x, y);
	cr_assert(go_check(b), "consistent after %d,%d", x, y);
}

static void pass_ok(go_board *b)
{
	cr_assert_eq(go_play(b, go_pass_move(b)), 0);
}

/* Checks the board against a diagram, stone by stone. */
static void expect_board(const go_board *b, const char *diagram)
{
	const char *s = diagram;
	for (int y = b->size - 1; y >= 0; y--, s++)
		for (int x = 0; x < b->size; x++, s++) {
			int want = *s == 'X' ? GO_BLACK : *s == 'O' ? GO_WHITE : GO_EMPTY;
			cr_assert_eq(go_color_at(b, x, y), want, "at %d,%d", x, y);
		}
}

/* ---- captures ------------------------------------------------------------ */

Test(go, capture_single_stone)
{
	setup(&board, 7.5,
	      ".....\n"
	      "..X..\n"
	      ".XO..\n"
	      "..X..\n"
	      ".....");
	cr_assert_eq(go_liberties_at(&board, 2, 2), 1);
	cr_assert_eq(go_liberties_at(&board, 1, 2), 3);
	play_ok(&board, 3, 2);
	expect_board(&board,
		     ".....\n"
		     "..X..\n"
		     ".X.X.\n"
		     "..X..\n"
		     ".....");
	cr_assert_eq(go_liberties_at(&board, 2, 2), 0);
	cr_assert_eq(go_liberties_at(&board, 2, 3), 4, "the capture gave a liberty back");
	cr_assert_eq(go_liberties_at(&board, 3, 2), 4);
}

Test(go, capture_group)
{
	setup(&board, 7.5,
	      ".........\n"
	      ".........\n"
	      "...XXX...\n"
	      "..XOOOX..\n"
	      "..XO.....\n"
	      "...X.....\n"
	      ".........\n"
	      ".........\n"
	      ".........");
	/* White's four stones share two liberties. */
	cr_assert_eq(go_liberties_at(&board, 3, 5), 2);
	cr_assert_eq(go_liberties_at(&board, 3, 4), 2);
	play_ok(&board, 4, 4);
	cr_assert_eq(go_liberties_at(&board, 3, 5), 1, "atari");
	pass_ok(&board);
	play_ok(&board, 5, 4); /* the last liberty, F5 */
	for (int x = 3; x <= 5; x++)
		cr_assert_eq(go_color_at(&board, x, 5), GO_EMPTY, "captured at %d,5", x);
	cr_assert_eq(go_color_at(&board, 3, 4), GO_EMPTY);
	/* E5-F5: E4, F4, G5 and the freed D5, E6, F6. */
	cr_assert_eq(go_liberties_at(&board, 4, 4), 6);
	cr_assert_eq(go_liberties_at(&board, 3, 6), 8, "D7-F7 gained D6-F6");
}

Test(go, capture_on_edge_and_in_corner)
{
	setup(&board, 7.5,
	      "OX...\n"
	      ".....\n"
	      ".....\n"
	      ".....\n"
	      ".....");
	/* Corner: A5 has one liberty left, A4. */
	cr_assert_eq(go_liberties_at(&board, 0, 4), 1, "corner stone in atari");
	play_ok(&board, 0, 3);
	cr_assert_eq(go_color_at(&board, 0, 4), GO_EMPTY, "corner capture");
	cr_assert_eq(go_liberties_at(&board, 0, 3), 3);
	cr_assert_eq(go_liberties_at(&board, 1, 4), 3);
	setup(&board, 7.5,
	      ".....\n"
	      ".....\n"
	      ".....\n"
	      ".XOX.\n"
	      ".XOX.");
	/* Edge: the two White stones on C1-C2 have one liberty, C3. */
	cr_assert_eq(go_liberties_at(&board, 2, 0), 1);
	play_ok(&board, 2, 2);
	cr_assert_eq(go_color_at(&board, 2, 0), GO_EMPTY);
	cr_assert_eq(go_color_at(&board, 2, 1), GO_EMPTY);
	cr_assert_eq(go_liberties_at(&board, 1, 1), 5, "B1-B2 now reach C1 and C2");
}

Test(go, corner_capture_of_a1)
{
	setup(&board, 7.5,
	      ".....\n"
	      ".....\n"
	      ".....\n"
	      "X....\n"
	      "O....");
	cr_assert_eq(go_liberties_at(&board, 0, 0), 1);
	play_ok(&board, 1, 0);
	cr_assert_eq(go_color_at(&board, 0, 0), GO_EMPTY);
	cr_assert_eq(go_liberties_at(&board, 1, 0), 3);
	cr_assert_eq(go_liberties_at(&board, 0, 1), 3);
}

Test(go, snapback)
{
	setup(&board, 7.5,
	      ".....\n"
	      ".....\n"
	      ".XXX.\n"
	      "XOOOX\n"
	      "XO..X");
	/* Black throws in at C1: a stone in atari that puts White in atari. */
	play_ok(&board, 2, 0);
	cr_assert_eq(go_liberties_at(&board, 2, 0), 1);
	cr_assert_eq(go_liberties_at(&board, 1, 1), 1);
	/* White takes it... */
	play_ok(&board, 3, 0);
	cr_assert_eq(go_color_at(&board, 2, 0), GO_EMPTY);
	cr_assert_eq(go_liberties_at(&board, 3, 0), 1, "...and is left in atari");
	/* ...and Black takes back five stones: no ko. */
	cr_assert(go_is_legal(&board, pt(&board, 2, 0)));
	play_ok(&board, 2, 0);
	expect_board(&board,
		     ".....\n"
		     ".....\n"
		     ".XXX.\n"
		     "X...X\n"
		     "X.X.X");
}

/* ---- ko ----------------------------------------------------------------- */

Test(go, simple_ko)
{
	setup(&board, 7.5,
	      ".........\n"
	      ".........\n"
	      ".........\n"
	      "....XO...\n"
	      "...XO.O..\n"
	      "....XO...\n"
	      ".........\n"
	      ".........\n"
	      ".........");
	int take = pt(&board, 5, 4), back = pt(&board, 4, 4);
	play_ok(&board, 5, 4); /* Black takes the ko */
	cr_assert_eq(go_color_at(&board, 4, 4), GO_EMPTY);
	cr_assert(!go_is_legal(&board, back), "immediate retake is illegal");
	cr_assert_eq(go_play(&board, back), -1);
	cr_assert(go_check(&board));
	/* A ko threat and its answer change the board: now White may. */
	play_ok(&board, 0, 8);
	play_ok(&board, 1, 8);
	cr_assert(go_is_legal(&board, back));
	play_ok(&board, 4, 4);
	cr_assert_eq(go_color_at(&board, 5, 4), GO_EMPTY, "White took back");
	cr_assert(!go_is_legal(&board, take), "and now Black must wait");
}

Test(go, triple_ko_superko)
{
	/* Three kos. Black can take at C2 and C7, White at G2; after each
	 * side has taken each ko once the whole board repeats. */
	setup(&board, 7.5,
	      ".........\n"
	      ".XO......\n"
	      "XO.O.....\n"
	      ".XO......\n"
	      ".........\n"
	      ".........\n"
	      ".XO...XO.\n"
	      "XO.O.X.XO\n"
	      ".XO...XO.");
	uint64_t start = go_hash_recompute(&board);
	play_ok(&board, 2, 1); /* B takes ko 1 */
	play_ok(&board, 6, 1); /* W takes ko 2 */
	play_ok(&board, 2, 6); /* B takes ko 3 */
	play_ok(&board, 1, 1); /* W retakes ko 1 */
	play_ok(&board, 7, 1); /* B retakes ko 2 */
	int closing = pt(&board, 1, 6);
	/* W retaking ko 3 would bring back the starting position. It is not
	 * a simple-ko violation, nor suicide, yet positional superko forbids
	 * it. */
	cr_assert_eq(go_color_at(&board, 1, 6), GO_EMPTY);
	cr_assert_neq(board.ko_point, (6 + 1) * GO_STRIDE + 1 + 1, "no simple ko at B7");
	cr_assert_eq(go_liberties_at(&board, 2, 6), 1, "the Black stone is in atari");
	cr_assert(!go_is_legal(&board, closing));
	cr_assert_eq(go_play(&board, closing), -1);
	int moves[82];
	int n = go_legal_moves(&board, moves);
	for (int i = 0; i < n; i++)
		cr_assert_neq(moves[i], closing);
	cr_assert(go_is_legal(&board, go_pass_move(&board)));
	/* Only the history forbids it: with the history forgotten it is
	 * legal, and it does recreate the start. */
	copy = board;
	copy.n_history = 0;
	cr_assert(go_is_legal(&copy, closing));
	cr_assert_eq(go_play(&copy, closing), 0);
	cr_assert_eq(copy.hash, start);
	cr_assert(go_check(&copy));
}

Test(go, superko_counts_positions_after_setup)
{
	/* A ko set up with Black's F5 in atari. White takes it; Black's
	 * retake would bring back the position the setup stones made, which
	 * counts as an earlier position. */
	setup(&board, 7.5,
	      ".........\n"
	      ".........\n"
	      ".........\n"
	      "....XO...\n"
	      "...X.XO..\n"
	      "....XO...\n"
	      ".........\n"
	      ".........\n"
	      ".........");
	uint64_t start = board.hash;
	cr_assert_eq(go_play_color(&board, GO_WHITE, pt(&board, 4, 4)), 0);
	cr_assert_eq(go_color_at(&board, 5, 4), GO_EMPTY);
	cr_assert(!go_is_legal(&board, pt(&board, 5, 4)));
	copy = board;
	copy.n_history = 0;
	cr_assert_eq(go_play(&copy, pt(&copy, 5, 4)), 0);
	cr_assert_eq(copy.hash, start, "the retake is the setup position");
}

/* ---- suicide ---------------------------------------------------------- */

Test(go, suicide_single_stone)
{
	setup(&board, 7.5,
	      ".....\n"
	      "..O..\n"
	      ".O.O.\n"
	      "..O..\n"
	      ".....");
	cr_assert(!go_is_legal(&board, pt(&board, 2, 2)));
	cr_assert_eq(go_play(&board, pt(&board, 2, 2)), -1);
	cr_assert_eq(go_color_at(&board, 2, 2), GO_EMPTY);
	cr_assert_eq(go_to_move(&board), GO_BLACK, "a refused move changes nothing");
	cr_assert_eq(board.n_history, 4);
	/* In the corner too. */
	setup(&board, 7.5,
	      ".....\n"
	      ".....\n"
	      ".....\n"
	      "O....\n"
	      ".O...");
	cr_assert(!go_is_legal(&board, pt(&board, 0, 0)));
}

Test(go, suicide_multi_stone)
{
	setup(&board, 7.5,
	      ".....\n"
	      "OOOO.\n"
	      "XXXO.\n"
	      "..XO.\n"
	      "XXXO.");
	/* Black's group has two liberties, A2 and B2; filling one is fine,
	 * filling the second would kill the whole group. */
	cr_assert_eq(go_liberties_at(&board, 0, 2), 2);
	play_ok(&board, 0, 1);
	pass_ok(&board);
	cr_assert(!go_is_legal(&board, pt(&board, 1, 1)), "multi-stone suicide");
	cr_assert_eq(go_play(&board, pt(&board, 1, 1)), -1);
	cr_assert(go_check(&board));
}

Test(go, suicide_looking_move_that_captures)
{
	setup(&board, 7.5,
	      ".....\n"
	      ".XO..\n"
	      "XO.O.\n"
	      ".XO..\n"
	      ".....");
	/* C3 is surrounded by White, but White's B3 has only that liberty. */
	cr_assert(go_is_legal(&board, pt(&board, 2, 2)));
	play_ok(&board, 2, 2);
	cr_assert_eq(go_color_at(&board, 1, 2), GO_EMPTY);
	cr_assert_eq(go_liberties_at(&board, 2, 2), 1);
	/* The capturing stone may be in atari: that is a ko, not suicide. */
	cr_assert(!go_is_legal(&board, pt(&board, 1, 2)));
}

Test(go, eye_filling)
{
	setup(&board, 7.5,
	      ".X.X.\n"
	      "XXXXX\n"
	      "OOOOO\n"
	      ".....\n"
	      ".....");
	/* White may not play into either of Black's eyes. */
	pass_ok(&board);
	cr_assert(!go_is_legal(&board, pt(&board, 0, 4)));
	cr_assert(!go_is_legal(&board, pt(&board, 2, 4)));
	cr_assert(!go_is_legal(&board, pt(&board, 4, 4)));
	pass_ok(&board);
	cr_assert(go_is_over(&board));
	/* Black may fill its own eyes while another remains... */
	setup(&board, 7.5,
	      ".X.X.\n"
	      "XXXXX\n"
	      "OOOOO\n"
	      ".....\n"
	      ".....");
	play_ok(&board, 0, 4);
	pass_ok(&board);
	play_ok(&board, 2, 4);
	pass_ok(&board);
	/* ...but not the last one. */
	cr_assert(!go_is_legal(&board, pt(&board, 4, 4)));
	/* And now White can capture everything in the last eye. */
	play_ok(&board, 0, 0);
	play_ok(&board, 4, 4);
	cr_assert_eq(go_color_at(&board, 1, 3), GO_EMPTY);
	cr_assert_eq(go_color_at(&board, 2, 4), GO_EMPTY);
	cr_assert(go_check(&board));
}

/* ---- scoring ------------------------------------------------------------ */

Test(go, score_5x5)
{
	setup(&board, 0.5,
	      ".XO..\n"
	      ".XO..\n"
	      ".XO..\n"
	      ".XO..\n"
	      ".XO..");
	/* Black 5 + 5, White 5 + 10. */
	cr_assert_float_eq(go_score(&board), 10 - 15 - 0.5, 1e-9);
	cr_assert_eq(go_result(&board), -1);
	setup(&board, 0,
	      ".X.O.\n"
	      ".X.O.\n"
	      ".X.O.\n"
	      ".X.O.\n"
	      ".X.O.");
	/* The middle column touches both: dame. */
	cr_assert_float_eq(go_score(&board), 0, 1e-9);
	cr_assert_eq(go_result(&board), 0, "a draw with no komi");
	cr_assert_eq(go_set_komi(&board, -2.5), 0);
	cr_assert_float_eq(go_score(&board), 2.5, 1e-9);
	cr_assert_eq(go_result(&board), 1);
	int8_t owner[25];
	go_area(&board, owner);
	cr_assert_eq(owner[pt(&board, 0, 3)], GO_BLACK);
	cr_assert_eq(owner[pt(&board, 2, 3)], GO_EMPTY);
	cr_assert_eq(owner[pt(&board, 4, 0)], GO_WHITE);
	cr_assert_eq(owner[pt(&board, 3, 0)], GO_WHITE);
}

Test(go, score_9x9)
{
	setup(&board, 7.5,
	      ".X.X.O.O.\n"
	      "XXXXOOOOO\n"
	      "XXXXO....\n"
	      "....O....\n"
	      "....O....\n"
	      "XXXX.OOOO\n"
	      "...XO....\n"
	      "...XO....\n"
	      "...XO....");
	/* Black: 17 stones, A9 and C9, the 9 points at the bottom left: 28.
	 * White: 17 stones, G9 and J9, 12 on the right, 12 at the bottom
	 * right: 43. Dame: E9, the 8 points of rows 5-6 at the left (they
	 * touch White's E5/E6), and E4. */
	int8_t owner[81];
	go_area(&board, owner);
	int count[3] = { 0 };
	for (int i = 0; i < 81; i++)
		count[owner[i] + 1]++;
	cr_assert_eq(count[GO_BLACK + 1], 28);
	cr_assert_eq(count[GO_WHITE + 1], 43);
	cr_assert_eq(count[GO_EMPTY + 1], 10);
	cr_assert_eq(owner[pt(&board, 4, 8)], GO_EMPTY);
	cr_assert_eq(owner[pt(&board, 4, 3)], GO_EMPTY);
	cr_assert_eq(owner[pt(&board, 0, 4)], GO_EMPTY);
	cr_assert_eq(owner[pt(&board, 2, 8)], GO_BLACK);
	cr_assert_eq(owner[pt(&board, 8, 8)], GO_WHITE);
	cr_assert_float_eq(go_score(&board), 28 - 43 - 7.5, 1e-9);
	cr_assert_eq(go_result(&board), -1);
}

Test(go, score_19x19)
{
	char diagram[20 * 19 + 1], *s = diagram;
	for (int y = 18; y >= 0; y--) {
		for (int x = 0; x < 19; x++)
			*s++ = x == 9 ? 'X' : x == 10 ? 'O' : '.';
		*s++ = y ? '\n' : '\0';
	}
	setup(&board, 7.5, diagram);
	/* Black 19 + 171, White 19 + 152. */
	cr_assert_float_eq(go_score(&board), 190 - 171 - 7.5, 1e-9);
	cr_assert_eq(go_result(&board), 1);
	/* A gap in the Black wall lets the left side reach White: under area
	 * rules the whole left side becomes neutral. */
	diagram[(18 - 9) * 20 + 9] = '.';
	setup(&board, 7.5, diagram);
	cr_assert_float_eq(go_score(&board), 18 - 171 - 7.5, 1e-9);
	/* The empty board: nothing reaches anything. */
	cr_assert_eq(go_init(&board, 19, -3.5), 0);
	cr_assert_float_eq(go_score(&board), 3.5, 1e-9);
}

/* ---- end of game ---------------------------------------------------------- */

Test(go, resignation)
{
	cr_assert_eq(go_init(&board, 9, 7.5), 0);
	play_ok(&board, 4, 4);
	cr_assert(!go_is_over(&board));
	go_resign(&board, GO_BLACK);
	cr_assert(go_is_over(&board));
	cr_assert_eq(go_result(&board), -1, "Black resigned: White wins");
	cr_assert(!go_is_legal(&board, go_pass_move(&board)));
	int moves[82];
	cr_assert_eq(go_legal_moves(&board, moves), 0);
	cr_assert_eq(go_init(&board, 9, 7.5), 0);
	go_resign(&board, GO_WHITE);
	cr_assert_eq(go_result(&board), 1, "resignation beats the score");
}

Test(go, two_passes_end_the_game)
{
	cr_assert_eq(go_init(&board, 9, 7.5), 0);
	pass_ok(&board);
	cr_assert(!go_is_over(&board));
	play_ok(&board, 2, 2);
	pass_ok(&board);
	cr_assert(!go_is_over(&board), "the passes were not consecutive");
	cr_assert_eq(board.passes, 1);
	pass_ok(&board);
	cr_assert(go_is_over(&board));
	cr_assert_eq(board.n_moves, 4);
	cr_assert_eq(go_result(&board), -1, "White's lone stone owns the board");
	int moves[82];
	cr_assert_eq(go_legal_moves(&board, moves), 0);
}

Test(go, move_limit_ends_the_game)
{
	/* Random 5x5 play: whatever else happens, the game is over by move
	 * 75, and not because of two passes alone. */
	cr_assert_eq(go_init(&board, 5, 0), 0);
	int moves[26];
	int n = 0;
	for (int i = 0; i < 3 * 25 && !go_is_over(&board); i++) {
		n = go_legal_moves(&board, moves);
		cr_assert_gt(n, 0);
		/* Pass only when nothing else is legal. */
		cr_assert_eq(go_play(&board, moves[n > 1 ? (i * 7) % (n - 1) : 0]), 0);
	}
	cr_assert(go_is_over(&board));
	cr_assert(board.n_moves <= 75);
	/* The limit on its own: one move short, then reached. */
	cr_assert_eq(go_init(&board, 5, 0), 0);
	board.n_moves = 3 * 25 - 1;
	cr_assert(!go_is_over(&board));
	play_ok(&board, 2, 2);
	cr_assert(go_is_over(&board));
	cr_assert_eq(go_legal_moves(&board, moves), 0);
	cr_assert_eq(board.passes, 0);
}

/* ---- handicap and setup ------------------------------------------------------- */

static void expect_points(int size, int n, const char *const *want)
{
	int got[9];
	cr_assert_eq(go_fixed_handicap_points(size, n, got), n, "%d stones on %d", n, size);
	for (int i = 0; i < n; i++)
		cr_assert_eq(got[i], vtx(size, want[i]), "%dx%d, %d stones: #%d should be %s",
			     size, size, n, i, want[i]);
}

Test(go, fixed_handicap_19x19)
{
	const char *t[] = { "D4", "Q16", "D16", "Q4", "D10", "Q10", "K4", "K16", "K10" };
	expect_points(19, 2, (const char *[]){ "D4", "Q16" });
	expect_points(19, 3, (const char *[]){ "D4", "Q16", "D16" });
	expect_points(19, 4, (const char *[]){ "D4", "Q16", "D16", "Q4" });
	expect_points(19, 5, (const char *[]){ "D4", "Q16", "D16", "Q4", "K10" });
	expect_points(19, 6, t);
	expect_points(19, 7, (const char *[]){ "D4", "Q16", "D16", "Q4", "D10", "Q10", "K10" });
	expect_points(19, 8, t);
	expect_points(19, 9, t);
}

Test(go, fixed_handicap_9x9_and_13x13)
{
	expect_points(9, 2, (const char *[]){ "C3", "G7" });
	expect_points(9, 4, (const char *[]){ "C3", "G7", "C7", "G3" });
	expect_points(9, 9, (const char *[]){ "C3", "G7", "C7", "G3", "C5", "G5", "E3", "E7", "E5" });
	expect_points(13, 3, (const char *[]){ "D4", "K10", "D10" });
	expect_points(13, 5, (const char *[]){ "D4", "K10", "D10", "K4", "G7" });
	expect_points(13, 9, (const char *[]){ "D4", "K10", "D10", "K4", "D7", "K7", "G4", "G10", "G7" });
	expect_points(7, 4, (const char *[]){ "C3", "E5", "C5", "E3" });
}

Test(go, fixed_handicap_refused)
{
	int p[9];
	cr_assert_eq(go_fixed_handicap_points(5, 2, p), -1, "5x5 has none");
	cr_assert_eq(go_fixed_handicap_points(6, 2, p), -1);
	cr_assert_eq(go_fixed_handicap_points(19, 10, p), -1, "at most nine");
	cr_assert_eq(go_fixed_handicap_points(19, 1, p), -1);
	cr_assert_eq(go_fixed_handicap_points(9, 10, p), -1);
	cr_assert_eq(go_fixed_handicap_points(7, 5, p), -1, "7x7 takes four");
	cr_assert_eq(go_fixed_handicap_points(10, 5, p), -1, "even sizes take four");
	cr_assert_eq(go_fixed_handicap_points(10, 4, p), 4);
	cr_assert_eq(go_fixed_handicap_points(11, 9, p), 9);
}

Test(go, set_handicap)
{
	int p[9];
	cr_assert_eq(go_init(&board, 19, 0.5), 0);
	cr_assert_eq(go_fixed_handicap_points(19, 4, p), 4);
	cr_assert_eq(go_set_handicap(&board, p, 4), 0);
	cr_assert_eq(go_to_move(&board), GO_WHITE);
	cr_assert_eq(go_color_at(&board, 3, 3), GO_BLACK);
	cr_assert_eq(go_color_at(&board, 15, 15), GO_BLACK);
	cr_assert_eq(board.n_moves, 0);
	cr_assert_eq(board.n_history, 4);
	cr_assert(board.history[0].setup);
	cr_assert(go_check(&board));
	cr_assert_eq(go_set_handicap(&board, p, 2), -1, "the board is not empty");
	/* Free placement; duplicates and bad points are refused whole. */
	cr_assert_eq(go_init(&board, 9, 0.5), 0);
	int bad[3] = { 0, 1, 0 };
	cr_assert_eq(go_set_handicap(&board, bad, 3), -1);
	int off[2] = { 0, 81 };
	cr_assert_eq(go_set_handicap(&board, off, 2), -1);
	cr_assert_eq(board.n_history, 0);
	cr_assert_eq(go_color_at(&board, 0, 0), GO_EMPTY);
	int free3[3] = { 10, 40, 70 };
	cr_assert_eq(go_set_handicap(&board, free3, 3), 0);
	cr_assert_eq(go_color_at(&board, 4, 4), GO_BLACK);
	cr_assert_float_eq(go_score(&board), 81 - 0.5, 1e-9);
	/* White's first move after the handicap, then undo: White again. */
	play_ok(&board, 0, 0);
	cr_assert(go_undo(&board));
	cr_assert_eq(go_to_move(&board), GO_WHITE);
	cr_assert_eq(go_color_at(&board, 0, 0), GO_EMPTY);
	cr_assert_eq(go_color_at(&board, 4, 4), GO_BLACK);
}

Test(go, place_stone)
{
	cr_assert_eq(go_init(&board, 9, 7.5), 0);
	cr_assert_eq(go_place_stone(&board, GO_WHITE, pt(&board, 4, 4)), 0);
	cr_assert_eq(go_color_at(&board, 4, 4), GO_WHITE);
	cr_assert_eq(go_to_move(&board), GO_BLACK, "no side change");
	cr_assert_eq(board.n_moves, 0);
	cr_assert_eq(board.n_history, 1);
	cr_assert(board.history[0].setup);
	cr_assert_eq(go_color_at_past(&board, 0, 4, 4), GO_WHITE, "the history planes see it");
	cr_assert_eq(go_place_stone(&board, GO_BLACK, pt(&board, 4, 4)), -1, "occupied");
	cr_assert_eq(go_place_stone(&board, GO_BLACK, 81), -1, "pass is no point");
	cr_assert_eq(go_place_stone(&board, 3, 0), -1, "no such colour");
	/* No captures for setup stones: one that would leave a group without
	 * liberties is refused. */
	setup(&board, 7.5,
	      ".....\n"
	      ".....\n"
	      ".....\n"
	      "O....\n"
	      ".O...");
	cr_assert_eq(go_place_stone(&board, GO_BLACK, 0), -1);
	cr_assert_eq(go_place_stone(&board, GO_WHITE, 0), 0);
	cr_assert_eq(go_liberties_at(&board, 0, 0), 3, "A3, B2, C1");
	cr_assert(go_check(&board));
}

/* ---- undo and the history ------------------------------------------------------ */

Test(go, undo_one_move)
{
	setup(&board, 7.5,
	      ".....\n"
	      "..X..\n"
	      ".XO..\n"
	      "..X..\n"
	      ".....");
	copy = board;
	play_ok(&board, 3, 2); /* captures C3 */
	cr_assert(go_undo(&board));
	cr_assert_eq(go_color_at(&board, 2, 2), GO_WHITE, "the captured stone is back");
	cr_assert_eq(go_liberties_at(&board, 2, 2), 1);
	cr_assert_eq(board.n_history, copy.n_history);
	cr_assert_eq(board.n_moves, 0);
	cr_assert_eq(board.hash, copy.hash);
	cr_assert_eq(go_hash(&board), go_hash(&copy));
	cr_assert_eq(board.to_move, copy.to_move);
	cr_assert_eq(memcmp(board.cell, copy.cell, sizeof(board.cell)), 0);
	cr_assert(go_check(&board));
}

Test(go, undo_restores_a_capture_and_the_ko)
{
	setup(&board, 7.5,
	      ".........\n"
	      ".........\n"
	      ".........\n"
	      "....XO...\n"
	      "...XO.O..\n"
	      "....XO...\n"
	      ".........\n"
	      ".........\n"
	      ".........");
	copy = board;
	play_ok(&board, 5, 4); /* takes the ko */
	cr_assert(!go_is_legal(&board, pt(&board, 4, 4)));
	cr_assert(go_undo(&board));
	cr_assert_eq(go_color_at(&board, 4, 4), GO_WHITE, "the captured stone is back");
	cr_assert_eq(board.hash, copy.hash);
	cr_assert_eq(memcmp(board.cell, copy.cell, sizeof(board.cell)), 0);
	cr_assert_eq(board.ko_point, copy.ko_point);
	cr_assert_eq(go_to_move(&board), GO_BLACK);
}

Test(go, undo_back_to_empty)
{
	cr_assert_eq(go_init(&board, 9, 7.5), 0);
	cr_assert(!go_undo(&board), "nothing to undo");
	cr_assert_eq(go_place_stone(&board, GO_BLACK, 40), 0);
	play_ok(&board, 2, 2);
	pass_ok(&board);
	cr_assert_eq(go_play_color(&board, GO_WHITE, pt(&board, 6, 6)), 0);
	go_resign(&board, GO_BLACK);
	for (int i = 0; i < 4; i++)
		cr_assert(go_undo(&board), "undo %d", i);
	cr_assert(!go_undo(&board));
	cr_assert_eq(board.hash, 0);
	cr_assert_eq(board.n_history, 0);
	cr_assert_eq(board.n_moves, 0);
	cr_assert_eq(board.resigned, -1);
	cr_assert_eq(go_to_move(&board), GO_BLACK);
	for (int y = 0; y < 9; y++)
		for (int x = 0; x < 9; x++)
			cr_assert_eq(go_color_at(&board, x, y), GO_EMPTY);
	cr_assert_float_eq(board.komi, 7.5, 0);
	cr_assert(go_check(&board));
}

Test(go, play_color_out_of_turn)
{
	cr_assert_eq(go_init(&board, 9, 7.5), 0);
	cr_assert_eq(go_play_color(&board, GO_WHITE, 40), 0);
	cr_assert_eq(go_color_at(&board, 4, 4), GO_WHITE);
	cr_assert_eq(go_to_move(&board), GO_BLACK);
	cr_assert_eq(go_play_color(&board, GO_WHITE, 41), 0);
	cr_assert_eq(go_to_move(&board), GO_BLACK);
	cr_assert_eq(go_play_color(&board, GO_BLACK, 40), -1, "occupied");
	cr_assert_eq(go_play_color(&board, 2, 0), -1, "no such colour");
	cr_assert_eq(go_to_move(&board), GO_BLACK, "a refused move changes nothing");
	cr_assert(go_undo(&board));
	cr_assert_eq(go_to_move(&board), GO_BLACK, "as before the move");
	/* After a handicap White is to move; Black out of turn, then undo:
	 * White to move again. */
	int p[2];
	cr_assert_eq(go_init(&board, 9, 0.5), 0);
	cr_assert_eq(go_fixed_handicap_points(9, 2, p), 2);
	cr_assert_eq(go_set_handicap(&board, p, 2), 0);
	cr_assert_eq(go_play_color(&board, GO_BLACK, 0), 0);
	cr_assert_eq(go_to_move(&board), GO_WHITE);
	cr_assert_eq(go_play_color(&board, GO_BLACK, 1), 0);
	cr_assert(go_undo(&board));
	cr_assert(go_undo(&board));
	cr_assert_eq(go_to_move(&board), GO_WHITE);
	cr_assert_eq(go_color_at(&board, 0, 0), GO_EMPTY);
	cr_assert_eq(go_color_at(&board, 2, 2), GO_BLACK);
}

Test(go, past_positions)
{
	/* Black fills the bottom row, White the top; move i is on column
	 * i / 2. */
	cr_assert_eq(go_init(&board, 5, 7.5), 0);
	cr_assert_eq(go_color_at_past(&board, 1, 0, 0), GO_EMPTY);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(go_play(&board, pt(&board, i / 2, i % 2 ? 4 : 0)), 0);
	for (int k = 0; k < GO_PAST_POSITIONS; k++)
		for (int i = 0; i < 10; i++) {
			/* Move i + 1 is there from k = 0 up to k = 9 - i. */
			int want = k <= 9 - i ? i % 2 : GO_EMPTY;
			cr_assert_eq(go_color_at_past(&board, k, i / 2, i % 2 ? 4 : 0), want,
				     "move %d, %d moves ago", i + 1, k);
		}
	cr_assert_eq(go_color_at_past(&board, GO_PAST_POSITIONS, 0, 0), GO_EMPTY);
	pass_ok(&board);
	cr_assert_eq(go_color_at_past(&board, 0, 4, 4), GO_WHITE);
	cr_assert_eq(go_color_at_past(&board, 1, 4, 4), GO_WHITE, "a pass is a position too");
	cr_assert_eq(go_color_at_past(&board, 2, 4, 4), GO_EMPTY);
	cr_assert(go_undo(&board));
	cr_assert(go_undo(&board));
	/* Nine moves now: Black's E1 is the newest. */
	cr_assert_eq(go_color_at_past(&board, 0, 4, 4), GO_EMPTY);
	cr_assert_eq(go_color_at_past(&board, 0, 4, 0), GO_BLACK);
	cr_assert_eq(go_color_at_past(&board, 1, 4, 0), GO_EMPTY);
	cr_assert_eq(go_color_at_past(&board, 1, 3, 4), GO_WHITE);
	cr_assert_eq(go_color_at_past(&board, 2, 3, 4), GO_EMPTY);
}

Test(go, legal_moves_and_hash)
{
	cr_assert_eq(go_init(&board, 5, 7.5), 0);
	int moves[26];
	cr_assert_eq(go_legal_moves(&board, moves), 26);
	for (int i = 0; i < 26; i++)
		cr_assert_eq(moves[i], i, "increasing, pass last");
	uint64_t h0 = go_hash(&board);
	pass_ok(&board);
	cr_assert_neq(go_hash(&board), h0, "side to move is in go_hash");
	cr_assert_eq(board.hash, 0, "but not in the stone hash");
	cr_assert(!go_is_legal(&board, -1));
	cr_assert(!go_is_legal(&board, 26));
	cr_assert_eq(go_play(&board, 26), -1);
}

Test(go, check_detects_corruption)
{
	cr_assert_eq(go_init(&board, 9, 7.5), 0);
	play_ok(&board, 4, 4);
	play_ok(&board, 4, 5);
	cr_assert(go_check(&board));
	copy = board;
	copy.libs[copy.group[(5 + 1) * GO_STRIDE + 5]]++;
	cr_assert(!go_check(&copy), "a wrong liberty count");
	copy = board;
	copy.hash ^= 1;
	cr_assert(!go_check(&copy), "a wrong hash");
	copy = board;
	copy.cell[(1 + 1) * GO_STRIDE + 1] = GO_BLACK;
	cr_assert(!go_check(&copy), "a stone outside any group");
}

/* ---- argument checks ----------------------------------------------------------- */

Test(go, komi_validation)
{
	cr_assert_eq(go_init(&board, 9, 7.3), -1);
	cr_assert_eq(go_init(&board, 9, -5.5), 0);
	cr_assert_float_eq(board.komi, -5.5, 0);
	cr_assert_eq(go_set_komi(&board, 7.3), -1);
	cr_assert_float_eq(board.komi, -5.5, 0, "unchanged after a refusal");
	cr_assert_eq(go_set_komi(&board, 0), 0);
	cr_assert_eq(go_set_komi(&board, 6.5), 0);
	cr_assert_eq(go_set_komi(&board, NAN), -1, "NaN");
	cr_assert_eq(go_set_komi(&board, 1e300), -1);
}

Test(go, size_validation)
{
	cr_assert_eq(go_init(&board, 4, 7.5), -1);
	cr_assert_eq(go_init(&board, 20, 7.5), -1);
	cr_assert_eq(go_init(&board, 5, 7.5), 0);
	cr_assert_eq(go_pass_move(&board), 25);
	cr_assert_eq(go_init(&board, 19, 7.5), 0);
	cr_assert_eq(go_pass_move(&board), 361);
	cr_assert(go_check(&board));
}
