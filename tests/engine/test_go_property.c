/* Go property tests: random games where every move keeps the board
 * consistent, the incremental hash right, and undo exact; playouts on
 * copies. Seeds are fixed, so a failure repeats. */
#include <criterion/criterion.h>

#include <string.h>

#include "engine/go.h"
#include "engine/rng.h"

static go_board board, saved, scratch;

/* Everything that decides play and the network's input, compared. */
static void expect_same(const go_board *a, const go_board *b, const char *what, int move_no)
{
	int n = a->size;
	cr_assert_eq(a->hash, b->hash, "%s, move %d: hash", what, move_no);
	cr_assert_eq(go_hash(a), go_hash(b), "%s, move %d: go_hash", what, move_no);
	cr_assert_eq(a->to_move, b->to_move, "%s, move %d: to_move", what, move_no);
	cr_assert_eq(a->passes, b->passes, "%s, move %d: passes", what, move_no);
	cr_assert_eq(a->ko_point, b->ko_point, "%s, move %d: ko", what, move_no);
	cr_assert_eq(a->n_moves, b->n_moves, "%s, move %d: n_moves", what, move_no);
	cr_assert_eq(a->n_history, b->n_history, "%s, move %d: n_history", what, move_no);
	cr_assert_eq(memcmp(a->cell, b->cell, sizeof(a->cell)), 0, "%s, move %d: cells", what, move_no);
	cr_assert_eq(memcmp(a->history, b->history, (size_t)a->n_history * sizeof(a->history[0])), 0,
		     "%s, move %d: history", what, move_no);
	cr_assert_eq(memcmp(a->past_hash, b->past_hash, (size_t)(a->n_history + 1) * sizeof(uint64_t)), 0,
		     "%s, move %d: past hashes", what, move_no);
	for (int y = 0; y < n; y++)
		for (int x = 0; x < n; x++) {
			cr_assert_eq(go_liberties_at(a, x, y), go_liberties_at(b, x, y),
				     "%s, move %d: liberties at %d,%d", what, move_no, x, y);
			for (int k = 0; k < GO_PAST_POSITIONS; k++)
				cr_assert_eq(go_color_at_past(a, k, x, y), go_color_at_past(b, k, x, y),
					     "%s, move %d: %d moves ago at %d,%d", what, move_no, k, x, y);
		}
}

/* Plays `games` random games on `size`: a random legal move, or now and
 * then a pass. After every move the board must check out; on every
 * `undo_every`-th move, undo must give back the saved board exactly and
 * replaying the move must give the same board again. */
static void random_games(int size, int games, int undo_every, uint64_t seed)
{
	static int moves[GO_MAX_SIZE * GO_MAX_SIZE + 1];
	uint64_t rng = seed;
	long total = 0;

	for (int g = 0; g < games; g++) {
		cr_assert_eq(go_init(&board, size, 7.5), 0);
		/* Some games start from a handicap or loose setup stones. */
		if (g % 5 == 1 && size >= 9) {
			int pts[9], n = go_fixed_handicap_points(size, 2 + g % 3, pts);
			cr_assert_eq(go_set_handicap(&board, pts, n), 0);
		} else if (g % 5 == 2) {
			for (int i = 0; i < 4; i++)
				go_place_stone(&board, i % 2, (int)(rng_xorshift64(&rng) % (uint64_t)(size * size)));
		}
		cr_assert(go_check(&board));
		for (int m = 0; !go_is_over(&board); m++) {
			int n = go_legal_moves(&board, moves);
			cr_assert_gt(n, 0, "pass is always legal");
			cr_assert_eq(moves[n - 1], go_pass_move(&board));
			int move;
			if (n == 1 || rng_xorshift64(&rng) % 40 == 0)
				move = go_pass_move(&board);
			else
				move = moves[rng_xorshift64(&rng) % (uint64_t)(n - 1)];
			bool check_undo = undo_every && m % undo_every == undo_every - 1;
			if (check_undo)
				saved = board;
			int rc = go_play(&board, move);
			if (rc == -2)
				break; /* history full after many setup stones */
			cr_assert_eq(rc, 0, "size %d game %d move %d: %d listed legal", size, g, m, move);
			cr_assert(go_check(&board), "size %d game %d move %d (%d)", size, g, m, move);
			cr_assert_eq(board.hash, go_hash_recompute(&board));
			total++;
			if (!check_undo)
				continue;
			scratch = board;
			cr_assert(go_undo(&board));
			cr_assert(go_check(&board));
			expect_same(&board, &saved, "undo", m);
			cr_assert_eq(go_play(&board, move), 0);
			expect_same(&board, &scratch, "redo", m);
		}
	}
	cr_assert_gt(total, games, "games were played");
}

Test(go_property, random_games_5x5, .timeout = 60)
{
	random_games(5, 1000, 7, 0x5eed0005);
}

Test(go_property, random_games_9x9, .timeout = 60)
{
	random_games(9, 200, 23, 0x5eed0009);
}

Test(go_property, random_games_13x13, .timeout = 60)
{
	random_games(13, 40, 61, 0x5eed0013);
}

Test(go_property, random_games_19x19, .timeout = 60)
{
	random_games(19, 20, 131, 0x5eed0019);
}

/* go_copy (the descent's copy, which leaves the history arrays' unused
 * end and the per-point arrays' room beyond a smaller board alone) gives
 * a board that plays on as the original: copied onto
 * garbage at every few moves of random games with captures, each copy
 * checks out, compares equal, and lists the same legal moves (superko
 * included) as the original for the rest of the game. */
Test(go_property, copies_play_on_as_the_original, .timeout = 60)
{
	static int moves[GO_MAX_SIZE * GO_MAX_SIZE + 1], moves2[GO_MAX_SIZE * GO_MAX_SIZE + 1];
	uint64_t rng = 0xc0b1;
	for (int g = 0; g < 30; g++) {
		int size = g % 3 == 0 ? 5 : g % 3 == 1 ? 9 : 19;
		cr_assert_eq(go_init(&board, size, 7.5), 0);
		for (int m = 0; !go_is_over(&board); m++) {
			int n = go_legal_moves(&board, moves);
			int move = n == 1 || rng_xorshift64(&rng) % 40 == 0
					   ? go_pass_move(&board)
					   : moves[rng_xorshift64(&rng) % (uint64_t)(n - 1)];
			cr_assert_eq(go_play(&board, move), 0);
			if (m % 11 != 5)
				continue;
			memset(&scratch, 0xab, sizeof(scratch));
			go_copy(&scratch, &board);
			cr_assert(go_check(&scratch), "size %d game %d move %d", size, g, m);
			expect_same(&scratch, &board, "copy", m);
			/* The copy and a whole-struct copy play on alike. */
			saved = board;
			while (!go_is_over(&saved)) {
				int n1 = go_legal_moves(&saved, moves), n2 = go_legal_moves(&scratch, moves2);
				cr_assert_eq(n1, n2, "game %d move %d: legal moves", g, m);
				cr_assert_eq(memcmp(moves, moves2, sizeof(int) * (size_t)n1), 0);
				int mv = n1 == 1 || rng_xorshift64(&rng) % 30 == 0
						 ? go_pass_move(&saved)
						 : moves[rng_xorshift64(&rng) % (uint64_t)(n1 - 1)];
				cr_assert_eq(go_play(&saved, mv), 0);
				cr_assert_eq(go_play(&scratch, mv), 0);
			}
			expect_same(&scratch, &saved, "copy played out", m);
			cr_assert_eq(go_score(&scratch), go_score(&saved));
		}
	}
}

/* Superko never lets a game repeat a position: every hash in a finished
 * random game's history is unique, passes aside. */
Test(go_property, no_position_repeats)
{
	static int moves[26];
	uint64_t rng = 77;
	for (int g = 0; g < 100; g++) {
		cr_assert_eq(go_init(&board, 5, 0.5), 0);
		while (!go_is_over(&board)) {
			int n = go_legal_moves(&board, moves);
			int move = n == 1 || rng_xorshift64(&rng) % 50 == 0 ? moves[n - 1]
								    : moves[rng_xorshift64(&rng) % (uint64_t)(n - 1)];
			cr_assert_eq(go_play(&board, move), 0);
		}
		for (int i = 0; i < board.n_history; i++) {
			if (board.history[i].point == go_pass_move(&board))
				continue;
			for (int j = 0; j <= i; j++)
				cr_assert_neq(board.past_hash[i + 1], board.past_hash[j],
					      "game %d: position %d repeats %d", g, i + 1, j);
		}
	}
}

/* Every move listed legal leads to a position the game has not had (the
 * hash of its stones against every earlier one's, scanned here), in
 * random games on small boards where captures, kos and regrown areas
 * are common: a move that captures nothing is taken as new without a
 * lookup only when its board has fewer empty points than any before. */
Test(go_property, listed_moves_make_new_positions, .timeout = 60)
{
	static int moves[GO_MAX_SIZE * GO_MAX_SIZE + 1];
	uint64_t rng = 4242;
	long checked = 0, with_captures = 0;
	for (int g = 0; g < 150; g++) {
		int size = g % 3 == 2 ? 7 : 5;
		cr_assert_eq(go_init(&board, size, 0.5), 0);
		while (!go_is_over(&board) && board.n_history < 400) {
			int n = go_legal_moves(&board, moves);
			for (int i = 0; i + 1 < n; i++) {
				scratch = board;
				cr_assert_eq(go_play(&scratch, moves[i]), 0);
				with_captures += scratch.n_empty >= board.n_empty;
				for (int j = 0; j <= board.n_history; j++)
					cr_assert_neq(scratch.hash, board.past_hash[j],
						      "game %d, move %d: %d repeats position %d", g,
						      board.n_history, moves[i], j);
				checked++;
			}
			int move = n == 1 || rng_xorshift64(&rng) % 50 == 0 ? moves[n - 1]
								    : moves[rng_xorshift64(&rng) % (uint64_t)(n - 1)];
			cr_assert_eq(go_play(&board, move), 0);
			cr_assert(go_check(&board));
		}
	}
	cr_assert_gt(checked, 10000);
	cr_assert_gt(with_captures, 100, "captures were among the moves checked");
}

Test(go_property, playouts_on_copies)
{
	static go_board start;
	static int moves[GO_MAX_SIZE * GO_MAX_SIZE + 1];
	const int sizes[] = { 5, 9, 13, 19 };
	uint64_t rng = 12345;

	for (int si = 0; si < 4; si++) {
		int size = sizes[si];
		for (int g = 0; g < 20; g++) {
			/* A random opening of up to size * 2 moves, then playouts
			 * from copies of it. */
			cr_assert_eq(go_init(&start, size, 7.5), 0);
			int opening = (int)(rng_xorshift64(&rng) % (uint64_t)(2 * size));
			for (int m = 0; m < opening && !go_is_over(&start); m++) {
				int n = go_legal_moves(&start, moves);
				cr_assert_eq(go_play(&start, moves[rng_xorshift64(&rng) % (uint64_t)(n - 1)]), 0);
			}
			saved = start;
			for (int k = 0; k < 5; k++) {
				board = start;
				uint64_t seed = rng_xorshift64(&rng);
				uint64_t r1 = seed;
				int played = go_playout(&board, &r1);
				cr_assert_gt(played, 0, "size %d", size);
				cr_assert(board.passes >= 2 || board.n_moves >= 3 * size * size,
					  "the playout ran to the end");
				cr_assert_eq(board.n_moves, start.n_moves + played);
				cr_assert(go_check(&board), "size %d game %d playout %d", size, g, k);
				/* The same seed plays the same game. */
				scratch = start;
				uint64_t r2 = seed;
				cr_assert_eq(go_playout(&scratch, &r2), played);
				cr_assert_eq(r1, r2);
				cr_assert_eq(memcmp(scratch.cell, board.cell, sizeof(board.cell)), 0);
			}
			expect_same(&start, &saved, "playout copies leave the original", g);
		}
	}
}

/* In a playout nobody fills a true eye of their own: at the end every empty
 * point is either owned by one colour or a simple-ko/suicide leftover. */
Test(go_property, playouts_keep_eyes)
{
	uint64_t rng = 99;
	for (int g = 0; g < 50; g++) {
		cr_assert_eq(go_init(&board, 9, 7.5), 0);
		go_playout(&board, &rng);
		cr_assert(go_check(&board));
		int stones = 0;
		for (int y = 0; y < 9; y++)
			for (int x = 0; x < 9; x++)
				stones += go_color_at(&board, x, y) != GO_EMPTY;
		/* Both sides kept eyes, so the board is neither empty nor
		 * full. */
		cr_assert_gt(stones, 40, "game %d", g);
		cr_assert_lt(stones, 81, "game %d", g);
	}
}
