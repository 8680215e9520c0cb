/* The window's growth (KataGo's power law), its narrowing, and the reuse
 * cap. */
#include <criterion/criterion.h>
#include <math.h>

#include "data/record.h"
#include "engine/game_desc.h"
#include "nn/encode.h"
#include "tests/train/train_util.h"
#include "train/replay.h"

static void seven_moves(game_record *r, int shift) { tu_column_game(r, shift, false); }

/* The formula as KataGo's shuffler writes it (scale = min, no offsets). */
static double katago_window(double n, double min, double alpha, double beta)
{
	double w = (pow(n, alpha) - pow(min, alpha)) / (alpha * pow(min, alpha - 1)) * beta + min;
	return w < min ? min : w;
}

Test(replay, window_follows_the_power_law)
{
	const int64_t min = 10000;
	cr_assert_eq(replay_window_size(0, min, 0.75, 0.4, 0), min);
	cr_assert_eq(replay_window_size(min / 2, min, 0.75, 0.4, 0), min);
	cr_assert_eq(replay_window_size(min, min, 0.75, 0.4, 0), min);
	for (int64_t n = min; n <= 1000 * min; n *= 3) {
		double want = katago_window((double)n, (double)min, 0.75, 0.4);
		int64_t got = replay_window_size(n, min, 0.75, 0.4, 0);
		cr_assert(fabs((double)got - want) <= 1.0, "N %lld: %lld, KataGo's %.1f",
			  (long long)n, (long long)got, want);
		/* It grows, ever more slowly, and stays below N. */
		cr_assert_lt(got, n > min ? n : n + 1);
	}
	/* First slope beta; then the growth goes as N^alpha: 10 times the
	 * data, about 10^0.75 times the growth. */
	double slope = (double)(replay_window_size(min + 1000, min, 0.75, 0.4, 0) - min) / 1000;
	cr_assert(fabs(slope - 0.4) < 0.01, "first slope %g", slope);
	double g1 = (double)(replay_window_size(100 * min, min, 0.75, 0.4, 0) - min);
	double g2 = (double)(replay_window_size(1000 * min, min, 0.75, 0.4, 0) - min);
	cr_assert(fabs(g2 / g1 - pow(10, 0.75)) < 0.2, "growth %g", g2 / g1);
	/* alpha 1: linear; beta 0: fixed; max caps it. */
	cr_assert_eq(replay_window_size(3 * min, min, 1, 0.5, 0), min + min);
	cr_assert_eq(replay_window_size(50 * min, min, 0.75, 0, 0), min);
	cr_assert_eq(replay_window_size(1000 * min, min, 0.75, 0.4, 3 * min), 3 * min);
}

Test(replay, window_narrows_and_widens_to_its_size)
{
	replay_buffer *rb = replay_new(100);
	game_record r;
	seven_moves(&r, 0);
	for (int i = 0; i < 30; i++)
		cr_assert_eq(replay_add_game(rb, &r), 0);
	/* Full: at least 100 positions, less than one game more. */
	cr_assert(replay_positions(rb) >= 100 && replay_positions(rb) < 107);
	replay_set_window(rb, 20);
	cr_assert(replay_positions(rb) >= 20 && replay_positions(rb) < 27, "%lld",
		  (long long)replay_positions(rb));
	for (int i = 0; i < 5; i++)
		cr_assert_eq(replay_add_game(rb, &r), 0);
	cr_assert(replay_positions(rb) < 27, "the narrowed window holds");
	/* Widening is bounded by replay_new's size. */
	replay_set_window(rb, 1000000);
	for (int i = 0; i < 30; i++)
		cr_assert_eq(replay_add_game(rb, &r), 0);
	cr_assert(replay_positions(rb) >= 100 && replay_positions(rb) < 107);
	cr_assert_eq(replay_added(rb), 65 * 7);
	record_free(&r);
	replay_free(rb);
}

Test(replay, reuse_cap_holds)
{
	game_params p = game_params_default(GAME_KIND_CONNECT4);
	nn_arch a = nn_arch_default(&p, 1, 8);
	train_batch *b = train_batch_new(&a, 64, 0);
	game_record r0, r1;
	seven_moves(&r0, 0);
	seven_moves(&r1, 2);
	uint64_t rng = 3;

	/* One game of 7 positions, cap 3: three draws of 7 are 3 draws per
	 * position on average; the fourth would pass the cap. */
	replay_buffer *rb = replay_new(1000);
	replay_set_reuse_cap(rb, 3);
	cr_assert_eq(replay_add_game(rb, &r0), 0);
	for (int k = 0; k < 3; k++) {
		cr_assert_eq(replay_sample(rb, &rng, a.encoding, 7, b), 0, "draw %d", k);
		cr_assert(replay_oldest_reuse(rb) <= 3 + 1e-9);
	}
	cr_assert_float_eq(replay_oldest_reuse(rb), 3.0, 1e-9);
	cr_assert_eq(replay_sample(rb, &rng, a.encoding, 7, b), REPLAY_USED_UP);
	cr_assert_eq(replay_positions(rb), 0);
	/* Draws for statistics do not count, and find nothing left. */
	cr_assert_eq(replay_sample_uncounted(rb, &rng, a.encoding, 7, b), -1);
	/* A new game: sampling resumes, from it alone. */
	cr_assert_eq(replay_add_game(rb, &r1), 0);
	cr_assert_eq(replay_sample(rb, &rng, a.encoding, 7, b), 0);
	cr_assert_float_eq(replay_oldest_reuse(rb), 1.0, 1e-9);
	replay_free(rb);

	/* Oldest first: game 0 drawn 2.5 times, then game 1 comes; each draw
	 * of 7 from 14 positions adds 0.5: game 0 reaches 3, then leaves. */
	rb = replay_new(1000);
	replay_set_reuse_cap(rb, 3);
	cr_assert_eq(replay_add_game(rb, &r0), 0);
	cr_assert_eq(replay_sample(rb, &rng, a.encoding, 7, b), 0);
	cr_assert_eq(replay_sample(rb, &rng, a.encoding, 7, b), 0);
	cr_assert_eq(replay_add_game(rb, &r1), 0);
	cr_assert_eq(replay_sample(rb, &rng, a.encoding, 7, b), 0);
	cr_assert_eq(replay_sample(rb, &rng, a.encoding, 7, b), 0);
	cr_assert_eq(replay_games(rb), 2);
	cr_assert_float_eq(replay_oldest_reuse(rb), 3.0, 1e-9);
	cr_assert_eq(replay_sample(rb, &rng, a.encoding, 7, b), 0);
	cr_assert_eq(replay_games(rb), 1, "the oldest left at the cap");
	cr_assert_float_eq(replay_oldest_reuse(rb), 2.0, 1e-9); /* 0.5 + 0.5 + 1 */
	replay_free(rb);

	/* No cap: never used up. */
	rb = replay_new(1000);
	cr_assert_eq(replay_add_game(rb, &r0), 0);
	for (int k = 0; k < 50; k++)
		cr_assert_eq(replay_sample(rb, &rng, a.encoding, 7, b), 0);
	cr_assert_eq(replay_games(rb), 1);
	replay_free(rb);
	record_free(&r0);
	record_free(&r1);
	train_batch_free(b);
}

/* A loop's use: each round adds games then trains sample-ratio draws per
 * new position. With a cap, no position of the run is drawn more than the
 * cap on average, the first games included (without it they are drawn
 * far more than the newest: the window fills slowly). */
Test(replay, first_games_are_not_overused_under_the_cap)
{
	game_params p = game_params_default(GAME_KIND_CONNECT4);
	nn_arch a = nn_arch_default(&p, 1, 8);
	train_batch *b = train_batch_new(&a, 70, 0);
	game_record r;
	seven_moves(&r, 0);
	uint64_t rng = 5;
	for (int capped = 0; capped < 2; capped++) {
		replay_buffer *rb = replay_new(1400);
		replay_set_reuse_cap(rb, capped ? 8 : 0);
		double max_reuse = 0;
		for (int round = 0; round < 40; round++) {
			for (int g = 0; g < 10; g++)
				cr_assert_eq(replay_add_game(rb, &r), 0);
			/* 70 new positions, ratio 6: 6 draws of 70. */
			for (int k = 0; k < 6; k++) {
				int rc = replay_sample(rb, &rng, a.encoding, 70, b);
				cr_assert(rc == 0 || (capped && rc == REPLAY_USED_UP));
				if (replay_oldest_reuse(rb) > max_reuse)
					max_reuse = replay_oldest_reuse(rb);
			}
		}
		if (capped)
			cr_assert(max_reuse <= 8 + 1e-9, "reuse %g", max_reuse);
		else
			cr_assert(max_reuse > 12, "without a cap the first games are overused (%g)",
				  max_reuse);
		replay_free(rb);
	}
	record_free(&r);
	train_batch_free(b);
}

/* The opponent-reply target of a sampled position: the next move's
 * search visits where it kept them, else the move played, none after the
 * last move; permuted by the position's symmetry like the policy. */
Test(replay, opponent_reply_targets)
{
	game_params p = game_params_default(GAME_KIND_CONNECT4);
	nn_arch a = nn_arch_default(&p, 1, 8);
	a.opp_policy = 1;
	train_batch *b = train_batch_new(&a, 128, 0);
	cr_assert(b && b->opp);
	/* Columns 2,3,2,3,2,3,2: the first player wins at ply 6. Each
	 * searched position's visits name it: position i has i visits on
	 * column 0 beside its move (0 for position 0). Position 5 is a fast
	 * search without visits. */
	game_record r;
	record_init(&r, &p);
	game g;
	game_init(&g, &p);
	for (int i = 0; i < 7; i++) {
		int c = i % 2 ? 3 : 2;
		record_visit v[2] = { { 0, (uint16_t)i }, { (int16_t)c, 10 } };
		int nv = i == 5 ? 0 : i == 0 ? 1 : 2;
		cr_assert_eq(record_add_move(&r, c, i != 5, NAN, i == 0 ? v + 1 : v, nv), 0);
		cr_assert_eq(game_play(&g, c), GAME_OK);
	}
	record_set_outcome(&r, &g);
	replay_buffer *rb = replay_new(1000);
	cr_assert_eq(replay_add_game(rb, &r), 0);
	uint64_t rng = 11;
	cr_assert_eq(replay_sample(rb, &rng, a.encoding, 128, b), 0);
	int seen[7] = { 0 }, mirrored = 0;
	for (int k = 0; k < 128; k++) {
		float pol[7], opp[7];
		const float *pk = b->policy + 7 * k, *ok = b->opp + 7 * k;
		/* Undo the mirror (column c <-> 6 - c) where it was drawn: the
		 * moves are in columns 2 and 3 and the naming visits in 0, so
		 * mass in 4 or 6 means a mirror. */
		int mir = pk[4] > 0 || pk[6] > 0;
		mirrored += mir;
		for (int c = 0; c < 7; c++) {
			pol[c] = pk[mir ? 6 - c : c];
			opp[c] = ok[mir ? 6 - c : c];
		}
		/* Which position: column 0's share of its visits (i / (i + 10)). */
		int i = (int)lround(10 * pol[0] / (1 - pol[0]));
		cr_assert(i >= 0 && i <= 6 && i != 5, "slot %d: no position has %g", k, pol[0]);
		seen[i]++;
		float want[7] = { 0 };
		if (i == 4) {
			want[3] = 1; /* move 5 kept no visits: the move played */
		} else if (i < 6) {
			int n = i + 1, c = n % 2 ? 3 : 2; /* move i + 1's visits */
			want[0] = (float)n / (n + 10);
			want[c] = 10.0f / (n + 10);
		} /* i == 6: the last move, no reply */
		for (int c = 0; c < 7; c++)
			cr_assert_float_eq(opp[c], want[c], 1e-6, "position %d, column %d: %g, not %g",
					   i, c, opp[c], want[c]);
	}
	for (int i = 0; i < 7; i++)
		cr_assert(i == 5 ? seen[i] == 0 : seen[i] > 0, "position %d drawn %d times", i,
			  seen[i]);
	cr_assert(mirrored > 0 && mirrored < 128);
	/* A batch without the head's targets takes the same draws. */
	train_batch *plain = train_batch_new(&(nn_arch){ .game = a.game, .board_w = a.board_w,
							 .board_h = a.board_h, .in_planes = a.in_planes,
							 .policy_outputs = a.policy_outputs },
					     4, 0);
	cr_assert(plain && !plain->opp);
	cr_assert_eq(replay_sample(rb, &rng, a.encoding, 4, plain), 0);
	train_batch_free(plain);
	record_free(&r);
	replay_free(rb);
	train_batch_free(b);
}

/* Whether row (n points) is side * owner moved by one of g's symmetries:
 * that symmetry, or -1. */
static int own_symmetry(const game *g, const float *row, const float *owner, int n, float side)
{
	for (int s = 0; s < game_num_symmetries(g); s++) {
		int same = 1;
		for (int a = 0; a < n && same; a++)
			same = row[game_symmetry_move(g, s, a)] == side * owner[a];
		if (same)
			return s;
	}
	return -1;
}

/* Ownership and score targets: a game played out gives every position its
 * final owners and score, from the view of the side to move (the owners
 * moved by the position's symmetry); a resigned game none (weights 0). */
Test(replay, ownership_targets)
{
	game_params p = game_params_default(GAME_KIND_GO);
	p.size = 5;
	nn_arch a = nn_arch_default(&p, 1, 8);
	a.ownership = 1;
	a.score = 1;
	train_batch *b = train_batch_new(&a, 64, 0);
	cr_assert(b && b->own && b->own_w && b->n_points == 25 && b->score && b->score_w);
	/* Black takes the left three columns, White the right two (so that
	 * no symmetry turns one side's view into the other's); both pass. */
	const int moves[] = { 5 * 2 + 2, 5 * 2 + 3, 5 * 0 + 2, 5 * 0 + 3, 5 * 4 + 2, 5 * 4 + 3,
			      5 * 1 + 2, 5 * 1 + 3, 5 * 3 + 2, 5 * 3 + 3, 25, 25 };
	game_record r, res;
	record_init(&r, &p);
	record_init(&res, &p);
	static game g;
	game_init(&g, &p);
	for (int i = 0; i < 12; i++) {
		record_visit v = { (int16_t)moves[i], 3 };
		cr_assert_eq(record_add_move(&r, moves[i], true, NAN, &v, 1), 0);
		if (i < 6)
			cr_assert_eq(record_add_move(&res, moves[i], true, NAN, &v, 1), 0);
		cr_assert_eq(game_play(&g, moves[i]), GAME_OK);
	}
	cr_assert(game_is_over(&g));
	record_set_outcome(&r, &g);
	float owner[25];
	game_desc_from_params(&p)->ownership(&g, owner);
	cr_assert(owner[5 * 2 + 0] == 1 && owner[5 * 2 + 2] == 1 && owner[5 * 2 + 4] == -1,
		  "Black's left, White's right");
	/* The short game: Black resigns after 6 moves. */
	game_init(&g, &p);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(game_play(&g, moves[i]), GAME_OK);
	game_resign(&g, GAME_BLACK);
	record_set_outcome(&res, &g);
	cr_assert_eq(res.resigned, GAME_BLACK);

	replay_buffer *rb = replay_new(1000);
	cr_assert_eq(replay_add_game(rb, &r), 0);
	uint64_t rng = 5;
	cr_assert_eq(replay_sample(rb, &rng, a.encoding, 64, b), 0);
	int syms = 0, sides[2] = { 0 };
	for (int k = 0; k < 64; k++) {
		cr_assert_eq(b->own_w[k], 1.0f);
		const float *row = b->own + 25 * (size_t)k;
		/* Either side's view (which one depends on the position drawn). */
		int s = own_symmetry(&g, row, owner, 25, 1.0f), side = 0;
		if (s < 0) {
			s = own_symmetry(&g, row, owner, 25, -1.0f);
			side = 1;
		}
		cr_assert(s >= 0, "slot %d is no symmetry of the final owners", k);
		/* White won (15 - 10 - 7.5): the value target is +1 exactly
		 * when White is to move, whose view is -owner. */
		cr_assert_eq(side, b->value[k] > 0, "slot %d: value %g, view %s", k, b->value[k],
			     side ? "White's" : "Black's");
		/* The score, 15 - 10 - 7.5 for Black, over the 25 points. */
		cr_assert_eq(b->score_w[k], 1.0f);
		cr_assert_float_eq(b->score[k], (side ? 2.5f : -2.5f) / 25, 1e-6, "slot %d: %g", k,
				   b->score[k]);
		syms |= 1 << s;
		sides[side]++;
	}
	cr_assert(sides[0] > 0 && sides[1] > 0, "both sides' views: %d, %d", sides[0], sides[1]);
	cr_assert(syms != 1, "symmetries are drawn");
	replay_free(rb);

	rb = replay_new(1000);
	cr_assert_eq(replay_add_game(rb, &res), 0);
	cr_assert_eq(replay_sample(rb, &rng, a.encoding, 16, b), 0);
	for (int k = 0; k < 16; k++)
		cr_assert(b->own_w[k] == 0 && b->score_w[k] == 0, "a resigned game has no owners or "
			  "score");
	replay_free(rb);
	record_free(&r);
	record_free(&res);
	train_batch_free(b);
}
