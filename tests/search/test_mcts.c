/* Search: tactics found by the uniform-policy search, exact visit limits,
 * determinism, virtual loss spreading threads, tree reuse. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "engine/game_desc.h"
#include "search/mcts.h"
#include "tests/search/fake_net.h"

static game g;

static void c4_position(const char *cols)
{
	game_params p = game_params_default(GAME_KIND_CONNECT4);
	game_init(&g, &p);
	for (const char *c = cols; *c; c++)
		cr_assert_eq(game_play(&g, *c - '1'), GAME_OK);
}

static int search_move(evaluator *ev, int threads, int visits, uint64_t seed)
{
	mcts_options o = mcts_options_default();
	o.threads = threads;
	o.max_visits = visits;
	o.seed = seed;
	o.max_memory = 64 << 20;
	char err[128];
	mcts *m = mcts_new(ev, &o, err, sizeof(err));
	cr_assert(m, "%s", err);
	mcts_set_position(m, &g);
	mcts_search(m);
	cr_assert_eq(mcts_root_visits(m), visits, "-v is honoured exactly");
	int mv = mcts_choose_move(m, 0, false);
	mcts_free(m);
	return mv;
}

Test(mcts, connect4_takes_the_win)
{
	/* First player has discs in columns 1, 2, 3 of the bottom row and
	 * is to move: column 4 wins at once. */
	c4_position("172737");
	evaluator *ev = eval_new(NULL, 0, NN_ENC_C4, NULL, NULL, 0);
	cr_assert_eq(search_move(ev, 1, 400, 1), 3);
	cr_assert_eq(search_move(ev, 4, 400, 2), 3);
	eval_free(ev);
}

Test(mcts, connect4_blocks_the_threat)
{
	/* X holds columns 5, 6, 7 of the bottom row; O (column 1 twice) is
	 * to move and must block at column 4 or lose at once. */
	c4_position("51617");
	cr_assert_eq(game_to_move(&g), GAME_WHITE);
	evaluator *ev = eval_new(NULL, 0, NN_ENC_C4, NULL, NULL, 0);
	cr_assert_eq(search_move(ev, 2, 3000, 3), 3);
	eval_free(ev);
}

Test(mcts, connect4_double_threat)
{
	/* X holds c1 d1, O c2 d2, X to move. Column 2 or 5 makes an open
	 * three on the bottom row (b1 c1 d1 or c1 d1 e1) with both ends
	 * empty: O can block one end, X wins at the other (3 plies). A
	 * brute-force search to 7 plies finds no forced win for any other
	 * column. Found from about 100 playouts (at 50 each column has 7
	 * visits and it plays column 1). */
	c4_position("3344");
	evaluator *ev = eval_new(NULL, 0, NN_ENC_C4, NULL, NULL, 0);
	for (int threads = 1; threads <= 2; threads++) {
		int mv = search_move(ev, threads, 800, (uint64_t)threads);
		cr_assert(mv == 1 || mv == 4, "%d threads: column %d makes no double threat", threads, mv + 1);
	}
	eval_free(ev);
}

Test(mcts, deterministic_with_one_thread)
{
	c4_position("44");
	fake_net f;
	fake_c4_init(&f, 8, 0);
	nn_backend *be = &f.be;
	eval_options eo = eval_options_default();
	eo.seed = 9;
	mcts_child_info a[8], b[8];
	int na = 0, nb = 0;
	for (int run = 0; run < 2; run++) {
		evaluator *ev = eval_new(&be, 1, NN_ENC_C4, &eo, NULL, 0);
		mcts_options o = mcts_options_default();
		o.threads = 1;
		o.max_visits = 500;
		o.noise = true;
		o.seed = 5;
		o.max_memory = 16 << 20;
		mcts *m = mcts_new(ev, &o, NULL, 0);
		mcts_set_position(m, &g);
		mcts_search(m);
		if (run == 0)
			na = mcts_root_children(m, a, 8);
		else
			nb = mcts_root_children(m, b, 8);
		mcts_free(m);
		eval_free(ev);
	}
	cr_assert_eq(na, nb);
	for (int i = 0; i < na; i++) {
		cr_assert_eq(a[i].move, b[i].move);
		cr_assert_eq(a[i].visits, b[i].visits);
		cr_assert_eq(memcmp(&a[i].q, &b[i].q, sizeof(float)), 0, "bit for bit");
		cr_assert_eq(memcmp(&a[i].prior, &b[i].prior, sizeof(float)), 0);
	}
}

Test(mcts, threads_form_batches_and_spread)
{
	game_params p = { .kind = GAME_KIND_GO, .size = 9, .komi = 7.5 };
	game_init(&g, &p);
	fake_net f;
	fake_go_init(&f, 9, 8, 500);
	nn_backend *be = &f.be;
	eval_options eo = eval_options_default();
	eo.max_batch = 8;
	eo.cache_bytes = 0;
	/* No time limit on the fill wait (a minute stands for none): a short
	 * batch runs only when every search thread is blocked on its answer,
	 * so the mean batch below does not depend on a loaded machine running
	 * a thread within the default 3 ms. */
	eo.fill_wait_us = 60 * 1000 * 1000;
	evaluator *ev = eval_new(&be, 1, NN_ENC_LZ18, &eo, NULL, 0);
	mcts_options o = mcts_options_default();
	o.threads = 8;
	o.max_visits = 400;
	o.max_memory = 64 << 20;
	mcts *m = mcts_new(ev, &o, NULL, 0);
	mcts_set_position(m, &g);
	mcts_search(m);
	mcts_stats st;
	mcts_get_stats(m, &st);
	eval_stats es;
	eval_get_stats(ev, &es);
	cr_assert_eq(mcts_root_visits(m), 400);
	/* Every playout reached a distinct new leaf: one evaluation each
	 * (the root's included), so virtual loss kept threads apart. */
	cr_assert_eq(es.evals, 400, "evals %llu", (unsigned long long)es.evals);
	double mean = (double)es.evals / (double)es.batches;
	cr_assert(mean > 3, "mean batch %.2f with 8 threads", mean);
	cr_assert(st.collisions < 400, "collisions %llu", (unsigned long long)st.collisions);
	mcts_free(m);
	eval_free(ev);
}

Test(mcts, tree_reuse_keeps_the_subtree)
{
	c4_position("");
	evaluator *ev = eval_new(NULL, 0, NN_ENC_C4, NULL, NULL, 0);
	mcts_options o = mcts_options_default();
	o.threads = 2;
	o.max_visits = 2000;
	o.max_memory = 64 << 20;
	mcts *m = mcts_new(ev, &o, NULL, 0);
	mcts_set_position(m, &g);
	mcts_search(m);
	int mv = mcts_choose_move(m, 0, false);
	/* The visits of the grandchild we will reach: follow the PV. */
	int pv[4];
	cr_assert(mcts_pv(m, mv, pv, 4) >= 2);
	cr_assert_eq(game_play(&g, pv[0]), GAME_OK);
	mcts_set_position(m, &g);
	int kept1 = mcts_root_visits(m);
	cr_assert(kept1 > 100, "one move on: the subtree is kept (%d visits)", kept1);
	cr_assert_eq(game_play(&g, pv[1]), GAME_OK);
	mcts_set_position(m, &g);
	int kept2 = mcts_root_visits(m);
	cr_assert(kept2 > 10 && kept2 < kept1, "two moves on: %d visits kept", kept2);
	mcts_search(m);
	cr_assert_eq(mcts_root_visits(m), 2000, "the search tops up to the limit");
	/* An unrelated position drops the tree. */
	c4_position("7");
	mcts_set_position(m, &g);
	cr_assert_eq(mcts_root_visits(m), 0);
	mcts_free(m);
	eval_free(ev);
}

/* One single-thread search of g from scratch, then one move on (the kept
 * subtree topped up), with or without an avoid list that bans nothing:
 * with one, every node's selection reads all its children; without, a
 * node below the root stops at its first child without descents among
 * those expand() sorted by prior. The tree's fingerprint: the root's
 * children (move, visits, q) and each visited child's principal
 * variation with its visits, into fp[] (returns its length). */
static int search_fingerprint_after(evaluator *ev, const mcts_avoid *first, bool full_pass,
				    int visits, int *fp, int max)
{
	mcts_options o = mcts_options_default();
	o.threads = 1;
	o.max_visits = visits;
	o.max_memory = 64 << 20;
	mcts *m = mcts_new(ev, &o, NULL, 0);
	cr_assert(m);
	static mcts_avoid none;
	memset(&none, 0, sizeof(none));
	game here = g;
	int n = 0;
	if (first) {
		/* A third of the visits with bans first; the searches below
		 * go on in the tree it grew. */
		o.max_visits = visits / 3;
		mcts_set_options(m, &o);
		mcts_set_avoid(m, first);
		mcts_set_position(m, &here);
		mcts_search(m);
		o.max_visits = visits;
		mcts_set_options(m, &o);
		mcts_set_avoid(m, NULL);
	}
	if (full_pass)
		mcts_set_avoid(m, &none);
	for (int step = 0; step < 2; step++) {
		mcts_set_position(m, &here);
		mcts_search(m);
		cr_assert_eq(mcts_root_visits(m), visits);
		static mcts_child_info ci[GAME_MAX_ACTIONS];
		int nc = mcts_root_children(m, ci, GAME_MAX_ACTIONS);
		for (int i = 0; i < nc && n + 3 <= max; i++) {
			fp[n++] = ci[i].move;
			fp[n++] = ci[i].visits;
			memcpy(&fp[n++], &ci[i].q, sizeof(float));
			if (ci[i].visits == 0)
				continue;
			int pv[16], pvv[16];
			int len = mcts_pv_visits(m, ci[i].move, pv, pvv, 16);
			for (int k = 0; k < len && n + 2 <= max; k++) {
				fp[n++] = pv[k];
				fp[n++] = pvv[k];
			}
		}
		cr_assert_eq(game_play(&here, mcts_choose_move(m, 0, false)), GAME_OK);
	}
	mcts_free(m);
	return n;
}

static int search_fingerprint(evaluator *ev, bool full_pass, int visits, int *fp, int max)
{
	return search_fingerprint_after(ev, NULL, full_pass, visits, fp, max);
}

/* The early stop in selection changes no choice: the same trees with and
 * without it, on Go with the plain prior (many children, ties of prior
 * and of value), Go with uniform priors and material values, and Connect
 * Four with the fake network's varied priors. */
Test(mcts, sorted_children_stop_early_to_the_same_tree, .timeout = 60)
{
	static int a[1 << 14], b[1 << 14];
	game_params p = { .kind = GAME_KIND_GO, .size = 9, .komi = 7.5 };
	eval_options eo = eval_options_default();
	eo.plain_prior = true;
	evaluator *plain = eval_new(NULL, 0, NN_ENC_LZ18, &eo, NULL, 0);
	fake_net fg, fc;
	fake_go_init(&fg, 9, 8, 0);
	fake_c4_init(&fc, 8, 0);
	nn_backend *bg = &fg.be, *bc = &fc.be;
	evaluator *go_ev = eval_new(&bg, 1, NN_ENC_LZ18, NULL, NULL, 0);
	evaluator *c4_ev = eval_new(&bc, 1, NN_ENC_C4, NULL, NULL, 0);
	struct {
		evaluator *ev;
		bool go;
		const char *name;
	} cases[] = { { plain, true, "go, plain prior" },
		      { go_ev, true, "go, fake network" },
		      { c4_ev, false, "connect four, fake network" } };
	for (int c = 0; c < 3; c++) {
		if (cases[c].go) {
			game_init(&g, &p);
			const int opening[] = { 40, 30, 50, 32, 22 };
			for (int i = 0; i < 5; i++)
				cr_assert_eq(game_play(&g, opening[i]), GAME_OK);
		} else {
			c4_position("4435");
		}
		int na = search_fingerprint(cases[c].ev, false, 3000, a, 1 << 14);
		int nb = search_fingerprint(cases[c].ev, true, 3000, b, 1 << 14);
		cr_assert_gt(na, 30, "%s: a tree (%d words)", cases[c].name, na);
		cr_assert_eq(na, nb, "%s", cases[c].name);
		for (int i = 0; i < na; i++)
			cr_assert_eq(a[i], b[i], "%s: fingerprint word %d of %d", cases[c].name, i, na);
	}
	eval_free(plain);
	eval_free(go_ev);
	eval_free(c4_ev);
}

/* A tree grown by a search with bans (GTP's avoid, to depth 4: below the
 * root a banned child of a large prior stays fresh while others are
 * chosen) is searched on without them as with the full pass. */
Test(mcts, a_tree_searched_with_bans_is_read_in_full, .timeout = 60)
{
	static int a[1 << 14], b[1 << 14];
	static mcts_avoid bans;
	game_params p = { .kind = GAME_KIND_GO, .size = 9, .komi = 7.5 };
	/* Uniform priors (the sorted children are the first legal moves) and
	 * material values (children's values differ). */
	fake_net fg;
	fake_go_init(&fg, 9, 8, 0);
	nn_backend *bg = &fg.be;
	evaluator *go_ev = eval_new(&bg, 1, NN_ENC_LZ18, NULL, NULL, 0);
	game_init(&g, &p);
	const int opening[] = { 40, 30, 50, 32, 22 };
	for (int i = 0; i < 5; i++)
		cr_assert_eq(game_play(&g, opening[i]), GAME_OK);
	/* The first two rows: the first legal moves, so the sorted ones. */
	bool listed[GAME_MAX_ACTIONS] = { false };
	for (int q = 0; q < 18; q++)
		listed[q] = true;
	memset(&bans, 0, sizeof(bans));
	mcts_avoid_ban(&bans, GO_BLACK, listed, GAME_MAX_ACTIONS, false, 6);
	mcts_avoid_ban(&bans, GO_WHITE, listed, GAME_MAX_ACTIONS, false, 6);
	int na = search_fingerprint_after(go_ev, &bans, false, 3000, a, 1 << 14);
	int nb = search_fingerprint_after(go_ev, &bans, true, 3000, b, 1 << 14);
	cr_assert_gt(na, 30);
	cr_assert_eq(na, nb);
	for (int i = 0; i < na; i++)
		cr_assert_eq(a[i], b[i], "fingerprint word %d of %d", i, na);
	eval_free(go_ev);
}

Test(mcts, go_capture_in_one)
{
	/* 9x9: a white stone at E5 in atari (black on D5, F5, E6); Black to
	 * move captures at E4. The fake network counts material. */
	game_params p = { .kind = GAME_KIND_GO, .size = 9, .komi = 7.5 };
	game_init(&g, &p);
	const char *seq[] = { "D5", "E5", "F5", "A9", "E6", "B9" };
	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		int mv;
		cr_assert_eq(game_move_from_text(&g, seq[i], &mv), GAME_OK);
		cr_assert_eq(game_play(&g, mv), GAME_OK);
	}
	fake_net f;
	fake_go_init(&f, 9, 8, 0);
	nn_backend *be = &f.be;
	evaluator *ev = eval_new(&be, 1, NN_ENC_LZ18, NULL, NULL, 0);
	int want;
	game_move_from_text(&g, "E4", &want);
	cr_assert_eq(search_move(ev, 2, 800, 4), want);
	eval_free(ev);
}

/* Sets up a Go position from a diagram (rows top first, X black, O white,
 * . empty) with `to_move` to play; stones are placed, not played, so no
 * history is implied. */
static void go_diagram(int size, double komi, const char *const *rows, int to_move)
{
	game_params p = { .kind = GAME_KIND_GO, .size = size, .komi = komi };
	cr_assert_eq(game_init(&g, &p), GAME_OK);
	for (int r = 0; r < size; r++)
		for (int x = 0; x < size; x++) {
			char c = rows[r][x];
			if (c == '.')
				continue;
			cr_assert(game_set_to_move(&g, c == 'X' ? GAME_BLACK : GAME_WHITE));
			cr_assert_eq(game_play(&g, (size - 1 - r) * size + x), GAME_OK);
		}
	cr_assert(game_set_to_move(&g, to_move));
}

static int go_point(const char *text)
{
	int mv;
	cr_assert_eq(game_move_from_text(&g, text, &mv), GAME_OK);
	return mv;
}

Test(mcts, go_connect_or_die)
{
	/*     A B C D E
	 *  5  X X . X X      Black to move. The two black stones A5 B5 have
	 *  4  . O O X X      two liberties: A4 and C5. C5 also joins them to
	 *  3  O O O X .      the black group on the right (D5...D1, 5
	 *  2  . O O X .      liberties); the white group (8 stones) has 4.
	 *  1  . O . X .
	 * C5 connects: nothing of Black's can then be taken within a few moves.
	 * Anything else loses A5 B5: White cuts at C5, after which A4 is
	 * suicide for Black, and White takes the two stones at A4 next (4
	 * plies); A4 itself is self-atari (White C5 takes three). No Black move
	 * captures, and the white group has too many liberties to race. */
	static const char *const rows[] = { "XX.XX", ".OOXX", "OOOX.", ".OOX.", ".O.X." };
	go_diagram(5, 7.5, rows, GAME_BLACK);
	fake_net f;
	fake_go_init(&f, 5, 8, 0);
	nn_backend *be = &f.be;
	evaluator *ev = eval_new(&be, 1, NN_ENC_LZ18, NULL, NULL, 0);
	int want = go_point("C5");
	/* One thread is deterministic; found from about 1,000 playouts
	 * (C5 2,173 of 3,000 visits, the next 208). */
	cr_assert_eq(search_move(ev, 1, 3000, 1), want);
	cr_assert_eq(search_move(ev, 2, 3000, 2), want);
	eval_free(ev);
}

Test(mcts, go_ladder)
{
	/*     A B C D E
	 *  5  . . . . .      Black to move. White C3 has two liberties, B3
	 *  4  . X X . .      and C2; either atari starts a ladder that the
	 *  3  . . O X .      edge ends: B3, C2 (libs B2 C1), B2, C1 (libs B1
	 *  2  . . . X .      D1), D1, B1 (lib A1), A1 takes four stones; C2
	 *  1  . . . . .      runs the mirror image along row 3. Nothing else
	 * captures, and White C3 escapes if left alone, so the right moves are
	 * the two ataris, and seeing it means reading the ladder to its end
	 * (7 plies). There is no room on 5x5 for a breaker stone that spoils
	 * one direction without becoming a target itself; the search finds the
	 * ladder from about 6,000 playouts (at 3,000 it plays A2). */
	static const char *const rows[] = { ".....", ".XX..", "..OX.", "...X.", "....." };
	go_diagram(5, 0.5, rows, GAME_BLACK);
	fake_net f;
	fake_go_init(&f, 5, 8, 0);
	nn_backend *be = &f.be;
	evaluator *ev = eval_new(&be, 1, NN_ENC_LZ18, NULL, NULL, 0);
	int b3 = go_point("B3"), c2 = go_point("C2");
	for (int threads = 1; threads <= 2; threads++) {
		int mv = search_move(ev, threads, 8000, (uint64_t)threads);
		cr_assert(mv == b3 || mv == c2, "%d threads: move %d is not a ladder atari", threads, mv);
	}
	eval_free(ev);
}

/* One search of `visits` playouts on one thread (deterministic) from the
 * position in g; returns the move chosen. */
static int go_search_one_thread(int size, int visits)
{
	fake_net f;
	fake_go_init(&f, size, 8, 0);
	nn_backend *be = &f.be;
	evaluator *ev = eval_new(&be, 1, NN_ENC_LZ18, NULL, NULL, 0);
	int mv = search_move(ev, 1, visits, 1);
	eval_free(ev);
	return mv;
}

Test(mcts, go_ladder_breaker)
{
	/*     A B C D E F G
	 *  7  X X X X X O .      Black to move. White C3 has two liberties,
	 *  6  X . X X O O O      B3 and C2, and either atari starts a ladder
	 *  5  X X X X O . O      toward the empty corner. White D1 is the
	 *  4  X X X X O O O      breaker: it belongs to the living White group
	 *  3  . . O X O O O      on the right (eyes G7, F5, F2), and after B3,
	 *  2  . . . X O . O      C2 (libs B2 C1), B2, C1 White connects to it
	 *  1  . . . O O O O      and is out. C2 drives the other way, up the
	 * A file where A4 is Black: C2, B3 (libs A3 B2), B2, A3 (lib A2), A2
	 * takes three. So C2 is the one capturing move. The material
	 * Black and White each hold (18 and 19) keep the fake network's value
	 * off its tanh's flat ends. Checked by GNU Go (attack C3 answers C2
	 * only; after B3, B2, C1 or B1 it still defends C3, after C2 it does
	 * not) and by a full-width material minimax to 9 plies (C2 wins a
	 * stone, every other move nothing). With one thread C2 is chosen from
	 * about 3,000 playouts (at 2,500 it plays A2). Two threads with a
	 * virtual loss of 3 (Leela Zero's) held on to the broken ladder B3
	 * past 30,000 playouts: every other descent was turned away from the
	 * one good reply deep in the ladder, and its result diluted the line;
	 * with the default of 1 they find C2 from 4,000 (3 seeds of 3). */
	static const char *const rows[] = { "XXXXXO.", "X.XXOOO", "XXXXO.O", "XXXXOOO",
					    "..OXOOO", "...XO.O", "...OOOO" };
	go_diagram(7, 0.5, rows, GAME_BLACK);
	cr_assert_eq(go_search_one_thread(7, 12000), go_point("C2"), "the ladder at B3 is broken by D1");
	{
		fake_net f;
		fake_go_init(&f, 7, 8, 0);
		nn_backend *be = &f.be;
		evaluator *ev = eval_new(&be, 1, NN_ENC_LZ18, NULL, NULL, 0);
		cr_assert_eq(search_move(ev, 2, 12000, 5), go_point("C2"), "two threads");
		eval_free(ev);
	}

	/* The same position mirrored in the A1-G7 diagonal: the breaker now
	 * sits at A4 and the right move is B3, so the choice above is the
	 * breaker's doing, not the order in which moves are tried. */
	static const char *const mirrored[] = { "OOOOOO.", "O.OO.OO", "OOOOOOX", "OXXXXXX",
						"..OXXXX", "...XX.X", "...XXXX" };
	go_diagram(7, 0.5, mirrored, GAME_BLACK);
	cr_assert_eq(go_search_one_thread(7, 12000), go_point("B3"), "the ladder at C2 is broken by A4");

	/* Without the breaker (D1 empty) both ladders work, and so do B2, C1
	 * and B1 (GNU Go cannot defend C3 after any of them; the minimax
	 * agrees); A2 does not. From about 4,000 playouts (at 3,000 it plays
	 * A2). */
	static const char *const no_breaker[] = { "XXXXXO.", "X.XXOOO", "XXXXO.O", "XXXXOOO",
						  "..OXOOO", "...XO.O", "....OOO" };
	go_diagram(7, 0.5, no_breaker, GAME_BLACK);
	int mv = go_search_one_thread(7, 12000);
	const char *good[] = { "B3", "C2", "B2", "C1", "B1" };
	bool found = false;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		found |= mv == go_point(good[i]);
	cr_assert(found, "move %d captures nothing", mv);
}

/* An evaluator over fake_c4 (f must outlive it). */
static evaluator *fake_c4_evaluator(fake_net *f)
{
	fake_c4_init(f, 8, 0);
	nn_backend *be = &f->be;
	eval_options eo = eval_options_default();
	return eval_new(&be, 1, NN_ENC_C4, &eo, NULL, 0);
}

/* One thread, `visits` playouts, a small pool. */
static mcts_options one_thread_options(int visits)
{
	mcts_options o = mcts_options_default();
	o.threads = 1;
	o.max_visits = visits;
	o.max_memory = 16 << 20;
	return o;
}

/* Children of the root with at least one visit after `visits` playouts with
 * noise of weight 0 (the priors stay the network's) and the given root FPU
 * reductions. */
static int root_children_visited(float fpu_root, float fpu_root_noise, bool noise)
{
	c4_position(""); /* fake_c4: uniform priors */
	fake_net f;
	evaluator *ev = fake_c4_evaluator(&f);
	mcts_options o = one_thread_options(60);
	o.noise = noise;
	o.noise_eps = 0;
	o.fpu_root = fpu_root;
	o.fpu_root_noise = fpu_root_noise;
	mcts *m = mcts_new(ev, &o, NULL, 0);
	mcts_set_position(m, &g);
	mcts_search(m);
	mcts_child_info ci[8];
	int n = mcts_root_children(m, ci, 8), visited = 0;
	for (int i = 0; i < n; i++)
		visited += ci[i].visits > 0;
	mcts_free(m);
	eval_free(ev);
	return visited;
}

Test(mcts, root_fpu_under_noise_is_its_own)
{
	/* A reduction of 5 keeps every unvisited root child below any Q: one
	 * child takes every visit. */
	cr_assert_eq(root_children_visited(5, 5, true), 1);
	cr_assert_eq(root_children_visited(5, 0, false), 1, "without noise fpu_root applies");
	/* Under noise the default root reduction is 0: the unvisited children
	 * stand at the parent's value and get tried. */
	mcts_options d = mcts_options_default();
	cr_assert_eq(d.fpu_root_noise, 0.0f);
	cr_assert_geq(root_children_visited(5, d.fpu_root_noise, true), 3);
}

/* mcts_interrupt (the JSON analysis engine's terminate): from another
 * thread it ends a search without a limit; given before a search begins,
 * that search ends at once; mcts_clear lifts it. */
static void *interrupt_later(void *arg)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	mcts_interrupt(arg);
	return NULL;
}

Test(mcts, interrupt_from_another_thread)
{
	c4_position("");
	evaluator *ev = eval_new(NULL, 0, NN_ENC_C4, NULL, NULL, 0);
	mcts_options o = mcts_options_default();
	o.threads = 1;
	o.max_visits = 0; /* no limit: only the interrupt (or a full pool) ends it */
	o.max_memory = (size_t)256 << 20; /* touched only as the tree grows */
	char err[128];
	mcts *m = mcts_new(ev, &o, err, sizeof(err));
	cr_assert(m, "%s", err);
	mcts_set_position(m, &g);
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, interrupt_later, m), 0);
	mcts_search(m);
	pthread_join(t, NULL);
	mcts_stats s;
	mcts_get_stats(m, &s);
	cr_assert(!s.pool_full, "ended by the interrupt, not by the pool");
	cr_assert_gt(mcts_root_visits(m), 0);
	/* Sticky until cleared: the next search ends at once. */
	mcts_set_position(m, &g);
	int before = mcts_root_visits(m);
	mcts_search(m);
	cr_assert_eq(mcts_root_visits(m), before);
	mcts_clear(m);
	o.max_visits = 50;
	mcts_set_options(m, &o);
	mcts_set_position(m, &g);
	mcts_search(m);
	cr_assert_eq(mcts_root_visits(m), 50, "mcts_clear lifts the interrupt");
	mcts_free(m);
	eval_free(ev);
}
/* A search of `visits` playouts under Dirichlet noise with forced playouts
 * k, from Connect Four position `cols`, on fake net f: root children raw
 * (mcts_root_children) and as the policy target, by move. The search and
 * its evaluator (*ev) are the caller's to free. */
static mcts *forced_searched(const char *cols, float k, int visits, fake_net *f, evaluator **ev,
			     mcts_child_info *raw, mcts_child_info *target)
{
	c4_position(cols);
	*ev = fake_c4_evaluator(f);
	mcts_options o = one_thread_options(visits);
	o.noise = true;
	o.forced_k = k;
	o.seed = 3;
	mcts *m = mcts_new(*ev, &o, NULL, 0);
	mcts_set_position(m, &g);
	mcts_search(m);
	mcts_child_info a[8], b[8];
	int n = mcts_root_children(m, a, 8);
	cr_assert_eq(mcts_policy_target(m, b, 8), n);
	memset(raw, 0, sizeof(*raw) * 7);
	memset(target, 0, sizeof(*target) * 7);
	for (int i = 0; i < n; i++) {
		raw[a[i].move] = a[i];
		target[b[i].move] = b[i];
	}
	return m;
}

static void forced_search(const char *cols, float k, int visits, mcts_child_info *raw,
			  mcts_child_info *target)
{
	fake_net f;
	evaluator *ev;
	mcts_free(forced_searched(cols, k, visits, &f, &ev, raw, target));
	eval_free(ev);
}

Test(mcts, forced_playouts_and_policy_target_pruning)
{
	/* Column 1 wins at once: the search pours its visits there, and the
	 * other children (their priors the noise's, but column 2's, which
	 * fake_c4 makes large) would get hardly any. */
	mcts_child_info raw[7], target[7], raw0[7], target0[7];
	forced_search("121212", 2, 400, raw, target);
	forced_search("121212", 0, 400, raw0, target0);
	int total = 0, total0 = 0, best = 0;
	for (int c = 0; c < 7; c++) {
		total += raw[c].visits;
		total0 += raw0[c].visits;
		if (raw[c].visits > raw[best].visits)
			best = c;
	}
	/* Each child got its forced playouts (within the last one). Without
	 * forcing, some child falls short of that count. */
	bool short0 = false;
	for (int c = 0; c < 7; c++) {
		double forced = mcts_forced_playouts(2, raw[c].prior, total);
		cr_assert_geq(raw[c].visits + 1, forced, "column %d: %d visits, %g forced", c + 1,
			      raw[c].visits, forced);
		short0 |= raw0[c].visits + 1 < mcts_forced_playouts(2, raw0[c].prior, total0);
		/* Without forcing the target is the visits. */
		cr_assert_eq(target0[c].visits, raw0[c].visits);
	}
	cr_assert(short0, "forcing changed nothing here: the test shows nothing");
	/* Pruning: the best move keeps its visits; the others lose at most
	 * their forced playouts, none is left with one visit, and some lose
	 * them all. */
	cr_assert_eq(target[best].visits, raw[best].visits);
	int removed = 0, dropped = 0;
	for (int c = 0; c < 7; c++) {
		if (c == best)
			continue;
		int lost = raw[c].visits - target[c].visits;
		double forced = mcts_forced_playouts(2, raw[c].prior, total);
		cr_assert(lost >= 0 && (lost <= (int)forced || target[c].visits == 0),
			  "column %d lost %d of %d (forced %g)", c + 1, lost, raw[c].visits, forced);
		cr_assert_neq(target[c].visits, 1);
		removed += lost;
		dropped += raw[c].visits > 0 && target[c].visits == 0;
	}
	cr_assert_gt(removed, 0);
	cr_assert_gt(dropped, 0, "children visited only by forcing are pruned");
}

/* Self-play draws its move from the visits with forced playouts pruned, as
 * KataGo does: a child that only forcing visited is never played, however
 * often the draw is made at temperature 1. */
Test(mcts, temperature_draws_from_the_pruned_visits)
{
	fake_net f;
	evaluator *ev;
	mcts_child_info raw[7], target[7];
	mcts *m = forced_searched("121212", 2, 400, &f, &ev, raw, target);
	int total = 0, pruned_total = 0, best = 0;
	double dropped = 0;
	for (int c = 0; c < 7; c++) {
		total += raw[c].visits;
		pruned_total += target[c].visits;
		if (raw[c].visits > 0 && target[c].visits == 0)
			dropped += raw[c].visits;
		if (target[c].visits > target[best].visits)
			best = c;
	}
	/* The children only forcing visited hold this share of the visits:
	 * drawn from the raw visits, 400 draws would play one of them. */
	cr_assert_gt(dropped / total, 0.02, "too few forced visits for the test to show anything");
	int drawn_best = 0;
	for (int i = 0; i < 400; i++) {
		int mv = mcts_choose_move(m, 1.0f, false);
		cr_assert(mv >= 0 && mv < 7);
		cr_assert_gt(target[mv].visits, 0, "column %d drawn: %d visits, all forced", mv + 1,
			     raw[mv].visits);
		drawn_best += mv == best;
	}
	/* The draw still follows the pruned visits: the best child about
	 * its share of them (within five standard errors). */
	double p = (double)target[best].visits / pruned_total;
	cr_assert(fabs(drawn_best - 400 * p) <= 5 * sqrt(400 * p * (1 - p)) + 1,
		  "column %d drawn %d of 400, its share %.3f", best + 1, drawn_best, p);
	/* At temperature 0 the most visited child, pruned or not. */
	cr_assert_eq(mcts_choose_move(m, 0, false), best);
	cr_assert_eq(raw[best].visits, target[best].visits);
	mcts_free(m);
	eval_free(ev);
}

/* mcts_memory_for sizes a pool that takes every visit asked for on an
 * empty 19x19 board (a node per legal move at each expansion); a quarter
 * of it fills before. */
Test(mcts, memory_for_holds_the_visits)
{
	static game go19;
	game_params gp = game_params_default(GAME_KIND_GO);
	gp.size = 19;
	cr_assert_eq(game_init(&go19, &gp), GAME_OK);
	evaluator *ev = eval_new(NULL, 0, NN_ENC_GO_NATIVE, NULL, NULL, 0);
	const int visits = 3000;
	for (int quarter = 0; quarter < 2; quarter++) {
		mcts_options o = mcts_options_default();
		o.threads = 1;
		o.max_visits = visits;
		o.max_memory = mcts_memory_for(visits, game_num_actions(&go19)) / (quarter ? 4 : 1);
		char err[128];
		mcts *m = mcts_new(ev, &o, err, sizeof(err));
		cr_assert(m, "%s", err);
		mcts_set_position(m, &go19);
		mcts_search(m);
		mcts_stats s;
		mcts_get_stats(m, &s);
		if (quarter) {
			cr_assert(s.pool_full, "a quarter of the memory fills");
			cr_assert_lt(mcts_root_visits(m), visits);
		} else {
			cr_assert_not(s.pool_full);
			cr_assert_eq(mcts_root_visits(m), visits);
		}
		mcts_free(m);
	}
	eval_free(ev);
}

/* What a search leaves behind: the root's children, its move and the
 * principal variation of its best child. */
typedef struct search_snapshot {
	int n;
	mcts_child_info ci[GAME_MAX_ACTIONS];
	int move;
	int pv[64], pv_len;
	int root_visits;
} search_snapshot;

static void snapshot_take(mcts *m, search_snapshot *s)
{
	memset(s, 0, sizeof(*s));
	s->n = mcts_root_children(m, s->ci, GAME_MAX_ACTIONS);
	s->move = mcts_choose_move(m, 1, false); /* drawn: the rng must agree too */
	s->pv_len = mcts_pv(m, s->ci[0].move, s->pv, 64);
	s->root_visits = mcts_root_visits(m);
}

static void snapshot_same(const search_snapshot *a, const search_snapshot *b, const char *what)
{
	cr_assert_gt(a->n, 0, "%s: no children", what);
	cr_assert_eq(a->n, b->n, "%s", what);
	cr_assert_eq(a->root_visits, b->root_visits, "%s", what);
	for (int i = 0; i < a->n; i++) {
		cr_assert_eq(a->ci[i].move, b->ci[i].move, "%s: child %d", what, i);
		cr_assert_eq(a->ci[i].visits, b->ci[i].visits, "%s: child %d", what, i);
		cr_assert_eq(memcmp(&a->ci[i].q, &b->ci[i].q, sizeof(float)), 0, "%s: bit for bit", what);
		cr_assert_eq(memcmp(&a->ci[i].prior, &b->ci[i].prior, sizeof(float)), 0, "%s", what);
	}
	cr_assert_eq(a->move, b->move, "%s", what);
	cr_assert_eq(a->pv_len, b->pv_len, "%s", what);
	cr_assert_eq(memcmp(a->pv, b->pv, sizeof(int) * (size_t)a->pv_len), 0, "%s", what);
}

/* Runs the searches ms[0..n) (positions set) together through the round
 * API, as a self-play worker does: each round takes every live search's
 * leaves and evaluates them all as one batch. */
static void search_together(evaluator *ev, mcts **ms, int n, int gather)
{
	eval_scratch *sc = eval_scratch_new(ev, n * gather);
	cr_assert(sc);
	const game *games[64];
	float *policies[64];
	float values[64];
	bool live[16];
	mcts_round r[16];
	int n_leaves[16];
	cr_assert(n <= 16 && n * gather <= 64);
	for (int i = 0; i < n; i++)
		live[i] = mcts_begin(ms[i]);
	for (;;) {
		int total = 0, n_live = 0;
		for (int i = 0; i < n; i++) {
			if (!live[i])
				continue;
			n_live++;
			n_leaves[i] = mcts_gather(ms[i], &r[i]);
			cr_assert_leq(n_leaves[i], gather);
			for (int k = 0; k < n_leaves[i]; k++) {
				games[total + k] = r[i].games[k];
				policies[total + k] = r[i].policies[k];
			}
			total += n_leaves[i];
		}
		if (n_live == 0)
			break;
		if (total > 0)
			cr_assert_eq(eval_batch(ev, sc, total, games, policies, values, NULL), 0);
		total = 0;
		for (int i = 0; i < n; i++) {
			if (!live[i])
				continue;
			for (int k = 0; k < n_leaves[i]; k++)
				r[i].values[k] = values[total + k];
			total += n_leaves[i];
			mcts_apply(ms[i], n_leaves[i]);
			if (mcts_done(ms[i])) {
				mcts_end(ms[i]);
				live[i] = false;
			}
		}
	}
	eval_scratch_free(sc);
}

Test(mcts, round_api_gives_the_search_of_mcts_search)
{
	c4_position("44");
	fake_net f;
	fake_c4_init(&f, 8, 0);
	nn_backend *be = &f.be;
	eval_options eo = eval_options_default();
	eo.seed = 9;
	for (int gather = 1; gather <= 4; gather += 3) {
		/* Two searches in a row, the second on the kept subtree, with
		 * noise at the root: mcts_search, then the round API. */
		search_snapshot s[2][2];
		for (int run = 0; run < 2; run++) {
			evaluator *ev = eval_new(&be, 1, NN_ENC_C4, &eo, NULL, 0);
			mcts_options o = mcts_options_default();
			o.threads = 1;
			o.gather = gather;
			o.max_visits = 300;
			o.noise = true;
			o.seed = 5;
			o.max_memory = 16 << 20;
			mcts *m = mcts_new(ev, &o, NULL, 0);
			static game pos;
			pos = g;
			for (int step = 0; step < 2; step++) {
				mcts_set_position(m, &pos);
				if (run == 0)
					mcts_search(m);
				else
					search_together(ev, &m, 1, gather);
				snapshot_take(m, &s[run][step]);
				cr_assert_eq(game_play(&pos, s[run][step].move), GAME_OK);
			}
			mcts_free(m);
			eval_free(ev);
		}
		snapshot_same(&s[0][0], &s[1][0], gather == 1 ? "gather 1, first" : "gather 4, first");
		snapshot_same(&s[0][1], &s[1][1], gather == 1 ? "gather 1, reused" : "gather 4, reused");
	}
}

Test(mcts, round_api_drives_several_searches_as_one_batch)
{
	static const char *const positions[3] = { "44", "1", "3342" };
	fake_net f;
	fake_c4_init(&f, 16, 0);
	nn_backend *be = &f.be;
	eval_options eo = eval_options_default();
	eo.max_batch = 16;
	/* Each answer a function of its position alone, however the leaves
	 * are grouped. */
	eo.random_symmetry = 0;
	search_snapshot alone[3], together[3];
	mcts *ms[3];
	static game pos[3];
	evaluator *shared = eval_new(&be, 1, NN_ENC_C4, &eo, NULL, 0);
	for (int i = 0; i < 3; i++) {
		c4_position(positions[i]);
		pos[i] = g;
		mcts_options o = mcts_options_default();
		o.threads = 1;
		o.max_visits = 100 + 50 * i; /* they end at different rounds */
		o.noise = true;
		o.seed = (uint64_t)(11 + i);
		o.max_memory = 16 << 20;
		evaluator *ev = eval_new(&be, 1, NN_ENC_C4, &eo, NULL, 0);
		mcts *m = mcts_new(ev, &o, NULL, 0);
		mcts_set_position(m, &pos[i]);
		mcts_search(m);
		snapshot_take(m, &alone[i]);
		mcts_free(m);
		eval_free(ev);
		ms[i] = mcts_new(shared, &o, NULL, 0);
		mcts_set_position(ms[i], &pos[i]);
	}
	search_together(shared, ms, 3, 1);
	for (int i = 0; i < 3; i++) {
		snapshot_take(ms[i], &together[i]);
		snapshot_same(&alone[i], &together[i], positions[i]);
		mcts_free(ms[i]);
	}
	eval_stats es;
	eval_get_stats(shared, &es);
	cr_assert(es.batches > 0 && es.evals > es.batches * 2,
		  "three searches on one thread share batches: %llu evals in %llu batches",
		  (unsigned long long)es.evals, (unsigned long long)es.batches);
	eval_free(shared);
}

/* A Gumbel search (mcts_options.gumbel) of `visits` playouts on one
 * thread from the position in g, considering gumbel_m moves. */
static mcts *gumbel_search_threads(evaluator *ev, int threads, int visits, int gumbel_m,
				   uint64_t seed)
{
	mcts_options o = one_thread_options(visits);
	o.threads = threads;
	o.gumbel = true;
	o.gumbel_m = gumbel_m;
	o.seed = seed;
	char err[128];
	mcts *m = mcts_new(ev, &o, err, sizeof(err));
	cr_assert(m, "%s", err);
	mcts_set_position(m, &g);
	mcts_search(m);
	cr_assert_eq(mcts_root_visits(m), visits);
	return m;
}

static mcts *gumbel_search(evaluator *ev, int visits, int gumbel_m, uint64_t seed)
{
	return gumbel_search_threads(ev, 1, visits, gumbel_m, seed);
}

/* Sequential halving on an empty 9x9 board (82 moves, uniform priors,
 * neutral values): 16 moves sampled, then 8, 4 and 2, each phase a
 * quarter of the 199 playouts left after the root's: 3 visits each to
 * 16, 6 more to 8 (9), 12 more to 4 (21), 24 more to 2 (45), and the 7
 * left to the last two. The seed decides which moves are sampled. */
Test(mcts, gumbel_visits_follow_sequential_halving)
{
	game_params p = { .kind = GAME_KIND_GO, .size = 9, .komi = 7.5 };
	game_init(&g, &p);
	evaluator *ev = eval_new(NULL, 0, NN_ENC_LZ18, NULL, NULL, 0);
	bool sampled[2][GAME_MAX_ACTIONS] = { { false } };
	for (int run = 0; run < 2; run++) {
		mcts *m = gumbel_search(ev, 200, 16, 11 + (uint64_t)run);
		mcts_child_info ci[GAME_MAX_ACTIONS];
		int n = mcts_root_children(m, ci, GAME_MAX_ACTIONS);
		cr_assert_eq(n, 82);
		int by_visits[4] = { 0 }, top = 0, visited = 0;
		for (int i = 0; i < n; i++) {
			int v = ci[i].visits;
			visited += v > 0;
			sampled[run][ci[i].move] = v > 0;
			by_visits[0] += v == 3;
			by_visits[1] += v == 9;
			by_visits[2] += v == 21;
			by_visits[3] += v >= 45;
			top += v >= 45 ? v : 0;
		}
		cr_assert_eq(visited, 16, "16 moves considered, not %d", visited);
		cr_assert_eq(by_visits[0], 8);
		cr_assert_eq(by_visits[1], 4);
		cr_assert_eq(by_visits[2], 2);
		cr_assert_eq(by_visits[3], 2);
		cr_assert_eq(top, 199 - 8 * 3 - 4 * 9 - 2 * 21);
		/* The move is one of the last two. */
		int mv = mcts_choose_move(m, 1, false);
		cr_assert(mv == ci[0].move || mv == ci[1].move);
		mcts_free(m);
	}
	cr_assert_neq(memcmp(sampled[0], sampled[1], sizeof(sampled[0])), 0,
		      "another seed samples other moves");
	eval_free(ev);
}

/* With 32 playouts and uniform priors, the winning column of Connect
 * Four is kept to the end and chosen, and the improved policy puts most
 * of its mass there; the search's value is that of the win. */
Test(mcts, gumbel_takes_the_win)
{
	c4_position("121212"); /* X to move; column 1 wins at once */
	evaluator *ev = eval_new(NULL, 0, NN_ENC_C4, NULL, NULL, 0);
	for (uint64_t seed = 1; seed <= 4; seed++) {
		/* Seeds 3 and 4 on three threads: the halving is shared. */
		mcts *m = gumbel_search_threads(ev, seed <= 2 ? 1 : 3, 32, 16, seed);
		cr_assert_eq(mcts_choose_move(m, 0, false), 0, "seed %d", (int)seed);
		mcts_child_info t[8];
		int n = mcts_policy_target(m, t, 8), sum = 0;
		for (int i = 0; i < n; i++)
			sum += t[i].visits;
		cr_assert(sum >= MCTS_GUMBEL_TARGET_SCALE - 7 && sum <= MCTS_GUMBEL_TARGET_SCALE + 7,
			  "the target sums to %d", sum);
		cr_assert_eq(t[0].move, 0);
		cr_assert_gt(t[0].visits, 900);
		cr_assert_gt(mcts_search_value(m), 0.9f);
		cr_assert_lt(mcts_root_value(m), mcts_search_value(m),
			     "the root's mean counts the considered losing moves");
		mcts_free(m);
	}
	eval_free(ev);
}

/* The target is softmax(log prior + sigma(completed Q)), recomputed here
 * from the children the search reports and the network's value of the
 * root (an unvisited child's completed Q is the mixed value). */
Test(mcts, gumbel_target_is_the_improved_policy)
{
	c4_position("4455");
	fake_net f;
	evaluator *ev = fake_c4_evaluator(&f);
	mcts *m = gumbel_search(ev, 12, 4, 5);
	mcts_child_info ci[8], t[8];
	int n = mcts_root_children(m, ci, 8);
	cr_assert_eq(mcts_policy_target(m, t, 8), n);
	float logits[7], raw;
	fake_c4_expect(&g, logits, &raw);
	double sum_n = 0, sum_p = 0, sum_pq = 0;
	int max_n = 0, unvisited = 0;
	for (int i = 0; i < n; i++) {
		if (ci[i].visits > 0) {
			sum_n += ci[i].visits;
			sum_p += ci[i].prior;
			sum_pq += ci[i].prior * ci[i].q;
		}
		unvisited += ci[i].visits == 0;
		max_n = ci[i].visits > max_n ? ci[i].visits : max_n;
	}
	cr_assert_eq(unvisited, 3, "4 of 7 moves considered");
	double mixed = (raw + sum_n * sum_pq / sum_p) / (1 + sum_n);
	double w[8], total = 0;
	for (int i = 0; i < n; i++) {
		double q = ci[i].visits > 0 ? ci[i].q : mixed;
		w[i] = ci[i].prior * exp((50.0 + max_n) * (q + 1) / 2);
		total += w[i];
	}
	for (int i = 0; i < n; i++) {
		int want = (int)lround(w[i] / total * MCTS_GUMBEL_TARGET_SCALE);
		int got = -1;
		for (int k = 0; k < n; k++)
			if (t[k].move == ci[i].move)
				got = t[k].visits;
		cr_assert(abs(got - want) <= 2, "column %d: target %d, improved policy %d",
			  ci[i].move + 1, got, want);
	}
	mcts_free(m);
	eval_free(ev);
}

/* A CPU backend of a random 9x9 Go network with the given heads, and an
 * evaluator over it that always takes symmetry 0. */
static evaluator *go9_heads_evaluator(int heads, nn_net **net, nn_backend **be)
{
	char err[256];
	game_params gp = game_params_sized(GAME_KIND_GO, 9, 7.5);
	nn_arch a = nn_arch_default(&gp, 1, 8);
	nn_arch_set_heads(&a, heads);
	*net = nn_net_new(&a, err, sizeof(err));
	cr_assert(*net, "%s", err);
	nn_net_init_random(*net, 3);
	nn_backend_options bo = nn_backend_options_default();
	bo.threads = 1;
	*be = nn_backend_new(&nn_backend_cpu, *net, 8, &bo, err, sizeof(err));
	cr_assert(*be, "%s", err);
	eval_options eo = eval_options_default();
	eo.random_symmetry = 0;
	evaluator *ev = eval_new(be, 1, a.encoding, &eo, err, sizeof(err));
	cr_assert(ev, "%s", err);
	return ev;
}

/* With a score head, every playout backs the score up beside the value:
 * the root's mean times its visits is the root's own answer plus each
 * child's mean times its visits, all from the player to move at the root
 * (a sign lost on the way, or a playout left out, breaks it); without the
 * head there is no score. */
Test(mcts, scores_are_backed_up_beside_the_values)
{
	nn_net *net;
	nn_backend *be;
	evaluator *ev = go9_heads_evaluator(NN_HEAD_OWN | NN_HEAD_SCORE, &net, &be);
	game_params gp = game_params_sized(GAME_KIND_GO, 9, 7.5);
	game_init(&g, &gp);
	cr_assert_eq(game_play(&g, 40), GAME_OK);
	mcts_options o = mcts_options_default();
	o.threads = 1;
	o.max_visits = 60;
	o.max_memory = 16 << 20;
	char err[128];
	mcts *m = mcts_new(ev, &o, err, sizeof(err));
	cr_assert(m, "%s", err);
	mcts_set_position(m, &g);
	mcts_search(m);
	cr_assert_eq(mcts_root_visits(m), 60);
	float pol[GAME_MAX_ACTIONS], v, own[81], root_answer;
	cr_assert_eq(eval_raw_heads(ev, &g, 0, pol, &v, own, &root_answer), 0);
	mcts_child_info ci[GAME_MAX_ACTIONS];
	int n = mcts_root_children(m, ci, GAME_MAX_ACTIONS), deep = 0;
	double sum = root_answer;
	for (int i = 0; i < n; i++) {
		if (ci[i].visits == 0) {
			cr_assert(isnan(ci[i].score), "an unvisited move has no score");
			continue;
		}
		cr_assert(!isnan(ci[i].score));
		sum += ci[i].visits * (double)ci[i].score;
		deep += ci[i].visits > 1;
	}
	cr_assert_gt(deep, 0, "some move was searched below its first visit");
	float root = mcts_root_score(m);
	cr_assert_float_eq(60 * (double)root, sum, 1e-3 * (1 + fabs(sum)), "root %g x 60, sum %g",
			   root, sum);
	mcts_free(m);
	eval_free(ev);
	nn_backend_free(be);
	nn_net_free(net);

	ev = go9_heads_evaluator(NN_HEAD_OWN, &net, &be);
	m = mcts_new(ev, &o, err, sizeof(err));
	cr_assert(m, "%s", err);
	mcts_set_position(m, &g);
	mcts_search(m);
	cr_assert(isnan(mcts_root_score(m)), "no score head, no score");
	n = mcts_root_children(m, ci, GAME_MAX_ACTIONS);
	for (int i = 0; i < n; i++)
		cr_assert(isnan(ci[i].score));
	mcts_free(m);
	eval_free(ev);
	nn_backend_free(be);
	nn_net_free(net);
}
