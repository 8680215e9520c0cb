/* The oneDNN backend against the plain reference; BN folding. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "nn/backend.h"

static uint64_t cpu_rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Encodes n random positions (random legal play, 0..max_moves moves; Go
 * passes are rare so boards fill up). */
static void random_positions(const game_params *gp, nn_encoding enc, int n, int max_moves,
			     uint64_t seed, float *planes)
{
	static game g; /* large: keep off the stack */
	int moves[GAME_MAX_ACTIONS];
	uint64_t s = seed | 1;
	cr_assert_eq(game_init(&g, gp), GAME_OK);
	size_t in_n = (size_t)nn_encoding_planes(enc) * game_width(&g) * game_height(&g);
	for (int i = 0; i < n; i++) {
		cr_assert_eq(game_init(&g, gp), GAME_OK);
		int len = (int)(cpu_rng(&s) % (uint64_t)(max_moves + 1));
		for (int m = 0; m < len; m++) {
			int k = game_legal_moves(&g, moves);
			if (k == 0)
				break;
			int mv = moves[cpu_rng(&s) % (uint64_t)k];
			if (mv == game_pass_move(&g) && k > 1)
				mv = moves[0];
			cr_assert_eq(game_play(&g, mv), GAME_OK);
		}
		cr_assert_gt(nn_encode(&g, enc, planes + (size_t)i * in_n), 0);
	}
}

/* |got - want| <= tol * max(1, |want|) for every element. */
static void assert_close(const float *got, const float *want, size_t n, double tol,
			 const char *what)
{
	for (size_t i = 0; i < n; i++)
		cr_assert(fabs((double)got[i] - want[i]) <= tol * fmax(1.0, fabs(want[i])),
			  "%s[%zu]: backend %.8g, reference %.8g", what, i, (double)got[i],
			  (double)want[i]);
}

/* Builds a random net for (game, blocks, channels), runs the backend at
 * batch sizes 1, 7 and 32 (max 32) and compares with the reference. A Go
 * net has the ownership and score heads, asked for at batches 7 and 32
 * (nn_backend_forward_heads) and not at 1. At
 * batch 32 only a few positions are recomputed by the (slow) reference:
 * positions are independent, so that is enough to catch batch mixing.
 * se > 0: blocks 0, 2, 4, ... are squeeze-excitation blocks of width se. */
static void check_backend(const game_params *gp, nn_encoding enc, int value_outputs, int blocks,
			  int channels, int se, nn_dtype prec, double tol, uint64_t seed)
{
	enum { MAXB = 32 };
	char err[512];
	/* A CPU without AVX-512 BF16 is the one reason to leave bf16 untested;
	 * on any other, a backend that refuses it fails the test below. */
	if (prec == NN_DTYPE_BF16 && !__builtin_cpu_supports("avx512bf16"))
		cr_skip_test("this CPU lacks AVX-512 BF16");
	nn_arch a = nn_arch_default(gp, blocks, channels);
	if (gp->kind == GAME_KIND_GO && enc == NN_ENC_LZ18) {
		a = nn_arch_lz(gp->size, blocks, channels);
		a.value_hidden = 32;
	}
	a.value_outputs = value_outputs;
	bool go = gp->kind == GAME_KIND_GO;
	if (go)
		nn_arch_set_heads(&a, NN_HEAD_OWN | NN_HEAD_SCORE);
	if (se > 0) {
		a.se_channels = se;
		for (int i = 0; i < blocks; i += 2)
			a.block_kind[i] = NN_BLOCK_SE;
	}
	nn_net *net = nn_net_new(&a, err, sizeof(err));
	cr_assert(net, "%s", err);
	nn_net_init_random(net, seed);
	size_t in_n = (size_t)a.in_planes * a.board_w * a.board_h;
	size_t np = (size_t)a.policy_outputs;
	float *planes = malloc(sizeof(float) * in_n * MAXB);
	float *pol = malloc(sizeof(float) * np * MAXB), *ref_pol = malloc(sizeof(float) * np);
	float val[MAXB], wdl[3 * MAXB], ref_val[1], ref_wdl[3], score[MAXB], ref_score[1];
	size_t hw = (size_t)a.board_w * a.board_h;
	float *own = malloc(sizeof(float) * hw * MAXB), *ref_own = malloc(sizeof(float) * hw);
	cr_assert(planes && pol && ref_pol && own && ref_own);
	random_positions(gp, a.encoding, MAXB, gp->kind == GAME_KIND_GO ? 60 : 30, seed * 7 + 1,
			 planes);
	nn_backend_options opt = nn_backend_options_default();
	opt.threads = 2;
	opt.precision = prec;
	/* Alternate the algorithms by seed; auto (which times both at
	 * create) is covered by the LZ test and costs time here. */
	opt.algo = seed % 2 ? NN_CONV_WINOGRAD : NN_CONV_DIRECT;
	nn_backend *be = nn_backend_new(&nn_backend_cpu, net, MAXB, &opt, err, sizeof(err));
	cr_assert(be, "%s", err);
	cr_assert_eq(nn_backend_heads(be), go ? NN_HEAD_OWN | NN_HEAD_SCORE : 0);
	/* Each batch from a buffer of its own, freed at once: a full batch
	 * is read where it lies (the set's own buffer comes back after), a
	 * short one (31 after 32, the same set) copied; a pass that kept the
	 * freed buffer is a use after free under the sanitizers. */
	static const int batches[] = { 1, 7, 32, 31 };
	for (int bi = 0; bi < 4; bi++) {
		int b = batches[bi];
		bool heads = go && b > 1;
		float *in = malloc(sizeof(float) * in_n * (size_t)b);
		cr_assert(in);
		memcpy(in, planes, sizeof(float) * in_n * (size_t)b);
		int rc = heads ? nn_backend_forward_heads(be, b, in, pol, val, wdl, own, score)
			       : nn_backend_forward(be, b, in, pol, val, wdl);
		cr_assert_eq(memcmp(in, planes, sizeof(float) * in_n * (size_t)b), 0,
			     "the input is left as it was");
		free(in);
		cr_assert_eq(rc, 0);
		for (int n = 0; n < b; n++) {
			if (b >= 31 && n != 0 && n != 13 && n != b - 1)
				continue;
			nn_reference_forward_heads(net, 1, planes + n * in_n, ref_pol, ref_val, ref_wdl,
						   ref_own, ref_score);
			assert_close(pol + n * np, ref_pol, np, tol, "policy");
			assert_close(val + n, ref_val, 1, tol, "value");
			if (heads) {
				assert_close(own + n * hw, ref_own, hw, tol, "ownership");
				assert_close(score + n, ref_score, 1, tol, "score");
			}
			double sum = wdl[3 * n] + wdl[3 * n + 1] + wdl[3 * n + 2];
			cr_assert(fabs(sum - 1.0) < 1e-5, "wdl sums to %g", sum);
			if (value_outputs == 3)
				assert_close(wdl + 3 * n, ref_wdl, 3, tol, "wdl");
		}
	}
	nn_backend_free(be);
	nn_net_free(net);
	free(planes);
	free(pol);
	free(ref_pol);
	free(own);
	free(ref_own);
}

Test(nn_cpu, go9_2x16_matches_reference)
{
	game_params gp = { .kind = GAME_KIND_GO, .size = 9, .komi = 7.5 };
	check_backend(&gp, NN_ENC_GO_NATIVE, 1, 2, 16, 0, NN_DTYPE_FP32, 1e-4, 1);
}

/* 20 channels: the head convs' loops take 16 in vectors and 4 one by one,
 * from the direct tower's nhwc (even seed) and from the Winograd tower's
 * nChw16c, where the last 4 lie in a second block (odd seed). */
Test(nn_cpu, go9_2x20_heads_with_a_channel_tail_match_reference)
{
	game_params gp = { .kind = GAME_KIND_GO, .size = 9, .komi = 7.5 };
	check_backend(&gp, NN_ENC_GO_NATIVE, 1, 2, 20, 0, NN_DTYPE_FP32, 1e-4, 12);
}

Test(nn_cpu, go9_2x20_winograd_heads_read_a_blocked_tower_output)
{
	game_params gp = { .kind = GAME_KIND_GO, .size = 9, .komi = 7.5 };
	check_backend(&gp, NN_ENC_GO_NATIVE, 1, 2, 20, 0, NN_DTYPE_FP32, 1e-4, 13);
}

Test(nn_cpu, go19_3x32_matches_reference)
{
	game_params gp = { .kind = GAME_KIND_GO, .size = 19, .komi = 7.5 };
	check_backend(&gp, NN_ENC_GO_NATIVE, 1, 3, 32, 0, NN_DTYPE_FP32, 1e-4, 2);
}

Test(nn_cpu, go19_lz18_1x8_matches_reference)
{
	game_params gp = { .kind = GAME_KIND_GO, .size = 19, .komi = 7.5 };
	check_backend(&gp, NN_ENC_LZ18, 1, 1, 8, 0, NN_DTYPE_FP32, 1e-4, 3);
}

Test(nn_cpu, go9_wdl_and_no_blocks_matches_reference)
{
	game_params gp = { .kind = GAME_KIND_GO, .size = 9, .komi = 7.5 };
	check_backend(&gp, NN_ENC_GO_NATIVE, 3, 0, 24, 0, NN_DTYPE_FP32, 1e-4, 4);
}

Test(nn_cpu, connect4_2x16_wdl_matches_reference)
{
	game_params gp = game_params_default(GAME_KIND_CONNECT4);
	check_backend(&gp, NN_ENC_C4, 3, 2, 16, 0, NN_DTYPE_FP32, 1e-4, 5);
}

Test(nn_cpu, connect4_3x32_tanh_matches_reference)
{
	game_params gp = game_params_default(GAME_KIND_CONNECT4);
	check_backend(&gp, NN_ENC_C4, 1, 3, 32, 0, NN_DTYPE_FP32, 1e-4, 6);
}

/* bf16 keeps 8 bits of mantissa: only a loose agreement is expected. Skips
 * itself on CPUs without AVX-512 BF16 (and only there). */
Test(nn_cpu, bf16_roughly_matches_reference)
{
	game_params gp = { .kind = GAME_KIND_GO, .size = 9, .komi = 7.5 };
	check_backend(&gp, NN_ENC_GO_NATIVE, 1, 2, 32, 0, NN_DTYPE_BF16, 0.1, 7);
}

Test(nn_cpu, direct_and_winograd_choices_agree)
{
	game_params gp = { .kind = GAME_KIND_GO, .size = 9, .komi = 7.5 };
	nn_arch a = nn_arch_default(&gp, 2, 32);
	char err[512];
	nn_net *net = nn_net_new(&a, err, sizeof(err));
	cr_assert(net, "%s", err);
	nn_net_init_random(net, 11);
	size_t in_n = (size_t)a.in_planes * 81, np = (size_t)a.policy_outputs;
	float planes[4 * 27 * 81], pol[2][4 * 82], val[2][4];
	random_positions(&gp, a.encoding, 4, 40, 5, planes);
	(void)in_n;
	for (int k = 0; k < 2; k++) {
		nn_backend_options opt = nn_backend_options_default();
		opt.algo = k ? NN_CONV_WINOGRAD : NN_CONV_DIRECT;
		nn_backend *be = nn_backend_new(&nn_backend_cpu, net, 4, &opt, err, sizeof(err));
		cr_assert(be, "%s", err);
		cr_assert_eq(nn_backend_forward(be, 4, planes, pol[k], val[k], NULL), 0);
		nn_backend_free(be);
	}
	assert_close(pol[1], pol[0], 4 * np, 1e-4, "policy");
	assert_close(val[1], val[0], 4, 1e-4, "value");
	nn_net_free(net);
}

/* Squeeze-excitation blocks (alternating with plain ones): Winograd
 * (blocked layout) for odd seeds, direct (nhwc) for even ones. */
Test(nn_cpu, se_go9_3x16_matches_reference)
{
	game_params gp = { .kind = GAME_KIND_GO, .size = 9, .komi = 7.5 };
	check_backend(&gp, NN_ENC_GO_NATIVE, 1, 3, 16, 8, NN_DTYPE_FP32, 1e-4, 31);
}

Test(nn_cpu, se_go19_2x32_matches_reference)
{
	game_params gp = { .kind = GAME_KIND_GO, .size = 19, .komi = 7.5 };
	check_backend(&gp, NN_ENC_GO_NATIVE, 1, 2, 32, 16, NN_DTYPE_FP32, 1e-4, 32);
}

Test(nn_cpu, se_go19_lz18_1x16_winograd_matches_reference)
{
	game_params gp = { .kind = GAME_KIND_GO, .size = 19, .komi = 7.5 };
	check_backend(&gp, NN_ENC_LZ18, 1, 1, 16, 4, NN_DTYPE_FP32, 1e-4, 35);
}

Test(nn_cpu, se_connect4_3x24_wdl_matches_reference)
{
	game_params gp = game_params_default(GAME_KIND_CONNECT4);
	check_backend(&gp, NN_ENC_C4, 3, 3, 24, 8, NN_DTYPE_FP32, 1e-4, 34);
}

Test(nn_cpu, se_bf16_roughly_matches_reference)
{
	game_params gp = { .kind = GAME_KIND_GO, .size = 9, .komi = 7.5 };
	check_backend(&gp, NN_ENC_GO_NATIVE, 1, 2, 32, 8, NN_DTYPE_BF16, 0.1, 36);
}

Test(nn_cpu, bn_folding_keeps_the_outputs)
{
	game_params gps[2] = { { .kind = GAME_KIND_GO, .size = 9, .komi = 7.5 },
			       game_params_default(GAME_KIND_CONNECT4) };
	for (int gi = 0; gi < 2; gi++) {
		nn_arch a = nn_arch_default(&gps[gi], 2, 12);
		char err[512];
		if (gi == 0) {
			a.block_kind[1] = NN_BLOCK_SE; /* the reference runs SE */
			a.se_channels = 4;
		}
		nn_net *net = nn_net_new(&a, err, sizeof(err));
		cr_assert(net, "%s", err);
		nn_net_init_random(net, 21 + gi);
		nn_net *folded = nn_net_clone(net);
		cr_assert(folded);
		nn_net_fold_bn(folded);
		cr_assert(folded->bn_folded);
		nn_net_fold_bn(folded); /* idempotent */
		size_t in_n = (size_t)a.in_planes * a.board_w * a.board_h, np = (size_t)a.policy_outputs;
		float *planes = malloc(sizeof(float) * in_n * 3);
		float *p0 = malloc(sizeof(float) * np * 3), *p1 = malloc(sizeof(float) * np * 3);
		float v0[3], v1[3], w0[9], w1[9];
		random_positions(&gps[gi], a.encoding, 3, 30, 9, planes);
		nn_reference_forward(net, 3, planes, p0, v0, w0);
		nn_reference_forward(folded, 3, planes, p1, v1, w1);
		assert_close(p1, p0, 3 * np, 1e-5, "policy");
		assert_close(v1, v0, 3, 1e-5, "value");
		/* And the weights really changed: folding is not a no-op. */
		cr_assert(memcmp(net->input.w, folded->input.w, sizeof(float) * 9) != 0);
		nn_net_free(net);
		nn_net_free(folded);
		free(planes);
		free(p0);
		free(p1);
	}
}

/* Masked pooling: a net of 7x7 and 9x9 Go boards (the 9x9 frame) whose SE
 * means are over each position's own board. The backend matches the
 * reference in fp32 (both algorithms) and int8 (its calibration's
 * tolerance) on 7x7 positions in the frame and 9x9 ones; and masking
 * matters: the same 7x7 positions through the same weights with the plain
 * mean over the frame give other values, 9x9 ones the same. */
Test(nn_cpu, masked_se_pooling_matches_reference)
{
	enum { NB = 8 };
	char err[512];
	game_params g9 = { .kind = GAME_KIND_GO, .size = 9, .komi = 7.5 };
	game_params g7 = { .kind = GAME_KIND_GO, .size = 7, .komi = 7.5 };
	nn_arch a = nn_arch_default(&g9, 2, 16);
	a.sizes = 1u << 7 | 1u << 9;
	a.masked_pool = 1;
	nn_arch_set_se(&a, 8);
	nn_net *net = nn_net_new(&a, err, sizeof(err));
	cr_assert(net, "%s", err);
	nn_net_init_random(net, 51);
	nn_net *plain = nn_net_clone(net);
	cr_assert(plain);
	plain->arch.masked_pool = 0;
	size_t hw = 81, in_n = (size_t)a.in_planes * hw, np = (size_t)a.policy_outputs;
	float *planes = calloc(in_n * NB, sizeof(float));
	float *small = malloc(sizeof(float) * (size_t)a.in_planes * 49 * NB);
	cr_assert(planes && small);
	/* Even positions 7x7 (random play, in the frame's lower left
	 * corner), odd ones 9x9. */
	random_positions(&g7, a.encoding, NB, 30, 53, small);
	random_positions(&g9, a.encoding, NB, 40, 54, planes);
	for (int n = 0; n < NB; n += 2) {
		memset(planes + n * in_n, 0, sizeof(float) * in_n);
		for (int c = 0; c < a.in_planes; c++)
			for (int y = 0; y < 7; y++)
				for (int x = 0; x < 7; x++)
					planes[n * in_n + (size_t)c * hw + (size_t)y * 9 + x] =
						small[(size_t)n * a.in_planes * 49 + (size_t)c * 49 +
						      (size_t)y * 7 + x];
	}
	float pol[NB * 82], val[NB], wdl[3 * NB], ref_pol[82], ref_val[1], ref_wdl[3], p2[82],
		v2[1];
	nn_dtype precs[3] = { NN_DTYPE_FP32, NN_DTYPE_FP32, NN_DTYPE_INT8 };
	double tols[3] = { 1e-4, 1e-4, 0.15 };
	for (int k = 0; k < 3; k++) {
		nn_backend_options opt = nn_backend_options_default();
		opt.threads = 1;
		opt.precision = precs[k];
		opt.algo = k == 1 ? NN_CONV_WINOGRAD : NN_CONV_DIRECT;
		nn_backend *be = nn_backend_new(&nn_backend_cpu, net, NB, &opt, err, sizeof(err));
		cr_assert(be, "%s", err);
		cr_assert_eq(nn_backend_forward(be, NB, planes, pol, val, wdl), 0);
		for (int n = 0; n < NB; n++) {
			nn_reference_forward(net, 1, planes + n * in_n, ref_pol, ref_val, ref_wdl);
			assert_close(pol + n * np, ref_pol, np, tols[k], "policy");
			assert_close(val + n, ref_val, 1, tols[k], "value");
		}
		nn_backend_free(be);
	}
	for (int n = 0; n < NB; n++) {
		nn_reference_forward(net, 1, planes + n * in_n, ref_pol, ref_val, ref_wdl);
		nn_reference_forward(plain, 1, planes + n * in_n, p2, v2, ref_wdl);
		double d = fabs(v2[0] - ref_val[0]);
		for (size_t i = 0; i < np; i++)
			d = fmax(d, fabs(p2[i] - ref_pol[i]));
		if (n % 2)
			cr_assert_lt(d, 1e-6, "a 9x9 position: the frame is its board (%g)", d);
		else
			cr_assert_gt(d, 1e-3, "a 7x7 position: masking changes nothing (%g)", d);
	}
	free(planes);
	free(small);
	nn_net_free(plain);
	nn_net_free(net);
}
