/* The oneDNN backend in int8 against the plain fp32/double reference.
 *
 * Random nets are harsh for int8: their policies are nearly flat (logits
 * of one position differ by a few hundredths), so a quantization error far
 * below anything that matters to search can swap the top two moves. The
 * tolerances below are set from measured numbers with a margin; the KL and
 * value errors are the stable measures, the top-1 agreement the noisy one.
 * Measured (128 calibration positions, seeds as in the tests):
 *   go 9x9 3x32:       top1 1.000, KL 4e-9,  value max diff 0.008
 *   go 19x19 2x32:     top1 0.938, KL 6e-6,  value max diff 0.005
 *   connect4 3x32 wdl: top1 0.984, KL 1.3e-5, value max diff 0.005
 *   go 9x9 3x32 SE:    top1 0.984, KL 7e-6,  value max diff 0.004
 *   go 9x9 no blocks:  top1 1.000, KL 4e-7,  value max diff 0.002
 * (logit differences stay under 0.02 against spans of 0.2 to 1.2). */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/backend.h"

static uint64_t i8_rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* n positions of random legal play (0..max_moves moves), encoded. */
static void i8_positions(const game_params *gp, nn_encoding enc, int n, int max_moves,
			 uint64_t seed, float *planes)
{
	static game g; /* large: keep off the stack */
	int moves[GAME_MAX_ACTIONS];
	uint64_t s = seed | 1;
	cr_assert_eq(game_init(&g, gp), GAME_OK);
	size_t in_n = (size_t)nn_encoding_planes(enc) * game_width(&g) * game_height(&g);
	for (int i = 0; i < n; i++) {
		cr_assert_eq(game_init(&g, gp), GAME_OK);
		int len = (int)(i8_rng(&s) % (uint64_t)(max_moves + 1));
		for (int m = 0; m < len; m++) {
			int k = game_legal_moves(&g, moves);
			if (k == 0)
				break;
			int mv = moves[i8_rng(&s) % (uint64_t)k];
			if (mv == game_pass_move(&g) && k > 1)
				mv = moves[0] == mv ? moves[1] : moves[0];
			cr_assert_eq(game_play(&g, mv), GAME_OK);
		}
		cr_assert_gt(nn_encode(&g, enc, planes + (size_t)i * in_n), 0);
	}
}

/* What int8 lost against the reference over some positions. */
typedef struct i8_stats {
	double top1;     /* share of positions with the same top action */
	double kl;       /* mean KL(reference || int8) of the softmax policies */
	double pol_max;  /* largest |logit difference| */
	double pol_span; /* mean (max - min) of the reference logits, for scale */
	double val_max;  /* largest |value difference| */
} i8_stats;

/* Random net (se > 0: blocks 0, 2, ... are SE of width se), int8 backend
 * with max batch 32, n positions (n <= 64) against the reference. */
static i8_stats i8_check(const game_params *gp, int value_outputs, int blocks, int channels,
			 int se, int n, uint64_t seed)
{
	enum { MAXB = 32, MAXN = 64 };
	char err[512];
	i8_stats st;
	memset(&st, 0, sizeof(st));
	cr_assert(n <= MAXN);
	nn_arch a = nn_arch_default(gp, blocks, channels);
	a.value_outputs = value_outputs;
	if (se > 0) {
		a.se_channels = se;
		for (int i = 0; i < blocks; i += 2)
			a.block_kind[i] = NN_BLOCK_SE;
	}
	nn_net *net = nn_net_new(&a, err, sizeof(err));
	cr_assert(net, "%s", err);
	nn_net_init_random(net, seed);
	size_t in_n = (size_t)a.in_planes * a.board_w * a.board_h, np = (size_t)a.policy_outputs;
	float *planes = malloc(sizeof(float) * in_n * MAXN);
	float *pol = malloc(sizeof(float) * np * MAXN), *ref = malloc(sizeof(float) * np);
	float val[MAXN], rv[1];
	cr_assert(planes && pol && ref);
	i8_positions(gp, a.encoding, n, gp->kind == GAME_KIND_GO ? a.board_w * a.board_h / 2 : 30,
		     seed * 11 + 3, planes);
	nn_backend_options opt = nn_backend_options_default();
	opt.threads = 2;
	opt.precision = NN_DTYPE_INT8;
	opt.algo = NN_CONV_DIRECT;
	opt.calib_positions = 128; /* fewer than the default: tests stay fast */
	nn_backend *be = nn_backend_new(&nn_backend_cpu, net, MAXB, &opt, err, sizeof(err));
	cr_assert(be, "%s", err);
	for (int off = 0; off < n; off += MAXB) {
		int b = n - off < MAXB ? n - off : MAXB;
		cr_assert_eq(nn_backend_forward(be, b, planes + off * in_n, pol + off * np, val + off,
						NULL), 0);
	}
	int agree = 0;
	for (int i = 0; i < n; i++) {
		const float *q = pol + i * np;
		nn_reference_forward(net, 1, planes + i * in_n, ref, rv, NULL);
		size_t bq = 0, br = 0;
		double mq = q[0], mr = ref[0], lo = ref[0], zq = 0, zr = 0;
		for (size_t k = 0; k < np; k++) {
			st.pol_max = fmax(st.pol_max, fabs((double)q[k] - ref[k]));
			bq = q[k] > q[bq] ? k : bq;
			br = ref[k] > ref[br] ? k : br;
			mq = fmax(mq, q[k]);
			mr = fmax(mr, ref[k]);
			lo = fmin(lo, ref[k]);
		}
		st.pol_span += (mr - lo) / n;
		agree += bq == br;
		for (size_t k = 0; k < np; k++) {
			zq += exp(q[k] - mq);
			zr += exp(ref[k] - mr);
		}
		for (size_t k = 0; k < np; k++) {
			double lr = ref[k] - mr - log(zr), lq = q[k] - mq - log(zq);
			st.kl += exp(lr) * (lr - lq) / n;
		}
		st.val_max = fmax(st.val_max, fabs((double)val[i] - rv[0]));
	}
	st.top1 = (double)agree / n;
	cr_log_info("int8 %dx%d se %d on %dx%d: top1 %.3f, kl %.3g, logit max diff %.4f "
		    "(mean logit span %.3f), value max diff %.4f", blocks, channels, se, a.board_w,
		    a.board_h, st.top1, st.kl, st.pol_max, st.pol_span, st.val_max);
	nn_backend_free(be);
	nn_net_free(net);
	free(planes);
	free(pol);
	free(ref);
	return st;
}

/* The agreement every int8 network here must keep with the reference:
 * the same best move on at least top1 of the positions, policies within
 * KL 1e-3, values within val_tol. */
static void expect_close(i8_stats st, double top1, double val_tol)
{
	cr_expect_geq(st.top1, top1, "top-1 agreement %.3f", st.top1);
	cr_expect_lt(st.kl, 1e-3, "policy KL %g", st.kl);
	cr_expect_lt(st.val_max, val_tol, "value diff %g", st.val_max);
}

Test(nn_int8, go9_3x32_close_to_reference)
{
	game_params gp = { .kind = GAME_KIND_GO, .size = 9, .komi = 7.5 };
	i8_stats st = i8_check(&gp, 1, 3, 32, 0, 64, 41);
	expect_close(st, 0.90, 0.05);
}

/* 20 channels: the head convs read the u8 tower output 8 channels at a
 * time, then the last 4 one by one. */
Test(nn_int8, go9_2x20_channel_tail_close_to_reference)
{
	game_params gp = { .kind = GAME_KIND_GO, .size = 9, .komi = 7.5 };
	i8_stats st = i8_check(&gp, 1, 2, 20, 0, 64, 43);
	expect_close(st, 0.90, 0.05);
}

Test(nn_int8, go19_2x32_close_to_reference)
{
	game_params gp = { .kind = GAME_KIND_GO, .size = 19, .komi = 7.5 };
	i8_stats st = i8_check(&gp, 1, 2, 32, 0, 48, 42);
	expect_close(st, 0.85, 0.05);
}

Test(nn_int8, connect4_3x32_wdl_close_to_reference)
{
	game_params gp = game_params_default(GAME_KIND_CONNECT4);
	i8_stats st = i8_check(&gp, 3, 3, 32, 0, 64, 43);
	expect_close(st, 0.90, 0.1);
}

Test(nn_int8, se_go9_3x32_close_to_reference)
{
	game_params gp = { .kind = GAME_KIND_GO, .size = 9, .komi = 7.5 };
	i8_stats st = i8_check(&gp, 1, 3, 32, 8, 64, 44);
	expect_close(st, 0.90, 0.05);
}

Test(nn_int8, no_blocks_close_to_reference)
{
	game_params gp = { .kind = GAME_KIND_GO, .size = 9, .komi = 7.5 };
	i8_stats st = i8_check(&gp, 3, 0, 16, 0, 32, 45);
	cr_expect_lt(st.kl, 1e-3, "policy KL %g", st.kl);
	cr_expect_lt(st.val_max, 0.05, "value diff %g", st.val_max);
}

/* A position's result does not depend on the batch it rides in (the
 * scales are fixed at create): batch 1, inside batch 7, inside chunks. */
Test(nn_int8, batch_does_not_change_results)
{
	game_params gp = { .kind = GAME_KIND_GO, .size = 9, .komi = 7.5 };
	nn_arch a = nn_arch_default(&gp, 2, 32);
	char err[512];
	nn_net *net = nn_net_new(&a, err, sizeof(err));
	cr_assert(net, "%s", err);
	nn_net_init_random(net, 46);
	size_t in_n = (size_t)a.in_planes * 81, np = (size_t)a.policy_outputs;
	static float planes[7 * 27 * 81], p7[7 * 82], p1[82];
	float v7[7], v1[1];
	i8_positions(&gp, a.encoding, 7, 40, 47, planes);
	nn_backend_options opt = nn_backend_options_default();
	opt.precision = NN_DTYPE_INT8;
	opt.calib_positions = 64;
	nn_backend *be = nn_backend_new(&nn_backend_cpu, net, 8, &opt, err, sizeof(err));
	cr_assert(be, "%s", err);
	cr_assert_eq(nn_backend_forward(be, 7, planes, p7, v7, NULL), 0);
	for (int i = 0; i < 7; i++) {
		cr_assert_eq(nn_backend_forward(be, 1, planes + i * in_n, p1, v1, NULL), 0);
		for (size_t k = 0; k < np; k++)
			cr_assert(fabsf(p1[k] - p7[i * np + k]) <= 1e-4f * fmaxf(1.0f, fabsf(p1[k])),
				  "position %d logit %zu: %g alone, %g in a batch", i, k, p1[k],
				  p7[i * np + k]);
		cr_assert(fabsf(v1[0] - v7[i]) <= 1e-4f);
	}
	nn_backend_free(be);
	nn_net_free(net);
}

Test(nn_int8, bad_calibration_count_is_refused)
{
	game_params gp = { .kind = GAME_KIND_GO, .size = 9, .komi = 7.5 };
	nn_arch a = nn_arch_default(&gp, 1, 8);
	char err[512] = "";
	nn_net *net = nn_net_new(&a, err, sizeof(err));
	cr_assert(net, "%s", err);
	nn_backend_options opt = nn_backend_options_default();
	opt.precision = NN_DTYPE_INT8;
	opt.calib_positions = -5;
	cr_assert_null(nn_backend_new(&nn_backend_cpu, net, 4, &opt, err, sizeof(err)));
	cr_assert(strstr(err, "calibration"), "message: %s", err);
	nn_net_free(net);
}
