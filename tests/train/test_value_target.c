/* The value target mix (1 - l) G + l q, G the result z or its
 * lambda-return: the record's function, and the window's samples under a
 * weight. */
#include <criterion/criterion.h>
#include <math.h>

#include "data/record.h"
#include "nn/encode.h"
#include "tests/train/train_util.h"
#include "train/replay.h"

#define q_of tu_game_q

static void known_game(game_record *r, bool with_q) { tu_column_game(r, 0, with_q); }

Test(value_target, record_mix)
{
	game_record r;
	known_game(&r, true);
	for (int i = 0; i < r.n_moves; i++) {
		int to_move = i % 2 ? GAME_WHITE : GAME_BLACK;
		float z = to_move == GAME_BLACK ? 1 : -1; /* the first player won */
		cr_assert_eq(record_value_target(&r, i, to_move, 0, 1, false), z);
		cr_assert_float_eq(record_value_target(&r, i, to_move, 0.3f, 1, false), 0.7f * z + 0.3f * q_of(i),
				   1e-6);
		cr_assert_float_eq(record_value_target(&r, i, to_move, 1, 1, false), q_of(i), 1e-6);
	}
	record_free(&r);
	known_game(&r, false);
	cr_assert_eq(record_value_target(&r, 2, GAME_BLACK, 0.5f, 1, false), 1.0f, "unknown q: z alone");
	cr_assert_eq(record_value_target(&r, 2, GAME_BLACK, 0.5f, 0.5f, false), 1.0f,
		     "no root value follows: the result takes every weight");
	record_free(&r);
}

/* The lambda-return written out as its sum: the root values that follow
 * position i up to `end`, each from i's side (sides alternate), weighted
 * (1 - lambda) lambda^(k-1), and `tail` lambda^(end-1-i) (the result, with
 * end the game's length). */
static float lambda_sum_to(const game_record *r, int i, int end, float tail, float lambda)
{
	double g = 0, w = 1;
	for (int j = i + 1; j < end; j++) {
		double q = (j - i) % 2 ? -r->root_value[j] : r->root_value[j];
		g += (1 - lambda) * w * q;
		w *= lambda;
	}
	return (float)(g + w * tail);
}

static float lambda_sum(const game_record *r, int i, float z, float lambda)
{
	return lambda_sum_to(r, i, r->n_moves, z, lambda);
}

Test(value_target, lambda_return)
{
	game_record r;
	known_game(&r, true);
	for (int i = 0; i < r.n_moves; i++) {
		int to_move = i % 2 ? GAME_WHITE : GAME_BLACK;
		float z = to_move == GAME_BLACK ? 1 : -1;
		for (float lambda = 0; lambda <= 1.0f; lambda += 0.25f)
			cr_assert_float_eq(record_value_target(&r, i, to_move, 0, lambda, false),
					   lambda_sum(&r, i, z, lambda), 1e-6, "move %d lambda %g", i,
					   lambda);
		float g = lambda_sum(&r, i, z, 0.6f);
		cr_assert_float_eq(record_value_target(&r, i, to_move, 0.3f, 0.6f, false),
				   0.7f * g + 0.3f * q_of(i), 1e-6);
		/* lambda 0: the next search's value, seen from this side; after
		 * the last move, the result. */
		float next = i + 1 < r.n_moves ? -q_of(i + 1) : z;
		cr_assert_float_eq(record_value_target(&r, i, to_move, 0, 0, false), next, 1e-6);
	}
	/* An unknown root value passes its weight on: the game without move 3's
	 * value is the sum over the others. */
	r.root_value[3] = NAN;
	float z = 1; /* position 0's side, the first player, won */
	float lambda = 0.5f;
	float want = (1 - lambda) * (-q_of(1)) + lambda * ((1 - lambda) * q_of(2) +
							   lambda * ((1 - lambda) * q_of(4) +
								     lambda * lambda_sum(&r, 4, z, lambda)));
	cr_assert_float_eq(record_value_target(&r, 0, GAME_BLACK, 0, lambda, false), want, 1e-6);
	record_free(&r);
}

/* The return cut at the first exploring move k at or after i (Watkins'
 * Q(lambda)), written out: the lambda-sum up to k, then k's root value
 * from i's side in place of the rest; i's own value when i explored. */
static float cut_sum(const game_record *r, int i, float z, float lambda)
{
	int k = i;
	while (k < r->n_moves && !r->explored[k])
		k++;
	if (k == i)
		return r->root_value[i];
	if (k == r->n_moves)
		return lambda_sum(r, i, z, lambda);
	float qk = (k - i) % 2 ? -r->root_value[k] : r->root_value[k];
	return lambda_sum_to(r, i, k, qk, lambda);
}

Test(value_target, cut_at_exploring_moves)
{
	game_record r;
	known_game(&r, true);
	r.explored[2] = r.explored[5] = 1;
	/* Written out for lambda 1: the next exploring move's value. */
	const float want[7] = { q_of(2), -q_of(2), q_of(2), q_of(5), -q_of(5), q_of(5), 1 };
	for (int i = 0; i < r.n_moves; i++) {
		int to_move = i % 2 ? GAME_WHITE : GAME_BLACK;
		float z = to_move == GAME_BLACK ? 1 : -1;
		cr_assert_float_eq(record_value_target(&r, i, to_move, 0, 1, true), i == 6 ? z : want[i],
				   1e-6, "move %d", i);
		cr_assert_eq(record_value_target(&r, i, to_move, 0, 1, false), z, "no cut: the result");
		for (float lambda = 0; lambda <= 1.0f; lambda += 0.25f)
			cr_assert_float_eq(record_value_target(&r, i, to_move, 0, lambda, true),
					   cut_sum(&r, i, z, lambda), 1e-6, "move %d lambda %g", i, lambda);
		cr_assert_float_eq(record_value_target(&r, i, to_move, 0.5f, 1, true),
				   0.5f * cut_sum(&r, i, z, 1) + 0.5f * q_of(i), 1e-6);
	}
	/* An exploring move whose value is unknown cuts nothing. */
	r.root_value[5] = NAN;
	cr_assert_eq(record_value_target(&r, 3, GAME_WHITE, 0, 1, true), -1.0f);
	record_free(&r);
}

Test(value_target, window_samples_mix)
{
	game_record r;
	known_game(&r, true);
	game_params p = game_params_default(GAME_KIND_CONNECT4);
	nn_arch a = nn_arch_default(&p, 1, 8);
	train_batch *b = train_batch_new(&a, 64, 0);
	cr_assert(b);
	r.explored[3] = 1;
	for (int pass = 0; pass < 4; pass++) {
		float l = pass ? 0.25f : 0, lambda = pass == 2 ? 0.5f : 1;
		bool cut = pass == 3;
		replay_buffer *rb = replay_new(1000);
		cr_assert_eq(replay_add_game(rb, &r), 0);
		replay_set_value_target(rb, l, lambda, cut);
		uint64_t rng = 7;
		cr_assert_eq(replay_sample(rb, &rng, a.encoding, 64, b), 0);
		bool seen[7] = { 0 };
		for (int k = 0; k < 64; k++) {
			int match = -1;
			for (int i = 0; i < 7; i++) {
				float g = record_value_target(&r, i, i % 2 ? GAME_WHITE : GAME_BLACK, 0,
							      lambda, cut);
				if (fabsf(b->value[k] - ((1 - l) * g + l * q_of(i))) < 1e-6f)
					match = i;
			}
			cr_assert_geq(match, 0, "sample %d: value %g is no position's mix", k,
				      b->value[k]);
			seen[match] = true;
		}
		int distinct = 0;
		for (int i = 0; i < 7; i++)
			distinct += seen[i];
		cr_assert_geq(distinct, pass ? 4 : 2, "the mix tells positions apart");
		replay_free(rb);
	}
	train_batch_free(b);
	record_free(&r);
}
