/* check.c: the checking backend (--backend check), after lc0's
 * network_check and ggml's test-backend-ops: a table of the same shape as
 * every backend that runs two of them on each batch, hands back the first
 * one's outputs, and measures how far they are from the second's.
 *
 * The difference of an output element is |test - ref| / max(1, |ref|), the
 * scaling the CUDA and CPU tests use; the tolerance is the test backend's
 * precision's (nn_check_tolerance) unless the options give one. Every
 * forward beyond it is reported on stderr and, unless check_warn_only,
 * fails; the largest differences seen (per output: policy logits, value,
 * win/draw/loss) are printed when the context is destroyed and are
 * readable with nn_check_stats.
 *
 * To check a new backend against the CPU, pass it as opt->check_test (and
 * the CPU or nn_backend_reference as check_ref); --backend check is CUDA
 * against the CPU. Wrapping the CPU backend with the reference is how the
 * tests exercise this table without a device. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/backend.h"

/* ---- the reference as a backend ------------------------------------------- */

static int ref_create(const nn_net *net, int max_batch, const nn_backend_options *opt,
		      void **ctx, char *err, size_t errlen)
{
	nn_net *copy = nn_net_clone(net);
	if (!copy) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	*ctx = copy;
	return 0;
}

static int ref_forward_heads(void *ctx, int batch, const float *planes, float *policy_logits,
			     float *value, float *wdl, float *ownership, float *score)
{
	const nn_net *net = ctx;
	nn_reference_forward_heads(net, batch, planes, policy_logits, value, wdl, ownership, score);
	if (wdl && net->arch.value_outputs == 1) /* backend.h's wdl of a 1-output net */
		for (int i = 0; i < batch; i++) {
			wdl[3 * i] = (1.0f + value[i]) / 2.0f;
			wdl[3 * i + 1] = 0.0f;
			wdl[3 * i + 2] = (1.0f - value[i]) / 2.0f;
		}
	return 0;
}

static int ref_forward(void *ctx, int batch, const float *planes, float *policy_logits,
		       float *value, float *wdl)
{
	return ref_forward_heads(ctx, batch, planes, policy_logits, value, wdl, NULL, NULL);
}

static void ref_destroy(void *ctx) { nn_net_free(ctx); }

static void ref_describe(void *ctx, char *buf, size_t len)
{
	snprintf(buf, len, "reference (plain loops in double, nn/reference.c)");
}

const nn_backend_ops nn_backend_reference = {
	.name = "reference",
	.create = ref_create,
	.forward = ref_forward,
	.forward_heads = ref_forward_heads,
	.destroy = ref_destroy,
	.describe = ref_describe,
};

/* ---- the checking backend ------------------------------------------------- */

static const char *const ck_output_names[NN_CHECK_OUTPUTS] = { "policy", "value", "wdl",
								"ownership", "score" };

typedef struct ck_ctx {
	nn_backend *test, *ref; /* the backend checked, and the one it is checked against */
	int np;                 /* policy outputs */
	int hw;                 /* points of the board (ownership outputs) */
	float *pol, *val, *wdl; /* the reference's outputs, max batch */
	float *own, *score;     /* the reference's heads, max batch */
	float *twdl;            /* the test's wdl when the caller passes none */
	double tol;             /* largest allowed difference */
	int warn_only;          /* 1: report, never fail */
	nn_check_stats st;      /* what has been seen */
} ck_ctx;

double nn_check_tolerance(nn_dtype precision)
{
	switch (precision) {
	case NN_DTYPE_FP32:
		return 1e-4; /* different summation orders, fp32 accumulation */
	case NN_DTYPE_FP16:
		return 32 * 0x1p-10; /* a tower in half precision: 32 epsilons */
	case NN_DTYPE_BF16:
		return 8 * 0x1p-7; /* bf16's 8-bit significand */
	case NN_DTYPE_INT8:
		return 0.05; /* measured value differences stay under 0.01 */
	}
	return 1e-4;
}

static void ck_destroy(void *ctx)
{
	ck_ctx *c = ctx;
	if (!c)
		return;
	if (c->st.forwards > 0) {
		fprintf(stderr, "check: %ld forwards, %ld positions: largest difference", c->st.forwards,
			c->st.positions);
		for (int k = 0; k < NN_CHECK_OUTPUTS; k++)
			fprintf(stderr, "%s %s %.3g", k ? "," : "", ck_output_names[k], c->st.worst[k]);
		fprintf(stderr, " (tolerance %.3g): %s\n", c->tol,
			c->st.beyond ? "BEYOND in some forwards" : "ok");
	}
	nn_backend_free(c->test);
	nn_backend_free(c->ref);
	free(c->pol);
	free(c->val);
	free(c->wdl);
	free(c->twdl);
	free(c->own);
	free(c->score);
	free(c);
}

static int ck_create(const nn_net *net, int max_batch, const nn_backend_options *opt,
		     void **out_ctx, char *err, size_t errlen)
{
	*out_ctx = NULL;
	const nn_backend_ops *test_ops = opt->check_test ? opt->check_test : &nn_backend_cuda;
	const nn_backend_ops *ref_ops = opt->check_ref ? opt->check_ref : &nn_backend_cpu;
	if (test_ops == &nn_backend_check || ref_ops == &nn_backend_check) {
		snprintf(err, errlen, "check: cannot check the checking backend");
		return -1;
	}
	ck_ctx *c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	const nn_arch *a = &net->arch;
	c->np = a->policy_outputs;
	c->hw = a->board_w * a->board_h;
	c->tol = opt->check_tolerance > 0 ? opt->check_tolerance : nn_check_tolerance(opt->precision);
	c->warn_only = opt->check_warn_only;
	nn_backend_options to = *opt, ro = *opt;
	to.check_test = to.check_ref = NULL;
	ro.check_test = ro.check_ref = NULL;
	ro.precision = NN_DTYPE_FP32; /* the reference runs at full precision */
	char e[512];
	c->test = nn_backend_new(test_ops, net, max_batch, &to, e, sizeof(e));
	if (!c->test) {
		snprintf(err, errlen, "check: %s: %s", test_ops->name, e);
		goto fail;
	}
	c->ref = nn_backend_new(ref_ops, net, max_batch, &ro, e, sizeof(e));
	if (!c->ref) {
		snprintf(err, errlen, "check: %s: %s", ref_ops->name, e);
		goto fail;
	}
	size_t mb = (size_t)max_batch;
	c->pol = malloc(sizeof(float) * mb * (size_t)c->np);
	c->val = malloc(sizeof(float) * mb);
	c->wdl = malloc(sizeof(float) * mb * 3);
	c->twdl = malloc(sizeof(float) * mb * 3);
	c->own = calloc(mb * (size_t)c->hw, sizeof(float));
	c->score = calloc(mb, sizeof(float));
	if (!c->pol || !c->val || !c->wdl || !c->twdl || !c->own || !c->score) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	*out_ctx = c;
	return 0;
fail:
	ck_destroy(c);
	return -1;
}

/* Largest scaled difference of n elements; its index into *at. */
static double ck_worst(const float *got, const float *want, size_t n, size_t *at)
{
	double w = 0.0;
	*at = 0;
	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)got[i] - want[i]) / fmax(1.0, fabs((double)want[i]));
		if (!(d <= w)) { /* NaN counts as the worst */
			w = isnan(d) ? INFINITY : d;
			*at = i;
		}
	}
	return w;
}

static int ck_forward_heads(void *ctx, int batch, const float *planes, float *policy_logits,
			    float *value, float *wdl, float *ownership, float *score)
{
	ck_ctx *c = ctx;
	float *tw = wdl ? wdl : c->twdl;
	bool heads = ownership || score;
	int th = heads ? nn_backend_heads(c->test) : 0;
	/* The test's heads where it has them; the rest are the reference's. */
	float *town = th & NN_HEAD_OWN ? ownership : NULL;
	float *tscore = th & NN_HEAD_SCORE ? score : NULL;
	if ((th ? nn_backend_forward_heads(c->test, batch, planes, policy_logits, value, tw, town,
					   tscore)
		: nn_backend_forward(c->test, batch, planes, policy_logits, value, tw)) < 0)
		return -1;
	if ((heads ? nn_backend_forward_heads(c->ref, batch, planes, c->pol, c->val, c->wdl,
					      ownership ? c->own : NULL, score ? c->score : NULL)
		   : nn_backend_forward(c->ref, batch, planes, c->pol, c->val, c->wdl)) < 0)
		return -1;
	size_t n_own = (size_t)batch * (size_t)c->hw;
	if (ownership && !town)
		memcpy(ownership, c->own, sizeof(float) * n_own);
	if (score && !tscore)
		memcpy(score, c->score, sizeof(float) * (size_t)batch);
	size_t at[NN_CHECK_OUTPUTS] = { 0 };
	double d[NN_CHECK_OUTPUTS] = {
		ck_worst(policy_logits, c->pol, (size_t)batch * (size_t)c->np, &at[0]),
		ck_worst(value, c->val, (size_t)batch, &at[1]),
		ck_worst(tw, c->wdl, (size_t)batch * 3, &at[2]),
		town ? ck_worst(town, c->own, n_own, &at[3]) : 0,
		tscore ? ck_worst(tscore, c->score, (size_t)batch, &at[4]) : 0,
	};
	const float *got[NN_CHECK_OUTPUTS] = { policy_logits, value, tw, ownership, score };
	const float *want[NN_CHECK_OUTPUTS] = { c->pol, c->val, c->wdl, c->own, c->score };
	int beyond = 0;
	for (int k = 0; k < NN_CHECK_OUTPUTS; k++) {
		if (d[k] > c->st.worst[k])
			c->st.worst[k] = d[k];
		beyond |= !(d[k] <= c->tol);
	}
	c->st.forwards++;
	c->st.positions += batch;
	if (!beyond)
		return 0;
	c->st.beyond++;
	fprintf(stderr, "check: forward %ld (batch %d) beyond tolerance %.3g:", c->st.forwards, batch,
		c->tol);
	for (int k = 0; k < NN_CHECK_OUTPUTS; k++) {
		size_t per = k == 0 ? (size_t)c->np : k == 2 ? 3 : k == 3 ? (size_t)c->hw : 1;
		if (!got[k])
			continue;
		fprintf(stderr, " %s %.3g (position %zu: %s %.7g, %s %.7g)", ck_output_names[k], d[k],
			at[k] / per, c->test->ops->name, got[k][at[k]], c->ref->ops->name,
			want[k][at[k]]);
	}
	fprintf(stderr, "\n");
	return c->warn_only ? 0 : -1;
}

static int ck_forward(void *ctx, int batch, const float *planes, float *policy_logits,
		      float *value, float *wdl)
{
	return ck_forward_heads(ctx, batch, planes, policy_logits, value, wdl, NULL, NULL);
}

static void ck_describe(void *ctx, char *buf, size_t len)
{
	ck_ctx *c = ctx;
	char t[512], r[256];
	c->test->ops->describe(c->test->ctx, t, sizeof(t));
	c->ref->ops->describe(c->ref->ctx, r, sizeof(r));
	snprintf(buf, len, "check (tolerance %.3g%s): %s against %s", c->tol,
		 c->warn_only ? ", report only" : "", t, r);
}

void nn_check_get_stats(const nn_backend *be, nn_check_stats *out)
{
	const ck_ctx *c = be->ctx;
	*out = c->st;
}

const nn_backend_ops nn_backend_check = {
	.name = "check",
	.create = ck_create,
	.forward = ck_forward,
	.forward_heads = ck_forward_heads,
	.destroy = ck_destroy,
	.describe = ck_describe,
};
