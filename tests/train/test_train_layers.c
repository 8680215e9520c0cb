/* Each trainer layer's backward pass against central differences of a
 * double-precision reference of its forward pass, for the scalar
 * L = sum(y * dy) whose gradient is what backward returns. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/net.h"
#include "tests/train/train_util.h"
#include "train/layers.h"

#define FD_EPS 1e-6

static float *rand_floats(uint64_t *s, size_t n, double lo, double hi)
{
	float *p = malloc(sizeof(float) * (n ? n : 1));
	cr_assert(p);
	for (size_t i = 0; i < n; i++)
		p[i] = (float)tu_uniform(s, lo, hi);
	return p;
}

static double *to_double(const float *p, size_t n)
{
	double *d = malloc(sizeof(double) * n);
	cr_assert(d);
	for (size_t i = 0; i < n; i++)
		d[i] = p[i];
	return d;
}

/* |got - want| <= rel * |want| + abs for one gradient entry. */
static void check_grad(const char *what, size_t i, double got, double want, double rel, double abs)
{
	cr_assert(fabs(got - want) <= rel * fabs(want) + abs,
		  "%s[%zu]: backward %.9g, finite differences %.9g", what, i, got, want);
}

/* ---- conv ---------------------------------------------------------------- */

typedef struct conv_shape {
	int n, cin, cout, k, h, w; /* shape */
} conv_shape;

static void ref_conv(const conv_shape *s, const double *x, const double *wt, const double *b,
		     double *y)
{
	int pad = s->k / 2, hw = s->h * s->w;
	for (int n = 0; n < s->n; n++)
		for (int o = 0; o < s->cout; o++)
			for (int yy = 0; yy < s->h; yy++)
				for (int xx = 0; xx < s->w; xx++) {
					double acc = b[o];
					for (int i = 0; i < s->cin; i++)
						for (int ky = 0; ky < s->k; ky++)
							for (int kx = 0; kx < s->k; kx++) {
								int sy = yy + ky - pad, sx = xx + kx - pad;
								if (sy < 0 || sy >= s->h || sx < 0 || sx >= s->w)
									continue;
								acc += wt[((o * s->cin + i) * s->k + ky) * s->k + kx] *
								       x[(n * s->cin + i) * hw + sy * s->w + sx];
							}
					y[(n * s->cout + o) * hw + yy * s->w + xx] = acc;
				}
}

static double conv_objective(const conv_shape *s, const double *x, const double *wt,
			     const double *b, const double *dy)
{
	size_t ny = (size_t)s->n * s->cout * s->h * s->w;
	double *y = malloc(sizeof(double) * ny), l = 0;
	ref_conv(s, x, wt, b, y);
	for (size_t i = 0; i < ny; i++)
		l += y[i] * dy[i];
	free(y);
	return l;
}

/* FD of the objective in parameter p[i] (p is one of x, wt, b). */
static double conv_fd(const conv_shape *s, double *x, double *wt, double *b, const double *dy,
		      double *p, size_t i)
{
	double keep = p[i];
	p[i] = keep + FD_EPS;
	double lp = conv_objective(s, x, wt, b, dy);
	p[i] = keep - FD_EPS;
	double lm = conv_objective(s, x, wt, b, dy);
	p[i] = keep;
	return (lp - lm) / (2 * FD_EPS);
}

static void check_conv(conv_shape s, uint64_t seed)
{
	char err[256];
	uint64_t r = seed;
	size_t nx = (size_t)s.n * s.cin * s.h * s.w, ny = (size_t)s.n * s.cout * s.h * s.w,
	       nw = (size_t)s.cout * s.cin * s.k * s.k;
	float *x = rand_floats(&r, nx, -1, 1), *wt = rand_floats(&r, nw, -0.5, 0.5),
	      *b = rand_floats(&r, (size_t)s.cout, -0.2, 0.2), *dy = rand_floats(&r, ny, -1, 1);
	float *y = calloc(ny, sizeof(float)), *dx = calloc(nx, sizeof(float)),
	      *dw = calloc(nw, sizeof(float)), *db = calloc((size_t)s.cout, sizeof(float));
	cr_assert_eq(train_layer_conv(s.n, s.cin, s.cout, s.k, s.h, s.w, x, wt, b, dy, y, dx, dw,
				      db, err, sizeof(err)), 0, "%s", err);
	double *X = to_double(x, nx), *Wt = to_double(wt, nw), *B = to_double(b, (size_t)s.cout),
	       *DY = to_double(dy, ny), *Y = malloc(sizeof(double) * ny);
	ref_conv(&s, X, Wt, B, Y);
	for (size_t i = 0; i < ny; i++)
		check_grad("y", i, y[i], Y[i], 1e-4, 1e-5);
	for (size_t i = 0; i < nx; i++)
		check_grad("dx", i, dx[i], conv_fd(&s, X, Wt, B, DY, X, i), 1e-4, 1e-5);
	for (size_t i = 0; i < nw; i++)
		check_grad("dw", i, dw[i], conv_fd(&s, X, Wt, B, DY, Wt, i), 1e-4, 1e-5);
	for (int i = 0; i < s.cout; i++)
		check_grad("db", (size_t)i, db[i], conv_fd(&s, X, Wt, B, DY, B, (size_t)i), 1e-4, 1e-5);
	free(x), free(wt), free(b), free(dy), free(y), free(dx), free(dw), free(db);
	free(X), free(Wt), free(B), free(DY), free(Y);
}

Test(train_layers, conv3x3_backward_matches_finite_differences)
{
	check_conv((conv_shape){ .n = 2, .cin = 3, .cout = 4, .k = 3, .h = 5, .w = 4 }, 11);
}

Test(train_layers, conv1x1_backward_matches_finite_differences)
{
	check_conv((conv_shape){ .n = 3, .cin = 5, .cout = 2, .k = 1, .h = 4, .w = 3 }, 12);
}

/* ---- batch norm (training mode) ------------------------------------------- */

typedef struct bn_shape {
	int n, c, hw; /* shape */
} bn_shape;

static double bn_objective(const bn_shape *s, const double *x, const double *g, const double *be,
			   const double *dy, double *mean_out, double *var_out)
{
	double l = 0;
	for (int c = 0; c < s->c; c++) {
		double m = 0, v = 0, cnt = (double)s->n * s->hw;
		for (int n = 0; n < s->n; n++)
			for (int p = 0; p < s->hw; p++)
				m += x[(n * s->c + c) * s->hw + p];
		m /= cnt;
		for (int n = 0; n < s->n; n++)
			for (int p = 0; p < s->hw; p++) {
				double d = x[(n * s->c + c) * s->hw + p] - m;
				v += d * d;
			}
		v /= cnt;
		if (mean_out) {
			mean_out[c] = m;
			var_out[c] = v;
		}
		for (int n = 0; n < s->n; n++)
			for (int p = 0; p < s->hw; p++) {
				size_t i = (size_t)(n * s->c + c) * s->hw + p;
				l += (g[c] * (x[i] - m) / sqrt(v + NN_BN_EPS) + be[c]) * dy[i];
			}
	}
	return l;
}

static double bn_fd(const bn_shape *s, double *x, double *g, double *be, const double *dy,
		    double *p, size_t i)
{
	double keep = p[i];
	p[i] = keep + FD_EPS;
	double lp = bn_objective(s, x, g, be, dy, NULL, NULL);
	p[i] = keep - FD_EPS;
	double lm = bn_objective(s, x, g, be, dy, NULL, NULL);
	p[i] = keep;
	return (lp - lm) / (2 * FD_EPS);
}

Test(train_layers, batchnorm_training_backward_matches_finite_differences)
{
	char err[256];
	uint64_t r = 21;
	bn_shape s = { .n = 3, .c = 4, .hw = 6 };
	size_t nx = (size_t)s.n * s.c * s.hw;
	float *x = rand_floats(&r, nx, -2, 3), *g = rand_floats(&r, 4, 0.5, 1.5),
	      *be = rand_floats(&r, 4, -0.5, 0.5), *dy = rand_floats(&r, nx, -1, 1);
	float y[72], mean[4], var[4], dx[72], dg[4], dbe[4];
	cr_assert_eq(train_layer_bn(s.n, s.c, 2, 3, x, g, be, dy, y, mean, var, dx, dg, dbe, err,
				    sizeof(err)), 0, "%s", err);
	double *X = to_double(x, nx), *G = to_double(g, 4), *BE = to_double(be, 4),
	       *DY = to_double(dy, nx), M[4], V[4];
	bn_objective(&s, X, G, BE, DY, M, V);
	for (int c = 0; c < 4; c++) {
		check_grad("mean", (size_t)c, mean[c], M[c], 1e-5, 1e-6);
		check_grad("var", (size_t)c, var[c], V[c], 1e-4, 1e-6);
		check_grad("dgamma", (size_t)c, dg[c], bn_fd(&s, X, G, BE, DY, G, (size_t)c), 1e-4, 1e-5);
		check_grad("dbeta", (size_t)c, dbe[c], bn_fd(&s, X, G, BE, DY, BE, (size_t)c), 1e-4, 1e-5);
	}
	for (size_t i = 0; i < nx; i++)
		check_grad("dx", i, dx[i], bn_fd(&s, X, G, BE, DY, X, i), 1e-3, 1e-5);
	free(x), free(g), free(be), free(dy), free(X), free(G), free(BE), free(DY);
}

Test(train_layers, relu_backward_matches_finite_differences)
{
	char err[256];
	uint64_t r = 31;
	enum { N = 2 * 3 * 4 * 5 };
	float *x = rand_floats(&r, N, -1, 1), *dy = rand_floats(&r, N, -1, 1), y[N], dx[N];
	for (int i = 0; i < N; i++)
		if (fabsf(x[i]) < 0.01f)
			x[i] = 0.5f; /* keep off the kink, where FD is meaningless */
	cr_assert_eq(train_layer_relu(2, 3, 4, 5, x, dy, y, dx, err, sizeof(err)), 0, "%s", err);
	for (int i = 0; i < N; i++) {
		double xp = x[i] + FD_EPS, xm = x[i] - FD_EPS;
		double fd = ((xp > 0 ? xp : 0) - (xm > 0 ? xm : 0)) * dy[i] / (2 * FD_EPS);
		check_grad("y", (size_t)i, y[i], x[i] > 0 ? x[i] : 0, 0, 0);
		check_grad("dx", (size_t)i, dx[i], fd, 1e-6, 1e-7);
	}
	free(x), free(dy);
}

/* ---- fully connected ------------------------------------------------------ */

static double fc_objective(int n, int nin, int nout, const double *x, const double *w,
			   const double *b, const double *dy)
{
	double l = 0;
	for (int i = 0; i < n; i++)
		for (int o = 0; o < nout; o++) {
			double s = b[o];
			for (int k = 0; k < nin; k++)
				s += w[o * nin + k] * x[i * nin + k];
			l += s * dy[i * nout + o];
		}
	return l;
}

Test(train_layers, fc_backward_matches_finite_differences)
{
	char err[256];
	uint64_t r = 41;
	enum { N = 3, NIN = 7, NOUT = 5 };
	float *x = rand_floats(&r, N * NIN, -1, 1), *w = rand_floats(&r, NOUT * NIN, -1, 1),
	      *b = rand_floats(&r, NOUT, -1, 1), *dy = rand_floats(&r, N * NOUT, -1, 1);
	float y[N * NOUT], dx[N * NIN], dw[NOUT * NIN], db[NOUT];
	cr_assert_eq(train_layer_fc(N, NIN, NOUT, x, w, b, dy, y, dx, dw, db, err, sizeof(err)), 0,
		     "%s", err);
	double *X = to_double(x, N * NIN), *W = to_double(w, NOUT * NIN), *B = to_double(b, NOUT),
	       *DY = to_double(dy, N * NOUT);
	struct {
		const char *name; /* tensor */
		double *p;        /* its double copy */
		int n;            /* entries */
		const float *got; /* backward's gradient */
	} ts[3] = { { "dx", X, N * NIN, dx }, { "dw", W, NOUT * NIN, dw }, { "db", B, NOUT, db } };
	for (int t = 0; t < 3; t++)
		for (int i = 0; i < ts[t].n; i++) {
			double keep = ts[t].p[i];
			ts[t].p[i] = keep + FD_EPS;
			double lp = fc_objective(N, NIN, NOUT, X, W, B, DY);
			ts[t].p[i] = keep - FD_EPS;
			double lm = fc_objective(N, NIN, NOUT, X, W, B, DY);
			ts[t].p[i] = keep;
			check_grad(ts[t].name, (size_t)i, ts[t].got[i], (lp - lm) / (2 * FD_EPS), 1e-4,
				   1e-5);
		}
	for (int i = 0; i < N; i++)
		for (int o = 0; o < NOUT; o++) {
			double s = b[o];
			for (int k = 0; k < NIN; k++)
				s += (double)w[o * NIN + k] * x[i * NIN + k];
			check_grad("y", (size_t)(i * NOUT + o), y[i * NOUT + o], s, 1e-5, 1e-6);
		}
	free(x), free(w), free(b), free(dy), free(X), free(W), free(B), free(DY);
}

/* ---- squeeze-excitation ---------------------------------------------------- */

typedef struct se_ref {
	int n, c, s, hw;                      /* shape */
	double *u, *skip, *w1, *b1, *w2, *b2; /* inputs (NCHW), FCs */
	const double *dy;                     /* upstream gradient */
	const float *pw;                      /* [n][hw] pool weights, or NULL: 1 / hw */
} se_ref;

/* sum(y * dy), y = ReLU(sigmoid(z[0..c)) u + z[c..2c) + skip) with z =
 * w2 ReLU(w1 mean(u) + b1) + b2 per position, in double (net.h's SE). */
static double se_objective(const se_ref *r, double *y)
{
	int C = r->c, S = r->s, HW = r->hw;
	double l = 0, pool[8], hid[8], z[16];
	cr_assert(C <= 8 && S <= 8);
	for (int n = 0; n < r->n; n++) {
		const double *u = r->u + (size_t)n * C * HW;
		for (int c = 0; c < C; c++) {
			pool[c] = 0;
			for (int p = 0; p < HW; p++)
				pool[c] += u[c * HW + p] * (r->pw ? r->pw[n * HW + p] : 1.0 / HW);
		}
		for (int j = 0; j < S; j++) {
			double h = r->b1[j];
			for (int c = 0; c < C; c++)
				h += r->w1[j * C + c] * pool[c];
			hid[j] = h > 0 ? h : 0;
		}
		for (int k = 0; k < 2 * C; k++) {
			z[k] = r->b2[k];
			for (int j = 0; j < S; j++)
				z[k] += r->w2[k * S + j] * hid[j];
		}
		for (int c = 0; c < C; c++)
			for (int p = 0; p < HW; p++) {
				size_t i = ((size_t)n * C + c) * HW + p;
				double v = u[c * HW + p] / (1 + exp(-z[c])) + z[C + c] + r->skip[i];
				v = v > 0 ? v : 0;
				if (y)
					y[i] = v;
				l += v * r->dy[i];
			}
	}
	return l;
}

/* pw: the pool weights of masked pooling ([N][H W]), or NULL. */
static void check_se_fd(const float *pw)
{
	char err[256];
	uint64_t r = 61;
	enum { N = 2, C = 3, S = 2, H = 3, W = 4, A = N * C * H * W };
	float *u = rand_floats(&r, A, -2, 2), *skip = rand_floats(&r, A, -1, 1);
	float *w1 = rand_floats(&r, S * C, -1, 1), *b1 = rand_floats(&r, S, -0.5, 0.5);
	float *w2 = rand_floats(&r, 2 * C * S, -1, 1), *b2 = rand_floats(&r, 2 * C, -0.5, 0.5);
	float *dy = rand_floats(&r, A, -1, 1);
	float y[A], du[A], dskip[A], dw1[S * C], db1[S], dw2[2 * C * S], db2[2 * C];
	cr_assert_eq(train_layer_se(N, C, S, H, W, u, skip, pw, w1, b1, w2, b2, dy, y, du, dskip,
				    dw1, db1, dw2, db2, err, sizeof(err)),
		     0, "%s", err);
	double *DY = to_double(dy, A), yref[A];
	se_ref ref = { N, C, S, H * W, to_double(u, A), to_double(skip, A), to_double(w1, S * C),
		       to_double(b1, S), to_double(w2, 2 * C * S), to_double(b2, 2 * C), DY, pw };
	se_objective(&ref, yref);
	int live = 0;
	for (int i = 0; i < A; i++) {
		check_grad("y", (size_t)i, y[i], yref[i], 1e-5, 1e-6);
		live += yref[i] > 0;
	}
	cr_assert(live > A / 4 && live < A, "ReLU passes %d of %d", live, A);
	struct {
		const char *name; /* tensor */
		double *p;        /* its double copy */
		int n;            /* entries */
		const float *got; /* backward's gradient */
	} ts[6] = { { "du", ref.u, A, du },        { "dskip", ref.skip, A, dskip },
		    { "dw1", ref.w1, S * C, dw1 }, { "db1", ref.b1, S, db1 },
		    { "dw2", ref.w2, 2 * C * S, dw2 }, { "db2", ref.b2, 2 * C, db2 } };
	for (int t = 0; t < 6; t++) {
		double most = 0;
		for (int i = 0; i < ts[t].n; i++)
			most = fmax(most, fabs(ts[t].got[i]));
		cr_assert_gt(most, 1e-3, "%s: no gradient to compare", ts[t].name);
		for (int i = 0; i < ts[t].n; i++) {
			double keep = ts[t].p[i];
			ts[t].p[i] = keep + FD_EPS;
			double lp = se_objective(&ref, NULL);
			ts[t].p[i] = keep - FD_EPS;
			double lm = se_objective(&ref, NULL);
			ts[t].p[i] = keep;
			check_grad(ts[t].name, (size_t)i, ts[t].got[i], (lp - lm) / (2 * FD_EPS), 1e-4,
				   1e-5);
		}
	}
	free(u), free(skip), free(w1), free(b1), free(w2), free(b2), free(dy), free(DY);
	free(ref.u), free(ref.skip), free(ref.w1), free(ref.b1), free(ref.w2), free(ref.b2);
}

Test(train_layers, se_backward_matches_finite_differences)
{
	check_se_fd(NULL);
}

/* Masked pooling (a net of several sizes): position 0's board the 2x3
 * lower left corner of the 3x4 frame, position 1's the whole frame. */
Test(train_layers, se_masked_backward_matches_finite_differences)
{
	float pw[2 * 12];
	for (int p = 0; p < 12; p++) {
		pw[p] = p % 4 < 3 && p / 4 < 2 ? 1.0f / 6 : 0.0f;
		pw[12 + p] = 1.0f / 12;
	}
	check_se_fd(pw);
}

/* ---- losses --------------------------------------------------------------- */

/* FD on float inputs: the step actually taken is measured in double, so
 * the rounding of x +- eps to float does not bias the quotient. */
static double loss_fd(float *p, size_t i, double (*f)(const void *), const void *ctx)
{
	float keep = p[i];
	p[i] = keep + 1e-2f;
	double up = (double)p[i], lp = f(ctx);
	p[i] = keep - 1e-2f;
	double down = (double)p[i], lm = f(ctx);
	p[i] = keep;
	return (lp - lm) / (up - down);
}

typedef struct loss_ctx {
	int n, na, outputs;     /* rows, actions, value outputs */
	const float *logits;    /* policy logits or value outputs */
	const float *target;    /* policy target */
	const float *value;     /* value target */
	const float *wdl;       /* WDL target or NULL */
} loss_ctx;

static double pol_f(const void *v)
{
	const loss_ctx *c = v;
	return train_loss_policy(c->n, c->na, c->logits, c->target, NULL);
}

static double val_f(const void *v)
{
	const loss_ctx *c = v;
	return train_loss_value(c->n, c->outputs, c->logits, c->value, c->wdl, NULL);
}

Test(train_layers, losses_match_finite_differences)
{
	uint64_t r = 51;
	enum { N = 4, NA = 6 };
	float *z = rand_floats(&r, N * NA, -2, 2), *p = rand_floats(&r, N * NA, 0, 1), dz[N * NA];
	for (int i = 0; i < N; i++) {
		double s = 0;
		p[i * NA + 2] = 0; /* an "illegal" action */
		for (int a = 0; a < NA; a++)
			s += p[i * NA + a];
		for (int a = 0; a < NA; a++)
			p[i * NA + a] = (float)(p[i * NA + a] / s);
	}
	loss_ctx c = { .n = N, .na = NA, .logits = z, .target = p };
	double l = train_loss_policy(N, NA, z, p, dz);
	cr_assert(l > 0);
	for (int i = 0; i < N * NA; i++)
		check_grad("policy dz", (size_t)i, dz[i], loss_fd(z, (size_t)i, pol_f, &c), 2e-3, 1e-6);
	/* tanh value. */
	float v[N] = { 0.3f, -1.2f, 0.05f, 2.0f }, t[N] = { 1, -1, 0, -1 }, dv[N];
	c = (loss_ctx){ .n = N, .outputs = 1, .logits = v, .value = t };
	train_loss_value(N, 1, v, t, NULL, dv);
	for (int i = 0; i < N; i++)
		check_grad("tanh dv", (size_t)i, dv[i], loss_fd(v, (size_t)i, val_f, &c), 2e-3, 1e-6);
	/* WDL, with given and with derived targets. */
	float *w = rand_floats(&r, 3 * N, -2, 2), wt[3 * N], dw[3 * N];
	for (int i = 0; i < N; i++) {
		wt[3 * i] = 0.2f;
		wt[3 * i + 1] = 0.5f;
		wt[3 * i + 2] = 0.3f;
	}
	for (int given = 0; given < 2; given++) {
		c = (loss_ctx){ .n = N, .outputs = 3, .logits = w, .value = t,
				.wdl = given ? wt : NULL };
		train_loss_value(N, 3, w, t, c.wdl, dw);
		for (int i = 0; i < 3 * N; i++)
			check_grad("wdl dz", (size_t)i, dw[i], loss_fd(w, (size_t)i, val_f, &c), 2e-3,
				   1e-6);
	}
	free(z), free(p), free(w);
}
