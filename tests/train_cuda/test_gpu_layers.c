/* Each layer of the GPU trainer against the CPU trainer's (train/layers.h),
 * forward and backward, on random inputs: one table, as ggml's
 * test-backend-ops compares every op with the CPU.
 *
 * The difference of an output element is |gpu - cpu| / max(1, |cpu|); a row
 * passes when the worst over all its outputs (values, statistics, every
 * gradient) is within its tolerance. fp32 throughout: the kernels
 * accumulate in fp32 and double, oneDNN in fp32, so 1e-4 leaves room for
 * the summation orders only.
 *
 * To add a layer: give it a gpu_layer_* twin in train/cuda/gpu_layers.c
 * with the CPU function's signature, write a gl_run_* below that feeds both
 * the same inputs and returns the worst difference (gl_worst over each
 * output), and add a row to the table with its shape and tolerance.
 *
 * The device rows skip without a device (and fail under SENTE_REQUIRE_GPU);
 * the refusal without one is checked everywhere. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "engine/rng.h"
#include "tests/gpu_skip.h"
#include "train/cuda/gpu_layers.h"
#include "train/layers.h"

typedef struct gl_case gl_case;
struct gl_case {
	const char *name;
	double (*run)(const gl_case *k); /* worst difference over every output */
	int n, c, h, w;                  /* activations (bn, relu, se); n rows (fc, losses) */
	int nin, nout;                   /* fc: features in and out; losses: np, vo; opp
					  * loss: np; se: nin the bottleneck, nout 1 with a
					  * residual skip */
	int with_wdl;                    /* losses: 1 wdl targets, 0 derived from value;
					  * se: 1 means masked to a board of (h - 2) x
					  * (w - 2) in the lower left corner of the h x w
					  * frame (a net of several sizes) */
	double tol;
};

/* n uniform values in [lo, hi). */
static float *gl_rand(size_t n, float lo, float hi, uint64_t *s)
{
	float *p = malloc(sizeof(float) * (n ? n : 1));
	cr_assert(p);
	for (size_t i = 0; i < n; i++)
		p[i] = lo + (hi - lo) * (float)rng_uniform(s);
	return p;
}

static float *gl_buf(size_t n)
{
	float *p = calloc(n ? n : 1, sizeof(float));
	cr_assert(p);
	return p;
}

/* Worst |a - b| / max(1, |b|) over n, folded into *w. */
static void gl_worst(const float *a, const float *b, size_t n, double *w)
{
	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)a[i] - b[i]) / fmax(1.0, fabs((double)b[i]));
		if (!(d <= *w))
			*w = isnan(d) ? INFINITY : d;
	}
}

static double gl_run_bn(const gl_case *k)
{
	char err[512];
	uint64_t s = 7;
	size_t act = (size_t)k->n * k->c * k->h * k->w;
	float *x = gl_rand(act, -2, 3, &s), *dy = gl_rand(act, -1, 1, &s);
	float *g = gl_rand((size_t)k->c, 0.5f, 1.5f, &s), *b = gl_rand((size_t)k->c, -0.5f, 0.5f, &s);
	float *out[2][6];
	const size_t len[6] = { act, act, (size_t)k->c, (size_t)k->c, (size_t)k->c, (size_t)k->c };
	for (int v = 0; v < 2; v++)
		for (int i = 0; i < 6; i++)
			out[v][i] = gl_buf(len[i]);
	cr_assert_eq(train_layer_bn(k->n, k->c, k->h, k->w, x, g, b, dy, out[0][0], out[0][2],
				    out[0][3], out[0][1], out[0][4], out[0][5], err, sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(gpu_layer_bn(k->n, k->c, k->h, k->w, x, g, b, dy, out[1][0], out[1][2],
				  out[1][3], out[1][1], out[1][4], out[1][5], err, sizeof(err)),
		     0, "%s", err);
	double w = 0;
	for (int i = 0; i < 6; i++)
		gl_worst(out[1][i], out[0][i], len[i], &w);
	for (int v = 0; v < 2; v++)
		for (int i = 0; i < 6; i++)
			free(out[v][i]);
	free(x);
	free(dy);
	free(g);
	free(b);
	return w;
}

static double gl_run_relu(const gl_case *k)
{
	char err[512];
	uint64_t s = 11;
	size_t act = (size_t)k->n * k->c * k->h * k->w;
	float *x = gl_rand(act, -1, 1, &s), *dy = gl_rand(act, -1, 1, &s);
	float *y0 = gl_buf(act), *y1 = gl_buf(act), *d0 = gl_buf(act), *d1 = gl_buf(act);
	cr_assert_eq(train_layer_relu(k->n, k->c, k->h, k->w, x, dy, y0, d0, err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_eq(gpu_layer_relu(k->n, k->c, k->h, k->w, x, dy, y1, d1, err, sizeof(err)), 0,
		     "%s", err);
	double w = 0;
	gl_worst(y1, y0, act, &w);
	gl_worst(d1, d0, act, &w);
	free(x);
	free(dy);
	free(y0);
	free(y1);
	free(d0);
	free(d1);
	return w;
}

static double gl_run_fc(const gl_case *k)
{
	char err[512];
	uint64_t s = 13;
	size_t nx = (size_t)k->n * k->nin, nw = (size_t)k->nout * k->nin, ny = (size_t)k->n * k->nout;
	float *x = gl_rand(nx, -1, 1, &s), *wt = gl_rand(nw, -0.3f, 0.3f, &s);
	float *b = gl_rand((size_t)k->nout, -0.1f, 0.1f, &s), *dy = gl_rand(ny, -1, 1, &s);
	float *out[2][4];
	const size_t len[4] = { ny, nx, nw, (size_t)k->nout };
	for (int v = 0; v < 2; v++)
		for (int i = 0; i < 4; i++)
			out[v][i] = gl_buf(len[i]);
	cr_assert_eq(train_layer_fc(k->n, k->nin, k->nout, x, wt, b, dy, out[0][0], out[0][1],
				    out[0][2], out[0][3], err, sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(gpu_layer_fc(k->n, k->nin, k->nout, x, wt, b, dy, out[1][0], out[1][1],
				  out[1][2], out[1][3], err, sizeof(err)),
		     0, "%s", err);
	double w = 0;
	for (int i = 0; i < 4; i++)
		gl_worst(out[1][i], out[0][i], len[i], &w);
	for (int v = 0; v < 2; v++)
		for (int i = 0; i < 4; i++)
			free(out[v][i]);
	free(x);
	free(wt);
	free(b);
	free(dy);
	return w;
}

/* An SE block's gate from its second BN's output u, with the skip and
 * ReLU after it: y, du, dskip and the two FCs' gradients. */
static double gl_run_se(const gl_case *k)
{
	char err[512];
	uint64_t s = 19;
	int n = k->n, c = k->c, sb = k->nin;
	size_t act = (size_t)n * c * k->h * k->w, n1 = (size_t)sb * c, n2 = 2 * n1;
	float *u = gl_rand(act, -2, 2, &s), *dy = gl_rand(act, -1, 1, &s);
	float *skip = k->nout ? gl_rand(act, -1, 1, &s) : NULL;
	float *w1 = gl_rand(n1, -0.5f, 0.5f, &s), *b1 = gl_rand((size_t)sb, -0.2f, 0.2f, &s);
	float *w2 = gl_rand(n2, -0.5f, 0.5f, &s), *b2 = gl_rand(2 * (size_t)c, -0.5f, 0.5f, &s);
	/* Masked pooling: position i's board is the frame's lower left
	 * (h - 2) x (w - 2) corner, or the whole frame for every third. */
	float *pw = NULL;
	if (k->with_wdl) {
		int hw = k->h * k->w;
		pw = malloc(sizeof(float) * (size_t)n * hw);
		cr_assert(pw);
		for (int i = 0; i < n; i++) {
			int bw = i % 3 == 2 ? k->w : k->w - 2, bh = i % 3 == 2 ? k->h : k->h - 2;
			for (int p = 0; p < hw; p++) {
				bool on = p % k->w < bw && p / k->w < bh;
				pw[(size_t)i * hw + p] = on ? 1.0f / (float)(bw * bh) : 0.0f;
			}
		}
	}
	float *out[2][7];
	const size_t len[7] = { act, act, act, n1, (size_t)sb, n2, 2 * (size_t)c };
	for (int v = 0; v < 2; v++)
		for (int i = 0; i < 7; i++)
			out[v][i] = gl_buf(len[i]);
	cr_assert_eq(train_layer_se(n, c, sb, k->h, k->w, u, skip, pw, w1, b1, w2, b2, dy, out[0][0],
				    out[0][1], out[0][2], out[0][3], out[0][4], out[0][5], out[0][6],
				    err, sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(gpu_layer_se(n, c, sb, k->h, k->w, u, skip, pw, w1, b1, w2, b2, dy, out[1][0],
				  out[1][1], out[1][2], out[1][3], out[1][4], out[1][5], out[1][6],
				  err, sizeof(err)),
		     0, "%s", err);
	double w = 0;
	for (int i = 0; i < 7; i++)
		gl_worst(out[1][i], out[0][i], len[i], &w);
	for (int v = 0; v < 2; v++)
		for (int i = 0; i < 7; i++)
			free(out[v][i]);
	free(u);
	free(dy);
	free(skip);
	free(pw);
	free(w1);
	free(b1);
	free(w2);
	free(b2);
	return w;
}

/* Policy targets: a distribution per row. */
static float *gl_policy(int n, int np, uint64_t *s)
{
	float *p = gl_rand((size_t)n * np, 0, 1, s);
	for (int r = 0; r < n; r++) {
		double sum = 0;
		for (int a = 0; a < np; a++)
			sum += p[(size_t)r * np + a];
		for (int a = 0; a < np; a++)
			p[(size_t)r * np + a] /= (float)sum;
	}
	return p;
}

static double gl_run_losses(const gl_case *k)
{
	char err[512];
	uint64_t s = 17;
	int n = k->n, np = k->nin, vo = k->nout;
	float *logits = gl_rand((size_t)n * np, -3, 3, &s), *pol = gl_policy(n, np, &s);
	float *vout = gl_rand((size_t)n * vo, -2, 2, &s), *val = gl_rand((size_t)n, -1, 1, &s);
	float *wdl = k->with_wdl ? gl_policy(n, 3, &s) : NULL;
	float *dl0 = gl_buf((size_t)n * np), *dl1 = gl_buf((size_t)n * np);
	float *dv0 = gl_buf((size_t)n * vo), *dv1 = gl_buf((size_t)n * vo);
	float lp0 = (float)train_loss_policy(n, np, logits, pol, dl0);
	float lv0 = (float)train_loss_value(n, vo, vout, val, wdl, dv0);
	double lp, lv;
	cr_assert_eq(gpu_layer_losses(n, np, logits, pol, vo, vout, val, wdl, &lp, &lv, dl1, dv1, err,
				      sizeof(err)),
		     0, "%s", err);
	float lp1 = (float)lp, lv1 = (float)lv;
	double w = 0;
	gl_worst(&lp1, &lp0, 1, &w);
	gl_worst(&lv1, &lv0, 1, &w);
	gl_worst(dl1, dl0, (size_t)n * np, &w);
	gl_worst(dv1, dv0, (size_t)n * vo, &w);
	free(logits);
	free(pol);
	free(vout);
	free(val);
	free(wdl);
	free(dl0);
	free(dl1);
	free(dv0);
	free(dv1);
	return w;
}

/* The opponent-reply loss at KataGo's weight, the CPU trainer's way
 * (train_loss_policy, then the gradient times the weight); with more than
 * one row, row 1 has no reply (a target of zeros: loss and gradient 0). */
static double gl_run_opp(const gl_case *k)
{
	char err[512];
	uint64_t s = 23;
	int n = k->n, np = k->nin;
	const float wt = 0.15f;
	float *logits = gl_rand((size_t)n * np, -3, 3, &s), *t = gl_policy(n, np, &s);
	if (n > 1)
		memset(t + np, 0, sizeof(float) * (size_t)np);
	float *dl0 = gl_buf((size_t)n * np), *dl1 = gl_buf((size_t)n * np);
	float l0 = (float)train_loss_policy(n, np, logits, t, dl0);
	for (size_t i = 0; i < (size_t)n * np; i++)
		dl0[i] *= wt;
	double l;
	cr_assert_eq(gpu_layer_opp_loss(n, np, logits, t, wt, &l, dl1, err, sizeof(err)), 0, "%s",
		     err);
	for (int a = 0; n > 1 && a < np; a++)
		cr_assert_eq(dl1[np + a], 0.0f, "a row without reply has gradient %g", dl1[np + a]);
	float l1 = (float)l;
	double w = 0;
	gl_worst(&l1, &l0, 1, &w);
	gl_worst(dl1, dl0, (size_t)n * np, &w);
	free(logits);
	free(t);
	free(dl0);
	free(dl1);
	return w;
}

/* The table: one row per layer and shape worth telling apart (channel
 * counts off a multiple of 8, one row, Go and Connect Four heads, SE
 * with and without the skip). */
static const gl_case gl_cases[] = {
	{ "bn 4x16 9x9", gl_run_bn, 4, 16, 9, 9, 0, 0, 0, 1e-4 },
	{ "bn 3x20 (padded) 19x19", gl_run_bn, 3, 20, 19, 19, 0, 0, 0, 1e-4 },
	{ "bn 2x3 (head width) 6x7", gl_run_bn, 2, 3, 6, 7, 0, 0, 0, 1e-4 },
	{ "relu 2x16 9x9", gl_run_relu, 2, 16, 9, 9, 0, 0, 0, 0 },
	{ "fc 8x64->1 (value, tanh)", gl_run_fc, 8, 0, 0, 0, 64, 1, 0, 1e-4 },
	{ "fc 5x32->3 (value, wdl)", gl_run_fc, 5, 0, 0, 0, 32, 3, 0, 1e-4 },
	{ "fc 1x128->3", gl_run_fc, 1, 0, 0, 0, 128, 3, 0, 1e-4 },
	{ "losses go9 tanh", gl_run_losses, 6, 0, 0, 0, 82, 1, 0, 1e-4 },
	{ "losses c4 wdl", gl_run_losses, 6, 0, 0, 0, 7, 3, 1, 1e-4 },
	{ "losses c4 wdl from value", gl_run_losses, 6, 0, 0, 0, 7, 3, 0, 1e-4 },
	{ "losses go19 one row", gl_run_losses, 1, 0, 0, 0, 362, 1, 0, 1e-4 },
	{ "opp loss go9, a row without reply", gl_run_opp, 6, 0, 0, 0, 82, 0, 0, 1e-4 },
	{ "opp loss c4, a row without reply", gl_run_opp, 5, 0, 0, 0, 7, 0, 0, 1e-4 },
	{ "opp loss go19 one row", gl_run_opp, 1, 0, 0, 0, 362, 0, 0, 1e-4 },
	{ "se 4x16/8 9x9 with skip", gl_run_se, 4, 16, 9, 9, 8, 1, 0, 1e-4 },
	{ "se 3x20/5 (padded) 19x19", gl_run_se, 3, 20, 19, 19, 5, 0, 0, 1e-4 },
	{ "se 1x32/8 6x7 (one row) with skip", gl_run_se, 1, 32, 6, 7, 8, 1, 0, 1e-4 },
	/* Means masked to each position's board (a net of several sizes). */
	{ "se 4x16/8 9x9 masked to 7x7 with skip", gl_run_se, 4, 16, 9, 9, 8, 1, 1, 1e-4 },
	{ "se 3x20/5 (padded) 13x13 masked to 11x11", gl_run_se, 3, 20, 13, 13, 5, 0, 1, 1e-4 },
};

Test(gpu_layers, every_layer_matches_the_cpu_trainer)
{
	SKIP_WITHOUT_GPU();
	for (size_t i = 0; i < sizeof(gl_cases) / sizeof(gl_cases[0]); i++) {
		const gl_case *k = &gl_cases[i];
		double w = k->run(k);
		cr_expect(w <= k->tol, "%s: worst difference %g, tolerance %g", k->name, w, k->tol);
	}
}

Test(gpu_layers, refuse_without_a_device)
{
	if (nn_cuda_device_count() > 0)
		cr_skip_test("a CUDA device is present");
	char err[256] = "";
	float x[4] = { 0 }, y[4], d[4];
	cr_assert_eq(gpu_layer_relu(1, 1, 2, 2, x, x, y, d, err, sizeof(err)), 1);
	cr_assert(strlen(err) > 10, "%s", err);
	double lp, lv;
	err[0] = 0;
	cr_assert_eq(gpu_layer_losses(1, 2, x, x, 1, x, x, NULL, &lp, &lv, y, d, err, sizeof(err)), 1);
	cr_assert(err[0]);
	err[0] = 0;
	cr_assert_eq(gpu_layer_opp_loss(1, 2, x, x, 0.15f, &lp, y, err, sizeof(err)), 1);
	cr_assert(err[0]);
	float g[4];
	err[0] = 0;
	cr_assert_eq(gpu_layer_se(1, 1, 1, 2, 2, x, NULL, NULL, x, x, x, x, x, y, d, g, x, x, x, x,
				  err, sizeof(err)),
		     1);
	cr_assert(err[0]);
}
