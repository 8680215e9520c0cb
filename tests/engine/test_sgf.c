/* SGF: reading real-world quirks, refusing malformed input with the byte
 * offset, writing and reading back, replaying a full game. Fixtures live in
 * tests/data/sgf (the test binary runs from the repository root). */
#define _POSIX_C_SOURCE 200809L /* mkstemp, fdopen */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/sgf.h"

static go_board board; /* large: keep off the stack */
static char err[256];

/* SGF letters -> go.h point: "aa" is the top-left corner. */
static int pt(int size, const char *s)
{
	return (size - 1 - (s[1] - 'a')) * size + (s[0] - 'a');
}

static void load(const char *name, sgf_record *r)
{
	char path[256];
	snprintf(path, sizeof(path), "tests/data/sgf/%s", name);
	cr_assert_eq(sgf_load_file(path, r, err, sizeof(err)), 0, "%s: %s", name, err);
}

static void expect_move(const sgf_record *r, int i, int color, const char *where,
			const char *comment)
{
	cr_assert_lt(i, r->n_moves);
	cr_assert_eq(r->moves[i].color, color, "move %d colour", i + 1);
	int p = where ? pt(r->size, where) : r->size * r->size;
	cr_assert_eq(r->moves[i].point, p, "move %d at %d, expected %s (%d)", i + 1,
		     r->moves[i].point, where ? where : "pass", p);
	if (comment)
		cr_assert_str_eq(r->moves[i].comment ? r->moves[i].comment : "(null)", comment,
				 "move %d comment", i + 1);
	else
		cr_assert_null(r->moves[i].comment, "move %d has no comment", i + 1);
}

static void expect_setup(const sgf_record *r, int i, int color, const char *where)
{
	cr_assert_lt(i, r->n_setup);
	cr_assert_eq(r->setup[i].color, color, "setup %d colour", i);
	cr_assert_eq(r->setup[i].point, pt(r->size, where), "setup %d should be %s", i, where);
}

/* The reader must refuse `text` with a message holding `where` and `what`. */
static void expect_error(const char *text, size_t len, const char *where, const char *what)
{
	sgf_record r;
	/* A copy of exactly len bytes, so that ASan catches a read past it. */
	char *copy = malloc(len ? len : 1);
	cr_assert_not_null(copy);
	memcpy(copy, text, len);
	err[0] = '\0';
	int rc = sgf_read(copy, len, &r, err, sizeof(err));
	free(copy);
	cr_assert_neq(rc, 0, "should fail: %s", text);
	cr_assert_eq(r.n_moves, 0);
	cr_assert_null(r.moves);
	cr_assert(strstr(err, where) != NULL, "'%s' should name '%s'", err, where);
	cr_assert(strstr(err, what) != NULL, "'%s' should say '%s'", err, what);
	sgf_record_free(&r);
}

#define EXPECT_ERROR(lit, where, what) expect_error(lit, sizeof(lit) - 1, where, what)

Test(sgf, coordinates_map_top_left_to_high_y)
{
	sgf_record r;
	const char *t = "(;SZ[9];B[aa];W[ia];B[ai];W[ii];B[ee])";
	cr_assert_eq(sgf_read(t, strlen(t), &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(r.n_moves, 5);
	cr_assert_eq(r.moves[0].point, 72); /* top-left: x 0, y 8 (A9) */
	cr_assert_eq(r.moves[1].point, 80); /* top-right: J9 */
	cr_assert_eq(r.moves[2].point, 0);  /* bottom-left: A1 */
	cr_assert_eq(r.moves[3].point, 8);  /* bottom-right: J1 */
	cr_assert_eq(r.moves[4].point, 40); /* centre */
	sgf_record_free(&r);
}

Test(sgf, long_and_lower_case_identifiers)
{
	sgf_record r;
	load("long_names.sgf", &r);
	cr_assert_eq(r.game, 1);
	cr_assert_eq(r.size, 9);
	cr_assert_float_eq(r.komi, 5.5, 1e-9);
	cr_assert_str_eq(r.pb, "Honinbo Shusaku");
	cr_assert_str_eq(r.pw, "Gennan Inseki");
	cr_assert_eq(r.n_setup, 3);
	expect_setup(&r, 0, GO_BLACK, "cc");
	expect_setup(&r, 1, GO_BLACK, "gg");
	expect_setup(&r, 2, GO_WHITE, "gc");
	cr_assert_eq(r.n_moves, 4);
	expect_move(&r, 0, GO_BLACK, "ee", "long names");
	expect_move(&r, 1, GO_WHITE, NULL, NULL); /* W[tt] */
	expect_move(&r, 2, GO_BLACK, "ce", NULL);
	expect_move(&r, 3, GO_WHITE, NULL, NULL); /* W[] */
	sgf_record_free(&r);
}

Test(sgf, whitespace_everywhere_and_soft_line_breaks)
{
	sgf_record r;
	load("whitespace.sgf", &r);
	cr_assert_eq(r.size, 9);
	cr_assert_float_eq(r.komi, 7.5, 1e-9);
	cr_assert_str_eq(r.pb, "Black Player", "newlines in simple text become spaces");
	cr_assert_eq(r.n_moves, 3);
	expect_move(&r, 0, GO_BLACK, "cc", "first linesame line\nsecond line");
	expect_move(&r, 1, GO_WHITE, "gg", NULL);
	expect_move(&r, 2, GO_BLACK, "ee", NULL);
	sgf_record_free(&r);
}

Test(sgf, main_line_is_first_variation)
{
	sgf_record r;
	load("variations.sgf", &r);
	cr_assert_eq(r.size, 9, "the second game of the collection is ignored");
	cr_assert_eq(r.n_setup, 0, "AB of a side line is not read");
	cr_assert_eq(r.n_moves, 5);
	expect_move(&r, 0, GO_BLACK, "ee", NULL);
	expect_move(&r, 1, GO_WHITE, "cc", "main");
	expect_move(&r, 2, GO_BLACK, "gg", NULL);
	expect_move(&r, 3, GO_WHITE, "cg", NULL);
	expect_move(&r, 4, GO_BLACK, "gc", NULL);
	sgf_record_free(&r);
}

Test(sgf, compressed_setup_lists_and_ae)
{
	sgf_record r;
	load("setup_lists.sgf", &r);
	static const char *const black[] = { "aa", "ca", "ab", "bb", "cb" };
	static const char *const white[] = { "ga", "ha", "ia", "gb", "ib", "gc", "hc", "ic", "ee" };
	cr_assert_eq(r.n_setup, 14);
	for (int i = 0; i < 5; i++)
		expect_setup(&r, i, GO_BLACK, black[i]);
	for (int i = 0; i < 9; i++)
		expect_setup(&r, 5 + i, GO_WHITE, white[i]);
	cr_assert_eq(r.n_moves, 1);
	expect_move(&r, 0, GO_BLACK, "ef", NULL);

	cr_assert_eq(sgf_replay(&r, &board, -1, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(go_color_at(&board, 0, 8), GO_BLACK);  /* aa */
	cr_assert_eq(go_color_at(&board, 1, 8), GO_EMPTY);  /* ba: AE */
	cr_assert_eq(go_color_at(&board, 7, 7), GO_EMPTY);  /* hb: AE */
	cr_assert_eq(go_color_at(&board, 8, 0), GO_EMPTY);  /* ii: AE in node 2 */
	cr_assert_eq(go_color_at(&board, 4, 4), GO_WHITE);  /* ee */
	cr_assert_eq(go_color_at(&board, 4, 3), GO_BLACK);  /* ef, the move */
	cr_assert_eq(board.n_moves, 1);
	sgf_record_free(&r);
}

Test(sgf, escaped_text)
{
	sgf_record r;
	load("escapes.sgf", &r);
	cr_assert_str_eq(r.comment, "root [comment] with \\ backslash");
	cr_assert_str_eq(r.pb, "a]b");
	cr_assert_eq(r.n_moves, 3);
	expect_move(&r, 0, GO_BLACK, "ee", "one ] two \\ three : four");
	expect_move(&r, 1, GO_WHITE, "ge", "");
	expect_move(&r, 2, GO_BLACK, "cc", NULL);
	sgf_record_free(&r);
}

Test(sgf, handicap_white_first_negative_komi)
{
	sgf_record r;
	load("handicap.sgf", &r);
	cr_assert_eq(r.size, 13);
	cr_assert_eq(r.handicap, 4);
	cr_assert_float_eq(r.komi, -2.5, 1e-9);
	cr_assert_str_eq(r.rules, "Japanese");
	cr_assert_str_eq(r.re, "W+R");
	cr_assert_str_eq(r.dt, "2023-01-02");
	cr_assert_eq(r.n_setup, 4);
	cr_assert_eq(r.n_moves, 3);
	expect_move(&r, 0, GO_WHITE, "gc", NULL);

	/* No moves yet: the handicap gives White the move. */
	cr_assert_eq(sgf_replay(&r, &board, 0, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(go_to_move(&board), GO_WHITE);
	cr_assert_float_eq(board.komi, -2.5, 1e-9);
	static const int hoshi[4][2] = { { 3, 9 }, { 9, 9 }, { 3, 3 }, { 9, 3 } };
	for (int i = 0; i < 4; i++)
		cr_assert_eq(go_color_at(&board, hoshi[i][0], hoshi[i][1]), GO_BLACK);

	cr_assert_eq(sgf_replay(&r, &board, -1, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(board.n_moves, 3);
	cr_assert_eq(go_color_at(&board, 6, 10), GO_WHITE); /* gc = G11 */
	cr_assert_eq(go_color_at(&board, 2, 6), GO_WHITE);  /* cg = C7 */
	cr_assert_eq(go_to_move(&board), GO_BLACK);
	sgf_record_free(&r);
}

Test(sgf, defaults_when_missing)
{
	sgf_record r;
	load("no_size.sgf", &r);
	cr_assert_eq(r.game, 1);
	cr_assert_eq(r.size, 19, "no SZ: 19");
	cr_assert_eq(r.komi, 0.0, "no KM: 0");
	cr_assert_eq(r.handicap, 0);
	cr_assert_eq(r.n_moves, 4);
	cr_assert_eq(r.moves[0].point, 15 * 19 + 15); /* pd = Q16 */
	expect_move(&r, 2, GO_BLACK, NULL, NULL);      /* tt on 19x19 */
	expect_move(&r, 3, GO_WHITE, NULL, NULL);
	sgf_record_free(&r);
}

Test(sgf, malformed_input_names_the_byte)
{
	EXPECT_ERROR("", "byte 0:", "no game tree");
	EXPECT_ERROR("just some text", "byte 14:", "no game tree");
	EXPECT_ERROR("(;GM[1]C[unterminated comment", "byte 8:", "expected ']'");
	EXPECT_ERROR("(;GM[1]SZ[9];B[e", "byte 14:", "expected ']'");
	EXPECT_ERROR("(;C[abc\\", "byte 3:", "expected ']'"); /* escape at the very end */
	EXPECT_ERROR("(;GM[1]SZ[9];B[aa](;W[bb])", "byte 26:", "expected ')'");
	EXPECT_ERROR("(;GM[1]SZ[9];B[jj])", "byte 15:", "off the 9x9 board");
	EXPECT_ERROR("(;GM[1]SZ[9];B[a])", "byte 15:", "not a point");
	EXPECT_ERROR("(;GM[1]SZ[9]AB[aa:ja])", "byte 15:", "off the 9x9 board");
	EXPECT_ERROR("(;GM[1]SZ[25])", "byte 10:", "board size 25 not supported");
	EXPECT_ERROR("(;GM[1]SZ[4])", "byte 10:", "board size 4 not supported");
	EXPECT_ERROR("(;SZ[19:13])", "byte 5:", "rectangular");
	EXPECT_ERROR("(;FF[4]GM[2]SZ[8])", "byte 10:", "not a Go game (GM[2])");
	EXPECT_ERROR("(;GM[1]SZ[9];B)", "byte 14:", "without a value");
	EXPECT_ERROR("(;GM[1]SZ[9];B[aa][bb])", "byte 18:", "one value");
	EXPECT_ERROR("()", "byte 1:", "expected ';'");
	EXPECT_ERROR("(;B[aa](;W[bb]);B[cc])", "byte 15:", "node after a variation");
	EXPECT_ERROR("(;GM[1]5[])", "byte 7:", "unexpected '5'");
	EXPECT_ERROR("(;SZ[9];B[aa];AB[bb]AW[bb])", "byte 23:", "set twice in one node");
	EXPECT_ERROR("(;KM[7.5x])", "byte 5:", "KM");
	EXPECT_ERROR("(;KM[nan])", "byte 5:", "KM");
	EXPECT_ERROR("(;HA[-1])", "byte 5:", "HA");
	EXPECT_ERROR("(;GM[1]SZ[9];B[ee]", "byte 18:", "expected ')'");
	/* A NUL byte is just an unexpected byte, not the end of the text. */
	EXPECT_ERROR("(;B[aa]\0)", "byte 7:", "0x00");
}

/* A node may not give one point two stones (the file contradicts itself);
 * AE may still clear a point of a rectangle, and a later node may change
 * what an earlier one set. */
Test(sgf, a_point_given_two_stones_in_one_node_is_refused)
{
	EXPECT_ERROR("(;SZ[9]AB[aa]AW[aa])", "byte 16:", "aa set twice in one node");
	EXPECT_ERROR("(;SZ[9]AB[aa:cc]AW[bb])", "byte 19:", "bb set twice in one node");
	EXPECT_ERROR("(;SZ[9]AB[aa][aa])", "byte 14:", "aa set twice in one node");
	EXPECT_ERROR("(;SZ[9];AW[ee]AB[dd:ff])", "byte 17:", "ee set twice in one node");
	sgf_record r;
	const char *t = "(;SZ[9]AB[dd:ee]AE[ee];AW[dd]AB[ee])";
	cr_assert_eq(sgf_read(t, strlen(t), &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(r.n_setup, 4);
	cr_assert_eq(sgf_replay(&r, &board, -1, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(go_color_at(&board, 3, 5), GO_WHITE); /* dd */
	cr_assert_eq(go_color_at(&board, 4, 5), GO_BLACK); /* ed */
	cr_assert_eq(go_color_at(&board, 3, 4), GO_BLACK); /* de */
	cr_assert_eq(go_color_at(&board, 4, 4), GO_BLACK); /* ee */
	sgf_record_free(&r);
}

Test(sgf, malformed_input_without_error_buffer)
{
	sgf_record r;
	cr_assert_neq(sgf_read("(;B[", 4, &r, NULL, 0), 0);
	cr_assert_neq(sgf_read(NULL, 0, &r, err, sizeof(err)), 0);
	sgf_record_free(&r);
	sgf_record_free(NULL);
}

Test(sgf, deep_nesting_costs_no_stack)
{
	enum { DEPTH = 200000 };
	char *t = malloc(4 * DEPTH + 1);
	cr_assert_not_null(t);
	size_t n = 0;
	for (int i = 0; i < DEPTH; i++) {
		t[n++] = '(';
		t[n++] = ';';
	}
	sgf_record r;
	/* Unclosed: an error, not a crash. */
	cr_assert_neq(sgf_read(t, n, &r, err, sizeof(err)), 0);
	cr_assert(strstr(err, "expected ')'"), "%s", err);
	for (int i = 0; i < DEPTH; i++)
		t[n++] = ')';
	cr_assert_eq(sgf_read(t, n, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(r.n_moves, 0);
	sgf_record_free(&r);
	free(t);
}

Test(sgf, round_trip_every_field)
{
	sgf_record r, back;
	sgf_record_init(&r);
	r.size = 13;
	r.komi = 6.5;
	r.handicap = 2;
	snprintf(r.rules, sizeof(r.rules), "Chinese");
	snprintf(r.pb, sizeof(r.pb), "Black ] with \\ bracket");
	snprintf(r.pw, sizeof(r.pw), "White");
	snprintf(r.re, sizeof(r.re), "B+3.5");
	snprintf(r.dt, sizeof(r.dt), "2024-06-01");
	r.comment = malloc(32);
	snprintf(r.comment, 32, "root\nsecond line");
	cr_assert_eq(sgf_record_add_setup(&r, GO_BLACK, pt(13, "dd")), 0);
	cr_assert_eq(sgf_record_add_setup(&r, GO_BLACK, pt(13, "jj")), 0);
	cr_assert_eq(sgf_record_add_setup(&r, GO_WHITE, pt(13, "gg")), 0);
	cr_assert_eq(sgf_record_add_move(&r, GO_WHITE, pt(13, "dj"), "first ] move \\ here"), 0);
	cr_assert_eq(sgf_record_add_move(&r, GO_BLACK, pt(13, "jd"), NULL), 0);
	cr_assert_eq(sgf_record_add_move(&r, GO_WHITE, 13 * 13, "a pass"), 0);
	cr_assert_eq(sgf_record_add_move(&r, GO_BLACK, pt(13, "aa"), ""), 0);
	cr_assert_eq(sgf_record_add_move(&r, GO_WHITE, pt(13, "mm"), "]]\\\\]"), 0);
	cr_assert_eq(sgf_record_add_move(&r, GO_WHITE, 13 * 13, NULL), 0);
	cr_assert_neq(sgf_record_add_move(&r, 2, 0, NULL), 0, "bad colour");
	cr_assert_neq(sgf_record_add_setup(&r, GO_BLACK, -1), 0, "bad point");

	char *text = sgf_write(&r);
	cr_assert_not_null(text);
	cr_assert(strncmp(text, "(;FF[4]GM[1]CA[UTF-8]AP[sente]SZ[13]KM[6.5]HA[2]", 48) == 0, "%s", text);
	cr_assert(strstr(text, ";W[]C[a pass]"), "pass is written []: %s", text);
	cr_assert(strstr(text, "PB[Black \\] with \\\\ bracket]"), "%s", text);
	cr_assert_eq(sgf_read(text, strlen(text), &back, err, sizeof(err)), 0, "%s\n%s", err, text);

	cr_assert_eq(back.game, 1);
	cr_assert_eq(back.size, r.size);
	cr_assert_eq(back.komi, r.komi);
	cr_assert_eq(back.handicap, r.handicap);
	cr_assert_str_eq(back.rules, r.rules);
	cr_assert_str_eq(back.pb, r.pb);
	cr_assert_str_eq(back.pw, r.pw);
	cr_assert_str_eq(back.re, r.re);
	cr_assert_str_eq(back.dt, r.dt);
	cr_assert_str_eq(back.comment, r.comment);
	cr_assert_eq(back.n_setup, r.n_setup);
	for (int i = 0; i < r.n_setup; i++) {
		cr_assert_eq(back.setup[i].color, r.setup[i].color);
		cr_assert_eq(back.setup[i].point, r.setup[i].point);
	}
	cr_assert_eq(back.n_moves, r.n_moves);
	for (int i = 0; i < r.n_moves; i++) {
		cr_assert_eq(back.moves[i].color, r.moves[i].color, "move %d", i);
		cr_assert_eq(back.moves[i].point, r.moves[i].point, "move %d", i);
		if (r.moves[i].comment)
			cr_assert_str_eq(back.moves[i].comment, r.moves[i].comment, "move %d", i);
		else
			cr_assert_null(back.moves[i].comment, "move %d", i);
	}

	/* Odd komi values survive too. */
	r.komi = -0.1;
	char *t2 = sgf_write(&r);
	sgf_record_free(&back);
	cr_assert_eq(sgf_read(t2, strlen(t2), &back, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(back.komi, -0.1);

	free(t2);
	free(text);
	sgf_record_free(&back);
	sgf_record_free(&r);
	sgf_record_free(&r); /* freeing twice is harmless: the record is reset */
}

Test(sgf, write_refuses_invalid_records)
{
	sgf_record r;
	sgf_record_init(&r);
	r.size = 21;
	cr_assert_null(sgf_write(&r));
	r.size = 9;
	cr_assert_eq(sgf_record_add_move(&r, GO_BLACK, 100, NULL), 0); /* valid on 19x19 only */
	cr_assert_null(sgf_write(&r));
	sgf_record_free(&r);
}

/* The final position of tests/data/sgf/game_9x9.sgf (66 moves, ending in two
 * passes; a side variation at move 58 must be skipped). X Black, O White,
 * '.' empty, ',' empty but captured during the game. Captures, checked by
 * hand against the record: move 45 B C2 takes W C1 D1 (their last liberty);
 * move 50 W B8 takes B A9 B9 (liberty B8) and C8 (liberty B8); move 58 W H4
 * takes the six stones J7 J6 H6 J5 J4 J3 (liberty H4). D1, J3, J6 and J7
 * were later played again. */
static const char *const final_9x9[9] = {
	",,OO.OO.O", /* row 9 */
	"OO,OXX.OO",
	"X.O.X.OOO",
	"O..X.OO,X",
	"..OO.XOO,",
	"X.OOOXXO,",
	"O.XX.XXOX",
	"..XX.X.XO",
	".X,OXXXO.", /* row 1 */
};

static void expect_cell(const go_board *b, const char *vertex, int color)
{
	int x = vertex[0] - 'A' - (vertex[0] > 'I'), y = atoi(vertex + 1) - 1;
	cr_assert_eq(go_color_at(b, x, y), color, "%s", vertex);
}

Test(sgf, full_game_replays_to_recorded_position)
{
	sgf_record r;
	load("game_9x9.sgf", &r);
	cr_assert_eq(r.size, 9);
	cr_assert_float_eq(r.komi, 6.5, 1e-9);
	cr_assert_str_eq(r.pb, "sente-r10");
	cr_assert_str_eq(r.pw, "sente-r12");
	cr_assert_str_eq(r.re, "W+17.5");
	cr_assert_str_eq(r.rules, "Chinese");
	cr_assert_str_eq(r.comment, "sente self-play, game 42.\nTromp-Taylor scoring.");
	cr_assert_eq(r.n_moves, 66);
	expect_move(&r, 44, GO_BLACK, "ch", "C1 and D1 are captured.");
	expect_move(&r, 57, GO_WHITE, "hf",
		    "The whole J column falls [six stones]; Black's \\ shape was too thin.");
	expect_move(&r, 58, GO_BLACK, "ig", NULL);
	expect_move(&r, 63, GO_WHITE, "hi", NULL);
	expect_move(&r, 64, GO_BLACK, NULL, NULL);
	expect_move(&r, 65, GO_WHITE, NULL, NULL);

	/* Before move 45 the two white stones stand; after it they are gone. */
	cr_assert_eq(sgf_replay(&r, &board, 44, err, sizeof(err)), 0, "%s", err);
	expect_cell(&board, "C1", GO_WHITE);
	expect_cell(&board, "D1", GO_WHITE);
	cr_assert_eq(sgf_replay(&r, &board, 45, err, sizeof(err)), 0, "%s", err);
	expect_cell(&board, "C1", GO_EMPTY);
	expect_cell(&board, "D1", GO_EMPTY);
	expect_cell(&board, "C2", GO_BLACK);
	cr_assert_eq(sgf_replay(&r, &board, 57, err, sizeof(err)), 0, "%s", err);
	expect_cell(&board, "J5", GO_BLACK);
	expect_cell(&board, "H6", GO_BLACK);

	cr_assert_eq(sgf_replay(&r, &board, -1, err, sizeof(err)), 0, "%s", err);
	cr_assert(go_check(&board));
	cr_assert_eq(board.n_moves, 66);
	cr_assert(go_is_over(&board), "two passes end it");
	for (int row = 0; row < 9; row++)
		for (int x = 0; x < 9; x++) {
			char c = final_9x9[row][x];
			int want = c == 'X' ? GO_BLACK : c == 'O' ? GO_WHITE : GO_EMPTY;
			cr_assert_eq(go_color_at(&board, x, 8 - row), want, "%c%d", "ABCDEFGHJ"[x],
				     9 - row);
		}
	static const char *const captured[] = { "A9", "B9", "C8", "C1", "H6", "J5", "J4" };
	for (size_t i = 0; i < sizeof(captured) / sizeof(captured[0]); i++)
		expect_cell(&board, captured[i], GO_EMPTY);
	expect_cell(&board, "D1", GO_WHITE); /* retaken by move 54 */
	expect_cell(&board, "J3", GO_BLACK); /* move 59 */
	expect_cell(&board, "J7", GO_WHITE); /* move 60 */
	expect_cell(&board, "J6", GO_BLACK); /* move 63 */
	/* Area from the diagram: Black 24, White 35, komi 6.5. */
	cr_assert_float_eq(go_score(&board), -17.5, 1e-9, "RE says W+17.5");
	sgf_record_free(&r);
}

Test(sgf, replay_reports_illegal_moves)
{
	sgf_record r;
	const char *t = "(;SZ[9]KM[7]AB[ab][ba]AW[bb];B[ee];W[aa])"; /* W A9 is suicide */
	cr_assert_eq(sgf_read(t, strlen(t), &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_neq(sgf_replay(&r, &board, -1, err, sizeof(err)), 0);
	cr_assert(strstr(err, "move 2 W[aa] (A9) is illegal"), "%s", err);
	cr_assert_eq(sgf_replay(&r, &board, 1, err, sizeof(err)), 0, "%s", err);
	sgf_record_free(&r);

	t = "(;SZ[9];B[ee];W[ee])";
	cr_assert_eq(sgf_read(t, strlen(t), &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_neq(sgf_replay(&r, &board, -1, err, sizeof(err)), 0);
	cr_assert(strstr(err, "move 2 W[ee] (E5)"), "%s", err);
	sgf_record_free(&r);

	/* Komi the board cannot take: the record reads, the replay refuses. */
	t = "(;SZ[9]KM[6.25];B[ee])";
	cr_assert_eq(sgf_read(t, strlen(t), &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_neq(sgf_replay(&r, &board, -1, err, sizeof(err)), 0);
	cr_assert(strstr(err, "komi"), "%s", err);
	sgf_record_free(&r);
}

Test(sgf, replay_out_of_turn_moves)
{
	sgf_record r;
	const char *t = "(;SZ[9];B[aa];B[bb];W[cc];W[dd];B[])";
	cr_assert_eq(sgf_read(t, strlen(t), &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sgf_replay(&r, &board, -1, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(go_color_at(&board, 1, 7), GO_BLACK);
	cr_assert_eq(go_color_at(&board, 3, 5), GO_WHITE);
	cr_assert_eq(go_to_move(&board), GO_WHITE);
	sgf_record_free(&r);
}

Test(sgf, record_from_go_board)
{
	static go_board b;
	int hcp[2];
	cr_assert_eq(go_init(&b, 9, 0.5), 0);
	cr_assert_eq(go_fixed_handicap_points(9, 2, hcp), 2);
	cr_assert_eq(go_set_handicap(&b, hcp, 2), 0);
	static const char *const moves[] = { "ee", "cc", "gg", "dh", "hd", "dd", "ff" };
	for (int i = 0; i < 7; i++)
		cr_assert_eq(go_play(&b, pt(9, moves[i])), 0, "%s", moves[i]);
	cr_assert_eq(go_play(&b, 81), 0);
	go_resign(&b, GO_WHITE);

	sgf_record r, back;
	cr_assert_eq(sgf_record_from_go(&b, &r), 0);
	cr_assert_eq(r.size, 9);
	cr_assert_eq(r.komi, 0.5);
	cr_assert_eq(r.handicap, 2);
	cr_assert_eq(r.n_setup, 2);
	cr_assert_eq(r.n_moves, 8);
	cr_assert_str_eq(r.re, "B+R");
	expect_move(&r, 0, GO_WHITE, "ee", NULL);
	expect_move(&r, 7, GO_BLACK, NULL, NULL);

	char *text = sgf_write(&r);
	cr_assert_not_null(text);
	cr_assert_eq(sgf_read(text, strlen(text), &back, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sgf_replay(&back, &board, -1, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(go_hash(&board), go_hash(&b), "the replay reaches the same position");
	cr_assert_eq(board.n_moves, b.n_moves);
	free(text);
	sgf_record_free(&back);
	sgf_record_free(&r);

	/* A setup stone after a move becomes an edit, and replays. */
	cr_assert_eq(go_init(&b, 9, 7.5), 0);
	cr_assert_eq(go_play(&b, 40), 0);
	cr_assert_eq(go_place_stone(&b, GO_WHITE, 0), 0);
	cr_assert_eq(go_play(&b, 41), 0);
	cr_assert_eq(sgf_record_from_go(&b, &r), 0);
	cr_assert_eq(r.n_moves, 2);
	cr_assert_eq(r.n_edits, 1);
	cr_assert_eq(r.edits[0].move, 1);
	text = sgf_write(&r);
	cr_assert_not_null(text);
	cr_assert(strstr(text, "\n;AW[ai]\n;"), "%s", text);
	cr_assert_eq(sgf_read(text, strlen(text), &back, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sgf_replay(&back, &board, -1, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(go_hash(&board), go_hash(&b));
	free(text);
	sgf_record_free(&back);
	sgf_record_free(&r);
}

/* Setup after the first move (FF[4]; GUIs write it when a user edits a
 * game): stones added keep the history, a stone removed or recoloured
 * starts the board afresh from the edited position, with the same side
 * to move; the edits replay up to the move asked for. */
Test(sgf, setup_after_the_first_move)
{
	sgf_record r;
	const char *text = "(;GM[1]FF[4]SZ[9]KM[7.5];B[ee];W[cc];AB[gg:hh]C[edit];B[dd]"
			   ";AE[ee]AW[ff];W[ce])";
	cr_assert_eq(sgf_read(text, strlen(text), &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(r.n_moves, 4);
	cr_assert_eq(r.n_edits, 6);
	cr_assert_eq(r.edits[0].move, 2);
	cr_assert_eq(r.edits[5].move, 3);
	cr_assert_eq(r.edits[4].color, GO_EMPTY);

	/* Up to move 3: the stones of the first edit were added. */
	cr_assert_eq(sgf_replay(&r, &board, 2, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(go_color_at(&board, 6, 2), GO_BLACK); /* gg */
	cr_assert_eq(go_color_at(&board, 7, 1), GO_BLACK); /* hh */
	cr_assert_eq(board.n_moves, 2, "added stones keep the history");
	cr_assert_eq(board.to_move, GO_BLACK);

	/* All: E5 removed, F4 White, then W C4. */
	cr_assert_eq(sgf_replay(&r, &board, -1, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(go_color_at(&board, 4, 4), GO_EMPTY);
	cr_assert_eq(go_color_at(&board, 5, 3), GO_WHITE);
	cr_assert_eq(go_color_at(&board, 2, 4), GO_WHITE);
	cr_assert_eq(go_color_at(&board, 3, 5), GO_BLACK); /* dd */

	/* Written back and read again: the same position. */
	static go_board again;
	char *w = sgf_write(&r);
	sgf_record back;
	cr_assert_not_null(w);
	cr_assert_eq(sgf_read(w, strlen(w), &back, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sgf_replay(&back, &again, -1, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(go_hash(&again), go_hash(&board));
	free(w);
	sgf_record_free(&back);

	/* An edit that leaves a stone without liberties is refused. */
	sgf_record_free(&r);
	text = "(;GM[1]SZ[9];B[aa];AW[ba][ab];W[ee])";
	cr_assert_eq(sgf_read(text, strlen(text), &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_neq(sgf_replay(&r, &board, -1, err, sizeof(err)), 0);
	cr_assert(strstr(err, "setup before move 2"), "%s", err);
	sgf_record_free(&r);
}

Test(sgf, load_file_errors)
{
	sgf_record r;
	cr_assert_neq(sgf_load_file("tests/data/sgf/does_not_exist.sgf", &r, err, sizeof(err)), 0);
	cr_assert(strstr(err, "does_not_exist.sgf"), "%s", err);
	sgf_record_free(&r);

	/* Errors inside a file name the file and the byte. */
	char path[] = "/tmp/sente_sgf_XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	FILE *f = fdopen(fd, "w");
	cr_assert_not_null(f);
	fputs("(;GM[1]SZ[9];B[zz])", f);
	fclose(f);
	cr_assert_neq(sgf_load_file(path, &r, err, sizeof(err)), 0);
	cr_assert(strstr(err, path) && strstr(err, "byte 15:"), "%s", err);
	sgf_record_free(&r);

	/* Over 16 MB: refused before parsing. */
	f = fopen(path, "w");
	cr_assert_not_null(f);
	static char block[1 << 16];
	memset(block, ' ', sizeof(block));
	fputs("(;GM[1]", f);
	for (int i = 0; i < 257; i++)
		fwrite(block, 1, sizeof(block), f);
	fputs(")", f);
	fclose(f);
	cr_assert_neq(sgf_load_file(path, &r, err, sizeof(err)), 0);
	cr_assert(strstr(err, "larger than 16 MB"), "%s", err);
	sgf_record_free(&r);
	unlink(path);
}
