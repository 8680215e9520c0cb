/* The checking backend (nn/check.c, --backend check) without a device: the
 * CPU backend checked against the reference and against itself, a
 * tolerance that a forward exceeds (failing, or only reported), the
 * reference as a backend, and --backend check's selection. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/rng.h"
#include "nn/backend.h"
#include "nn/cuda/cuda.h"

enum { CK_MAXB = 8 };

/* A small random Go 9x9 net with a win/draw/loss head, an SE block and
 * the ownership and score heads. */
static nn_net *ck_net(uint64_t seed)
{
	char err[256];
	game_params gp = game_params_default(GAME_KIND_GO);
	gp.size = 9;
	nn_arch a = nn_arch_default(&gp, 2, 16);
	a.value_outputs = 3;
	a.se_channels = 4;
	a.block_kind[1] = NN_BLOCK_SE;
	nn_arch_set_heads(&a, NN_HEAD_OWN | NN_HEAD_SCORE);
	nn_net *net = nn_net_new(&a, err, sizeof(err));
	cr_assert(net, "%s", err);
	nn_net_init_random(net, seed);
	return net;
}

/* Stone-like planes: 0 or 1. */
static float *ck_planes(const nn_net *net, uint64_t seed)
{
	size_t n = (size_t)net->arch.in_planes * net->arch.board_w * net->arch.board_h * CK_MAXB;
	float *p = malloc(sizeof(float) * n);
	cr_assert(p);
	uint64_t s = seed | 1;
	for (size_t i = 0; i < n; i++)
		p[i] = (float)(rng_next(&s) % 3 == 0);
	return p;
}

/* A checking backend of test against ref on net, one thread. */
static nn_backend *ck_open(const nn_net *net, const nn_backend_ops *test,
			   const nn_backend_ops *ref, double tolerance, int warn_only)
{
	char err[512];
	nn_backend_options o = nn_backend_options_default();
	o.threads = 1;
	o.check_test = test;
	o.check_ref = ref;
	o.check_tolerance = tolerance;
	o.check_warn_only = warn_only;
	nn_backend *be = nn_backend_new(&nn_backend_check, net, CK_MAXB, &o, err, sizeof(err));
	cr_assert(be, "%s", err);
	return be;
}

/* Runs batches 1, 3 and 8 (the last with the heads) through `be` and
 * checks them against a plain CPU backend's outputs: the checking backend
 * hands back the test's. */
static void ck_run(nn_backend *be, const nn_net *net, const float *planes)
{
	char err[256];
	size_t np = (size_t)net->arch.policy_outputs;
	float *pol = malloc(sizeof(float) * np * CK_MAXB), *pol2 = malloc(sizeof(float) * np * CK_MAXB);
	float val[CK_MAXB], val2[CK_MAXB], wdl[3 * CK_MAXB], wdl2[3 * CK_MAXB];
	float own[81 * CK_MAXB], own2[81 * CK_MAXB], score[CK_MAXB], score2[CK_MAXB];
	nn_backend_options o = nn_backend_options_default();
	o.threads = 1;
	nn_backend *cpu = nn_backend_new(&nn_backend_cpu, net, CK_MAXB, &o, err, sizeof(err));
	cr_assert(cpu, "%s", err);
	static const int batches[] = { 1, 3, 8 };
	for (int i = 0; i < 3; i++) {
		int b = batches[i];
		if (i == 2) {
			cr_assert_eq(nn_backend_forward_heads(be, b, planes, pol, val, wdl, own, score), 0);
			cr_assert_eq(nn_backend_forward_heads(cpu, b, planes, pol2, val2, wdl2, own2, score2),
				     0);
			for (int k = 0; k < b * 81; k++)
				cr_assert_float_eq(own[k], own2[k], 1e-5, "ownership %d", k);
			for (int k = 0; k < b; k++)
				cr_assert_float_eq(score[k], score2[k], 1e-5, "score %d", k);
		} else {
			cr_assert_eq(nn_backend_forward(be, b, planes, pol, val, i == 1 ? NULL : wdl), 0);
			cr_assert_eq(nn_backend_forward(cpu, b, planes, pol2, val2, wdl2), 0);
		}
		for (size_t k = 0; k < (size_t)b * np; k++)
			cr_assert_float_eq(pol[k], pol2[k], 1e-5, "policy %zu", k);
		for (int k = 0; k < b; k++)
			cr_assert_float_eq(val[k], val2[k], 1e-5);
	}
	nn_backend_free(cpu);
	free(pol);
	free(pol2);
}

/* Checks test against ref on a net of `seed` through ck_run; the stats,
 * and the description into d. */
static nn_check_stats ck_check(uint64_t seed, const nn_backend_ops *test,
			       const nn_backend_ops *ref, char *d, size_t dlen)
{
	nn_net *net = ck_net(seed);
	float *planes = ck_planes(net, seed + 1);
	nn_backend *be = ck_open(net, test, ref, 0, 0);
	ck_run(be, net, planes);
	nn_check_stats st;
	nn_check_get_stats(be, &st);
	be->ops->describe(be->ctx, d, dlen);
	nn_backend_free(be);
	free(planes);
	nn_net_free(net);
	return st;
}

Test(nn_check, cpu_against_the_reference_is_within_tolerance)
{
	char d[1024];
	nn_check_stats st = ck_check(11, &nn_backend_cpu, &nn_backend_reference, d, sizeof(d));
	cr_assert_eq(st.forwards, 3);
	cr_assert_eq(st.positions, 12);
	cr_assert_eq(st.beyond, 0);
	for (int k = 0; k < NN_CHECK_OUTPUTS; k++) {
		cr_assert(st.worst[k] <= nn_check_tolerance(NN_DTYPE_FP32), "output %d: %g", k,
			  st.worst[k]);
		cr_assert(st.worst[k] > 0.0 || k == 2, "fp32 against double differs somewhere");
	}
	cr_assert(strstr(d, "check") && strstr(d, "reference"), "%s", d);
}

Test(nn_check, cpu_against_itself_agrees_exactly)
{
	char d[1024];
	nn_check_stats st = ck_check(21, &nn_backend_cpu, &nn_backend_cpu, d, sizeof(d));
	for (int k = 0; k < NN_CHECK_OUTPUTS; k++)
		cr_assert(st.worst[k] < 1e-6, "output %d: %g", k, st.worst[k]);
}

/* A tolerance no real arithmetic meets: the forward fails, or with
 * check_warn_only is counted and passes. */
Test(nn_check, beyond_the_tolerance_fails_or_is_reported)
{
	nn_net *net = ck_net(31);
	float *planes = ck_planes(net, 32);
	size_t np = (size_t)net->arch.policy_outputs;
	float *pol = malloc(sizeof(float) * np * CK_MAXB), val[CK_MAXB];
	nn_backend *be = ck_open(net, &nn_backend_cpu, &nn_backend_reference, 1e-12, 0);
	cr_assert_eq(nn_backend_forward(be, 4, planes, pol, val, NULL), -1);
	nn_check_stats st;
	nn_check_get_stats(be, &st);
	cr_assert_eq(st.beyond, 1);
	nn_backend_free(be);
	be = ck_open(net, &nn_backend_cpu, &nn_backend_reference, 1e-12, 1);
	cr_assert_eq(nn_backend_forward(be, 4, planes, pol, val, NULL), 0);
	cr_assert_eq(nn_backend_forward(be, 2, planes, pol, val, NULL), 0);
	nn_check_get_stats(be, &st);
	cr_assert_eq(st.beyond, 2);
	cr_assert_eq(st.forwards, 2);
	nn_backend_free(be);
	free(pol);
	free(planes);
	nn_net_free(net);
}

/* The reference as a backend fills wdl for a 1-output net as backend.h says. */
Test(nn_check, reference_backend_fills_wdl_of_a_tanh_head)
{
	char err[512];
	game_params gp = game_params_default(GAME_KIND_CONNECT4);
	nn_arch a = nn_arch_default(&gp, 1, 8);
	a.value_outputs = 1;
	nn_net *net = nn_net_new(&a, err, sizeof(err));
	cr_assert(net, "%s", err);
	nn_net_init_random(net, 5);
	float *planes = ck_planes(net, 6);
	float *pol = malloc(sizeof(float) * (size_t)a.policy_outputs * 2), val[2], wdl[6];
	nn_backend *be = nn_backend_new(&nn_backend_reference, net, 2, NULL, err, sizeof(err));
	cr_assert(be, "%s", err);
	cr_assert_eq(nn_backend_forward(be, 2, planes, pol, val, wdl), 0);
	for (int i = 0; i < 2; i++) {
		cr_assert_float_eq(wdl[3 * i] - wdl[3 * i + 2], val[i], 1e-6);
		cr_assert_float_eq(wdl[3 * i + 1], 0.0f, 0.0);
	}
	nn_backend_free(be);
	free(pol);
	free(planes);
	nn_net_free(net);
}

Test(nn_check, selection_and_refusals)
{
	char err[512] = "";
	nn_backend_kind k;
	cr_assert(nn_backend_kind_from_name("check", &k));
	cr_assert_eq(k, NN_BACKEND_CHECK);
	cr_assert_str_eq(nn_backend_kind_name(NN_BACKEND_CHECK), "check");
	nn_backend_options o = nn_backend_options_default();
	cr_assert_eq(nn_backend_parse_flag("--backend", "check", &o, err, sizeof(err)), 1);
	cr_assert_eq(o.kind, NN_BACKEND_CHECK);
	cr_assert_eq(nn_backend_parse_flag("--backend", "chek", &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "check"), "%s", err);

	nn_net *net = ck_net(41);
	nn_backend_set s;
	o.threads = 1;
	if (nn_cuda_device_count() == 0) {
		/* No fallback: a check on the CPU alone checks nothing. */
		err[0] = 0;
		cr_assert_eq(nn_backend_set_open(&s, net, 4, &o, err, sizeof(err)), -1);
		cr_assert(strstr(err, "CUDA device") && strlen(err) > 40, "%s", err);
	}
	/* The table cannot check itself. */
	o.check_test = &nn_backend_check;
	o.check_ref = &nn_backend_cpu;
	cr_assert_null(nn_backend_new(&nn_backend_check, net, 4, &o, err, sizeof(err)));
	cr_assert(strstr(err, "checking backend"), "%s", err);
	/* Through the set, with the CPU as the backend checked. */
	o.check_test = &nn_backend_cpu;
	o.check_ref = &nn_backend_reference;
	o.precision = NN_DTYPE_FP32;
	o.precision_given = 1;
	cr_assert_eq(nn_backend_set_open(&s, net, 4, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.n, 1);
	cr_assert(strstr(s.what, "check"), "%s", s.what);
	nn_backend_set_close(&s);
	nn_net_free(net);
}
