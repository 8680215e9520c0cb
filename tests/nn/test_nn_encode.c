/* Input encodings: hand-built expectations and symmetries. */
#include <criterion/criterion.h>
#include <string.h>

#include "engine/game_desc.h"
#include "nn/encode.h"

static game eg, eg2; /* large: keep off the stack */
static float ep[27 * 361], ep2[27 * 361];

static void play_xy(game *g, int x, int y)
{
	int n = g->params.size;
	cr_assert_eq(game_play(g, y * n + x), GAME_OK, "move %d,%d", x, y);
}

static float at(const float *planes, int plane, int n, int x, int y)
{
	return planes[plane * n * n + y * n + x];
}

/* Counts the ones of a plane (all values must be 0 or 1). */
static int ones(const float *planes, int plane, int area)
{
	int c = 0;
	for (int i = 0; i < area; i++) {
		float v = planes[plane * area + i];
		cr_assert(v == 0.0f || v == 1.0f, "plane %d point %d is %g", plane, i, (double)v);
		c += v == 1.0f;
	}
	return c;
}

/* B (4,4), W (0,0), B (1,0), W (8,8), B (0,1) captures (0,0), W (7,7);
 * Black to move. */
static void capture_game(double komi)
{
	game_params p = { .kind = GAME_KIND_GO, .size = 9, .komi = komi };
	cr_assert_eq(game_init(&eg, &p), GAME_OK);
	play_xy(&eg, 4, 4);
	play_xy(&eg, 0, 0);
	play_xy(&eg, 1, 0);
	play_xy(&eg, 8, 8);
	play_xy(&eg, 0, 1);
	play_xy(&eg, 7, 7);
	cr_assert_eq(game_cell(&eg, 0, 0), -1, "the white stone was captured");
	cr_assert_eq(game_to_move(&eg), GAME_BLACK);
}

Test(nn_encode, lz18_history_with_a_capture)
{
	capture_game(7.5);
	cr_assert_eq(nn_encode(&eg, NN_ENC_LZ18, ep), 18);
	const int n = 9, area = 81;
	/* Expected stone counts per history plane: own (Black) 0..7, then
	 * opponent (White) 8..15. t-6 is the empty start, t-7 before it. */
	static const int own[8] = { 3, 3, 2, 2, 1, 1, 0, 0 };
	static const int opp[8] = { 2, 1, 2, 1, 1, 0, 0, 0 };
	for (int k = 0; k < 8; k++) {
		cr_assert_eq(ones(ep, k, area), own[k], "own plane %d", k);
		cr_assert_eq(ones(ep, 8 + k, area), opp[k], "opponent plane %d", 8 + k);
	}
	/* The captured stone: present at t-2..t-4, gone at t-1 and now. */
	cr_assert_eq(at(ep, 8, n, 0, 0), 0.0f);
	cr_assert_eq(at(ep, 9, n, 0, 0), 0.0f);
	cr_assert_eq(at(ep, 10, n, 0, 0), 1.0f);
	cr_assert_eq(at(ep, 11, n, 0, 0), 1.0f);
	cr_assert_eq(at(ep, 12, n, 0, 0), 1.0f);
	/* The capturing stone: now and at t-1 only. */
	cr_assert_eq(at(ep, 0, n, 0, 1), 1.0f);
	cr_assert_eq(at(ep, 1, n, 0, 1), 1.0f);
	cr_assert_eq(at(ep, 2, n, 0, 1), 0.0f);
	cr_assert_eq(at(ep, 5, n, 4, 4), 1.0f); /* first move, t-5 */
	cr_assert_eq(at(ep, 8, n, 7, 7), 1.0f); /* White's last move */
	cr_assert_eq(at(ep, 9, n, 7, 7), 0.0f);
	cr_assert_eq(at(ep, 8, n, 8, 8), 1.0f);
	/* Orientation: (8,8) is index 80, the top right. */
	cr_assert_eq(ep[8 * area + 80], 1.0f);
	cr_assert_eq(ones(ep, 16, area), area, "Black to move");
	cr_assert_eq(ones(ep, 17, area), 0);

	/* After a White... no: after Black plays, White is to move and the
	 * perspective flips: own = White. */
	play_xy(&eg, 2, 2);
	cr_assert_eq(nn_encode(&eg, NN_ENC_LZ18, ep), 18);
	cr_assert_eq(ones(ep, 0, area), 2, "White's stones now");
	cr_assert_eq(ones(ep, 8, area), 4, "Black's stones now");
	cr_assert_eq(at(ep, 11, n, 0, 1), 0.0f); /* (0,1) not yet played at t-3 */
	cr_assert_eq(at(ep, 3, n, 0, 0), 1.0f);  /* White's (0,0) at t-3 */
	cr_assert_eq(ones(ep, 16, area), 0);
	cr_assert_eq(ones(ep, 17, area), area, "White to move");
}

Test(nn_encode, go_native_liberties_komi_and_ones)
{
	capture_game(7.5);
	cr_assert_eq(nn_encode(&eg, NN_ENC_GO_NATIVE, ep), 27);
	const int n = 9, area = 81;
	/* History planes are LZ's. */
	float lz[18 * 81];
	nn_encode(&eg, NN_ENC_LZ18, lz);
	cr_assert(memcmp(lz, ep, sizeof(float) * 16 * area) == 0);
	/* Own: (1,0) and (0,1) have 3 liberties, (4,4) has 4. */
	cr_assert_eq(ones(ep, 18, area), 2);
	cr_assert_eq(at(ep, 18, n, 1, 0), 1.0f);
	cr_assert_eq(at(ep, 18, n, 0, 1), 1.0f);
	cr_assert_eq(ones(ep, 19, area), 1);
	cr_assert_eq(at(ep, 19, n, 4, 4), 1.0f);
	cr_assert_eq(ones(ep, 16, area) + ones(ep, 17, area), 0);
	/* Opponent: (8,8) corner 2 liberties, (7,7) 4. */
	cr_assert_eq(ones(ep, 21, area), 1);
	cr_assert_eq(at(ep, 21, n, 8, 8), 1.0f);
	cr_assert_eq(ones(ep, 23, area), 1);
	cr_assert_eq(at(ep, 23, n, 7, 7), 1.0f);
	cr_assert_eq(ones(ep, 20, area) + ones(ep, 22, area), 0);
	for (int i = 0; i < area; i++) {
		cr_assert_float_eq(ep[24 * area + i], -0.5f, 1e-7, "komi 7.5 against Black");
		cr_assert_eq(ep[25 * area + i], 1.0f);
		cr_assert_eq(ep[26 * area + i], 1.0f);
	}
	/* An atari: White (0,2)... make one: Black group (0,1) gets 1 liberty. */
	play_xy(&eg, 5, 5);  /* B */
	play_xy(&eg, 0, 2);  /* W */
	play_xy(&eg, 6, 6);  /* B */
	play_xy(&eg, 1, 1);  /* W: (0,1) now has only (0,0) */
	cr_assert_eq(game_to_move(&eg), GAME_BLACK);
	nn_encode(&eg, NN_ENC_GO_NATIVE, ep);
	cr_assert_eq(at(ep, 16, n, 0, 1), 1.0f, "own stone in atari");
	cr_assert_eq(at(ep, 16, n, 1, 0), 0.0f);
	cr_assert_eq(at(ep, 17, n, 1, 0), 1.0f, "(1,0): liberties (0,0), (2,0)");
	play_xy(&eg, 8, 0); /* White to move: komi plane turns positive */
	nn_encode(&eg, NN_ENC_GO_NATIVE, ep);
	cr_assert_float_eq(ep[24 * area], 0.5f, 1e-7);
	cr_assert_eq(ones(ep, 25, area), 0);
}

Test(nn_encode, connect4_planes)
{
	game_params p = game_params_default(GAME_KIND_CONNECT4);
	cr_assert_eq(game_init(&eg, &p), GAME_OK);
	cr_assert_eq(nn_encode(&eg, NN_ENC_LZ18, ep), -1, "a Go encoding of Connect Four");
	cr_assert_eq(game_play(&eg, 3), GAME_OK);
	cr_assert_eq(game_play(&eg, 3), GAME_OK);
	cr_assert_eq(game_play(&eg, 0), GAME_OK);
	cr_assert_eq(nn_encode(&eg, NN_ENC_C4, ep), 3);
	const int area = C4_CELLS;
	/* Second player to move: own = its disc at column 3, row 1. */
	cr_assert_eq(ones(ep, 0, area), 1);
	cr_assert_eq(ep[0 * area + 1 * 7 + 3], 1.0f);
	cr_assert_eq(ones(ep, 1, area), 2);
	cr_assert_eq(ep[1 * area + 0 * 7 + 3], 1.0f);
	cr_assert_eq(ep[1 * area + 0 * 7 + 0], 1.0f);
	cr_assert_eq(ones(ep, 2, area), 0);
	/* Mirror: column 0 goes to 6. */
	cr_assert_eq(nn_encode_sym(&eg, NN_ENC_C4, 1, ep2), 3);
	cr_assert_eq(ep2[1 * area + 0 * 7 + 6], 1.0f);
	cr_assert_eq(ep2[0 * area + 1 * 7 + 3], 1.0f);
	cr_assert_eq(ones(ep2, 1, area), 2);
}

/* nn_encode_sym(g, s) equals nn_encode of the game replayed with every move
 * mapped through symmetry s. */
static void check_symmetries(const game_params *p, nn_encoding enc, int n_moves, uint64_t seed)
{
	int moves[GAME_MAX_ACTIONS], played[400], n_played = 0;
	uint64_t s = seed;
	cr_assert_eq(game_init(&eg, p), GAME_OK);
	for (int i = 0; i < n_moves; i++) {
		int k = game_legal_moves(&eg, moves);
		if (k == 0)
			break;
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		int mv = moves[s % (uint64_t)k];
		cr_assert_eq(game_play(&eg, mv), GAME_OK);
		played[n_played++] = mv;
	}
	int w = game_width(&eg), h = game_height(&eg);
	size_t len = sizeof(float) * (size_t)nn_encoding_planes(enc) * w * h;
	for (int sym = 0; sym < game_num_symmetries(&eg); sym++) {
		cr_assert_eq(game_init(&eg2, p), GAME_OK);
		for (int i = 0; i < n_played; i++)
			cr_assert_eq(game_play(&eg2, game_symmetry_move(&eg, sym, played[i])), GAME_OK);
		memset(ep, 0x7f, len);
		memset(ep2, 0x7f, len);
		cr_assert_gt(nn_encode_sym(&eg, enc, sym, ep), 0);
		cr_assert_gt(nn_encode(&eg2, enc, ep2), 0);
		cr_assert(memcmp(ep, ep2, len) == 0, "symmetry %d of %s", sym,
			  nn_encoding_name(enc));
	}
}

Test(nn_encode, symmetries_match_replayed_games)
{
	game_params go9 = { .kind = GAME_KIND_GO, .size = 9, .komi = 6.5 };
	game_params go19 = { .kind = GAME_KIND_GO, .size = 19, .komi = 7.5 };
	game_params c4 = game_params_default(GAME_KIND_CONNECT4);
	check_symmetries(&go9, NN_ENC_LZ18, 40, 12345);
	check_symmetries(&go9, NN_ENC_GO_NATIVE, 60, 777);
	check_symmetries(&go19, NN_ENC_LZ18, 30, 99);
	check_symmetries(&go19, NN_ENC_GO_NATIVE, 30, 5);
	check_symmetries(&c4, NN_ENC_C4, 12, 31);
}

Test(nn_encode, names_and_counts)
{
	nn_encoding e;
	cr_assert(nn_encoding_from_name("lz18", &e) && e == NN_ENC_LZ18);
	cr_assert(nn_encoding_from_name("go_native", &e) && e == NN_ENC_GO_NATIVE);
	cr_assert(nn_encoding_from_name("c4", &e) && e == NN_ENC_C4);
	cr_assert(!nn_encoding_from_name("chess", &e));
	cr_assert_eq(nn_encoding_planes(NN_ENC_LZ18), 18);
	cr_assert_eq(nn_encoding_planes(NN_ENC_GO_NATIVE), 27);
	cr_assert_eq(nn_encoding_planes(NN_ENC_C4), 3);
}

/* A 7x7 position in a 9x9 frame (a network of several sizes): its planes
 * under a symmetry in the lower left corner, zeros elsewhere (so the
 * on-board plane marks the board), and its actions where the frame has
 * them. */
Test(nn_encode, a_smaller_board_sits_in_the_frame)
{
	game_params p = game_params_sized(GAME_KIND_GO, 7, 7.5);
	game g;
	game_init(&g, &p);
	static const int moves[] = { 10, 24, 17, 30, 3 };
	for (size_t i = 0; i < sizeof(moves) / sizeof(moves[0]); i++)
		cr_assert_eq(game_play(&g, moves[i]), GAME_OK);
	enum { NP = 27 };
	static float board[NP * 49], frame[NP * 81];
	for (int sym = 0; sym < 8; sym += 3) {
		cr_assert_eq(nn_encode_sym(&g, NN_ENC_GO_NATIVE, sym, board), NP);
		for (size_t i = 0; i < NP * 81; i++)
			frame[i] = -7; /* anything left behind shows */
		cr_assert_eq(nn_encode_frame(&g, NN_ENC_GO_NATIVE, sym, 9, 9, frame), NP);
		for (int pl = 0; pl < NP; pl++)
			for (int y = 0; y < 9; y++)
				for (int x = 0; x < 9; x++) {
					float want = x < 7 && y < 7 ? board[(pl * 7 + y) * 7 + x] : 0.0f;
					cr_assert_eq(frame[(pl * 9 + y) * 9 + x], want,
						     "sym %d plane %d (%d, %d)", sym, pl, x, y);
				}
	}
	/* The on-board plane (26): ones on the 7x7 board only. */
	cr_assert_eq(frame[(26 * 9 + 6) * 9 + 6], 1.0f);
	cr_assert_eq(frame[(26 * 9 + 7) * 9 + 0], 0.0f);
	cr_assert_eq(nn_frame_action(&g, 3 * 7 + 5, 9, 9), 3 * 9 + 5);
	cr_assert_eq(nn_frame_action(&g, game_pass_move(&g), 9, 9), 81);
	cr_assert_eq(nn_frame_action(&g, 3 * 7 + 5, 7, 7), 3 * 7 + 5, "a frame of its size");
	cr_assert_eq(nn_encode_frame(&g, NN_ENC_GO_NATIVE, 0, 5, 5, frame), -1,
		     "a board larger than the frame");
}

/* Masked pooling's weights: 1/49 on a 7x7 board in the 9x9 frame and 0
 * elsewhere, from either Go encoding (go_native's on-board plane, Leela
 * Zero's side-to-move planes); 1/81 everywhere for a 9x9 board; Connect
 * Four's every point; planes with no board the plain mean. */
Test(nn_encode, pool_weights_cover_the_board)
{
	static float frame[27 * 81], w[81];
	game_params p = game_params_sized(GAME_KIND_GO, 7, 7.5);
	game g;
	game_init(&g, &p);
	cr_assert_eq(game_play(&g, 10), GAME_OK);
	nn_encoding encs[2] = { NN_ENC_GO_NATIVE, NN_ENC_LZ18 };
	for (int e = 0; e < 2; e++) {
		cr_assert_gt(nn_encode_frame(&g, encs[e], 0, 9, 9, frame), 0);
		cr_assert_eq(nn_board_pool_weights(encs[e], frame, 81, w), 49);
		for (int q = 0; q < 81; q++)
			cr_assert_float_eq(w[q], q % 9 < 7 && q / 9 < 7 ? 1.0f / 49 : 0.0f, 1e-9,
					   "%s point %d", nn_encoding_name(encs[e]), q);
	}
	game_params p9 = game_params_sized(GAME_KIND_GO, 9, 7.5);
	game_init(&g, &p9);
	cr_assert_gt(nn_encode(&g, NN_ENC_GO_NATIVE, frame), 0);
	cr_assert_eq(nn_board_pool_weights(NN_ENC_GO_NATIVE, frame, 81, w), 81);
	cr_assert_float_eq(w[80], 1.0f / 81, 1e-9);
	game_params c4 = game_params_default(GAME_KIND_CONNECT4);
	game_init(&g, &c4);
	cr_assert_gt(nn_encode(&g, NN_ENC_C4, frame), 0);
	cr_assert_eq(nn_board_pool_weights(NN_ENC_C4, frame, 42, w), 42);
	memset(frame, 0, sizeof(frame));
	cr_assert_eq(nn_board_pool_weights(NN_ENC_GO_NATIVE, frame, 81, w), 81,
		     "no board marked: the plain mean");
	cr_assert_float_eq(w[0], 1.0f / 81, 1e-9);
}
