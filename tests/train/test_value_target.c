/* The value target mix (1 - l) z + l q: the record's function, and the
 * window's samples under a weight. */
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
		cr_assert_eq(record_value_target(&r, i, to_move, 0), z);
		cr_assert_float_eq(record_value_target(&r, i, to_move, 0.3f), 0.7f * z + 0.3f * q_of(i),
				   1e-6);
		cr_assert_float_eq(record_value_target(&r, i, to_move, 1), q_of(i), 1e-6);
	}
	record_free(&r);
	known_game(&r, false);
	cr_assert_eq(record_value_target(&r, 2, GAME_BLACK, 0.5f), 1.0f, "unknown q: z alone");
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
	for (int pass = 0; pass < 2; pass++) {
		float l = pass ? 0.25f : 0;
		replay_buffer *rb = replay_new(1000);
		cr_assert_eq(replay_add_game(rb, &r), 0);
		replay_set_value_q_weight(rb, l);
		uint64_t rng = 7;
		cr_assert_eq(replay_sample(rb, &rng, a.encoding, 64, b), 0);
		bool seen[7] = { 0 };
		for (int k = 0; k < 64; k++) {
			int match = -1;
			for (int i = 0; i < 7; i++) {
				float z = i % 2 ? -1 : 1;
				if (fabsf(b->value[k] - ((1 - l) * z + l * q_of(i))) < 1e-6f)
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
