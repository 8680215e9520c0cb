/* Leela Zero v1 import: a small random network written by the test in LZ's
 * text layout (plain and gzip), checked against LZ's math computed here
 * straight from the raw numbers. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "nn/backend.h"
#include "tests/mem_limit.h"

#define LB 2   /* blocks */
#define LC 8   /* channels */
#define LN 19
#define LA (LN * LN)
#define LH 256 /* value FC1 */

/* The raw LZ tensors, one per line of the file. */
typedef struct lz_raw {
	float *line[19 + 8 * LB]; /* line 0 unused (version) */
	size_t len[19 + 8 * LB];
	int n_lines;
} lz_raw;

static uint64_t lz_s;
static float lz_rand(float lo, float hi)
{
	lz_s ^= lz_s << 13;
	lz_s ^= lz_s >> 7;
	lz_s ^= lz_s << 17;
	return lo + (hi - lo) * (float)((lz_s >> 11) * (1.0 / 9007199254740992.0));
}

static void raw_add(lz_raw *r, size_t n, float lo, float hi)
{
	float *p = malloc(sizeof(float) * n);
	cr_assert(p);
	for (size_t i = 0; i < n; i++)
		p[i] = lz_rand(lo, hi);
	r->line[r->n_lines] = p;
	r->len[r->n_lines++] = n;
}

/* conv weights, biases, means, variances. */
static void raw_conv(lz_raw *r, size_t cout, size_t cin, size_t k)
{
	float a = sqrtf(3.0f / (float)(cin * k * k));
	raw_add(r, cout * cin * k * k, -a, a);
	raw_add(r, cout, -0.1f, 0.1f);
	raw_add(r, cout, -0.2f, 0.2f);
	raw_add(r, cout, 0.3f, 1.5f);
}

static void raw_make(lz_raw *r, uint64_t seed)
{
	memset(r, 0, sizeof(*r));
	lz_s = seed;
	r->n_lines = 1;
	raw_conv(r, LC, 18, 3);
	for (int b = 0; b < 2 * LB; b++)
		raw_conv(r, LC, LC, 3);
	raw_conv(r, 2, LC, 1);
	raw_add(r, (size_t)(LA + 1) * 2 * LA, -0.03f, 0.03f);
	raw_add(r, LA + 1, -0.1f, 0.1f);
	raw_conv(r, 1, LC, 1);
	raw_add(r, (size_t)LH * LA, -0.05f, 0.05f);
	raw_add(r, LH, -0.1f, 0.1f);
	raw_add(r, LH, -0.1f, 0.1f);
	raw_add(r, 1, -0.1f, 0.1f);
	cr_assert_eq(r->n_lines, 19 + 8 * LB);
}

static void raw_free(lz_raw *r)
{
	for (int i = 0; i < r->n_lines; i++)
		free(r->line[i]);
}

/* Writes the LZ text; skip_last drops the last line (a truncated file). */
static void raw_write(const lz_raw *r, const char *path, int gz, int skip_last)
{
	char num[32];
	FILE *f = NULL;
	gzFile z = NULL;
	if (gz)
		z = gzopen(path, "wb");
	else
		f = fopen(path, "w");
	cr_assert(f || z);
#define PUT(s)                                            \
	do {                                              \
		if (z)                                    \
			gzputs(z, (s));                   \
		else                                      \
			fputs((s), f);                    \
	} while (0)
	PUT("1\n");
	for (int l = 1; l < r->n_lines - skip_last; l++) {
		for (size_t i = 0; i < r->len[l]; i++) {
			snprintf(num, sizeof(num), i ? " %.9g" : "%.9g", (double)r->line[l][i]);
			PUT(num);
		}
		PUT("\n");
	}
#undef PUT
	if (z)
		gzclose(z);
	else
		fclose(f);
}

/* LZ's forward pass, in double, from the raw lines: conv, then BN as
 * (x - (mean - bias)) / sqrt(var + 1e-5) (LZ folds the bias into the
 * mean), ReLU; residual blocks; heads. */
static void lz_conv_bn(const lz_raw *r, int l, int cin, int cout, int k, const double *in,
		       double *out)
{
	const float *w = r->line[l], *b = r->line[l + 1], *m = r->line[l + 2], *v = r->line[l + 3];
	int pad = k / 2;
	for (int o = 0; o < cout; o++)
		for (int y = 0; y < LN; y++)
			for (int x = 0; x < LN; x++) {
				double s = 0;
				for (int i = 0; i < cin; i++)
					for (int dy = 0; dy < k; dy++)
						for (int dx = 0; dx < k; dx++) {
							int yy = y + dy - pad, xx = x + dx - pad;
							if (yy < 0 || yy >= LN || xx < 0 || xx >= LN)
								continue;
							s += w[((o * cin + i) * k + dy) * k + dx] *
							     in[i * LA + yy * LN + xx];
						}
				double mean = (double)m[o] - b[o];
				out[o * LA + y * LN + x] = (s - mean) / sqrt((double)v[o] + 1e-5);
			}
}

static void lz_eval(const lz_raw *r, const float *planes, float *pol, float *val)
{
	static double x[LC * LA], t[LC * LA], u[LC * LA];
	double in[18 * LA], hid[LH];
	for (int i = 0; i < 18 * LA; i++)
		in[i] = planes[i];
	lz_conv_bn(r, 1, 18, LC, 3, in, x);
	for (int i = 0; i < LC * LA; i++)
		x[i] = fmax(0, x[i]);
	for (int b = 0; b < LB; b++) {
		lz_conv_bn(r, 5 + 8 * b, LC, LC, 3, x, t);
		for (int i = 0; i < LC * LA; i++)
			t[i] = fmax(0, t[i]);
		lz_conv_bn(r, 9 + 8 * b, LC, LC, 3, t, u);
		for (int i = 0; i < LC * LA; i++)
			x[i] = fmax(0, x[i] + u[i]);
	}
	int pl = 5 + 8 * LB, vl = pl + 6;
	lz_conv_bn(r, pl, LC, 2, 1, x, t);
	for (int i = 0; i < 2 * LA; i++)
		t[i] = fmax(0, t[i]);
	for (int o = 0; o < LA + 1; o++) {
		double s = r->line[pl + 5][o];
		for (int i = 0; i < 2 * LA; i++)
			s += (double)r->line[pl + 4][(size_t)o * 2 * LA + i] * t[i];
		pol[o] = (float)s;
	}
	lz_conv_bn(r, vl, LC, 1, 1, x, t);
	for (int i = 0; i < LA; i++)
		t[i] = fmax(0, t[i]);
	for (int o = 0; o < LH; o++) {
		double s = r->line[vl + 5][o];
		for (int i = 0; i < LA; i++)
			s += (double)r->line[vl + 4][(size_t)o * LA + i] * t[i];
		hid[o] = fmax(0, s);
	}
	double s = r->line[vl + 7][0];
	for (int i = 0; i < LH; i++)
		s += (double)r->line[vl + 6][i] * hid[i];
	*val = (float)tanh(s);
}

static char lz_dir[64];

static void lz_setup(void)
{
	strcpy(lz_dir, "/tmp/sente_nn_lz_XXXXXX");
	cr_assert(mkdtemp(lz_dir));
}

static void lz_teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", lz_dir);
	cr_assert_eq(system(cmd), 0);
}

static void random_planes(float *p, int n, uint64_t seed)
{
	lz_s = seed;
	for (int b = 0; b < n; b++) {
		float *q = p + (size_t)b * 18 * LA;
		for (int i = 0; i < 16 * LA; i++)
			q[i] = lz_rand(0, 1) < 0.2f ? 1.0f : 0.0f;
		for (int i = 0; i < LA; i++) {
			q[16 * LA + i] = (float)(b & 1);
			q[17 * LA + i] = (float)!(b & 1);
		}
	}
}

static void check_close(const float *got, const float *want, int n, double tol, const char *what)
{
	for (int i = 0; i < n; i++)
		cr_assert(fabs((double)got[i] - want[i]) <= tol * fmax(1.0, fabs(want[i])),
			  "%s[%d]: %.8g, LZ math %.8g", what, i, (double)got[i], (double)want[i]);
}

TestSuite(nn_lz, .init = lz_setup, .fini = lz_teardown);

Test(nn_lz, text_and_gzip_import_match_lz_math)
{
	lz_raw r;
	raw_make(&r, 0xabcdef);
	enum { N = 3 };
	static float planes[N * 18 * LA], want_pol[N][LA + 1], got_pol[N * (LA + 1)];
	float want_val[N], got_val[N];
	random_planes(planes, N, 17);
	for (int n = 0; n < N; n++)
		lz_eval(&r, planes + (size_t)n * 18 * LA, want_pol[n], &want_val[n]);
	for (int gz = 0; gz < 2; gz++) {
		char path[128], err[512];
		snprintf(path, sizeof(path), "%s/net.txt%s", lz_dir, gz ? ".gz" : "");
		raw_write(&r, path, gz, 0);
		nn_net *net = nn_lz_import(path, err, sizeof(err));
		cr_assert(net, "%s", err);
		cr_assert_eq(net->arch.blocks, LB);
		cr_assert_eq(net->arch.channels, LC);
		cr_assert_eq(net->arch.encoding, NN_ENC_LZ18);
		cr_assert_eq(net->arch.policy_outputs, LA + 1);
		/* The plain reference on the imported net. */
		for (int n = 0; n < N; n++) {
			nn_reference_forward(net, 1, planes + (size_t)n * 18 * LA, got_pol, got_val, NULL);
			check_close(got_pol, want_pol[n], LA + 1, 1e-5, "reference policy");
			check_close(got_val, &want_val[n], 1, 1e-5, "reference value");
		}
		/* The oneDNN backend, all three at once. */
		nn_backend *be = nn_backend_new(&nn_backend_cpu, net, N, NULL, err, sizeof(err));
		cr_assert(be, "%s", err);
		cr_assert_eq(nn_backend_forward(be, N, planes, got_pol, got_val, NULL), 0);
		for (int n = 0; n < N; n++) {
			check_close(got_pol + n * (LA + 1), want_pol[n], LA + 1, 1e-4, "cpu policy");
			check_close(got_val + n, &want_val[n], 1, 1e-4, "cpu value");
		}
		nn_backend_free(be);
		nn_net_free(net);
		/* nn_net_load_any recognises it too. */
		net = nn_net_load_any(path, NULL, err, sizeof(err));
		cr_assert(net, "%s", err);
		nn_net_free(net);
	}
	raw_free(&r);
}

Test(nn_lz, defects_are_refused)
{
	lz_raw r;
	char path[128], err[512];
	raw_make(&r, 99);
	snprintf(path, sizeof(path), "%s/bad.txt", lz_dir);

	raw_write(&r, path, 0, 1);
	cr_assert_null(nn_lz_import(path, err, sizeof(err)));
	cr_assert(strstr(err, "lines"), "truncated: %s", err);

	/* A line one number short. */
	r.len[6]--;
	raw_write(&r, path, 1, 0);
	r.len[6]++;
	cr_assert_null(nn_lz_import(path, err, sizeof(err)));
	cr_assert(strstr(err, "expected"), "short line: %s", err);

	FILE *f = fopen(path, "w");
	fputs("2\n1 2 3\n", f);
	fclose(f);
	cr_assert_null(nn_lz_import(path, err, sizeof(err)));
	cr_assert(strstr(err, "version 2"), "v2: %s", err);

	f = fopen(path, "w");
	fputs("1\n0.5 abc\n", f);
	fclose(f);
	cr_assert_null(nn_lz_import(path, err, sizeof(err)));
	cr_assert(strstr(err, "abc"), "garbage: %s", err);

	cr_assert_null(nn_lz_import("/nonexistent/x.gz", err, sizeof(err)));
	cr_assert(strstr(err, "cannot open"), "missing: %s", err);

	/* A Leela Zero file handed to the native loader gets the hint. */
	raw_write(&r, path, 0, 0);
	cr_assert_null(nn_net_load(path, NULL, err, sizeof(err)));
	cr_assert(strstr(err, "Leela Zero"), "hint: %s", err);
	raw_write(&r, path, 1, 0);
	cr_assert_null(nn_net_load(path, NULL, err, sizeof(err)));
	cr_assert(strstr(err, "Leela Zero"), "gzip hint: %s", err);
	raw_free(&r);
}

/* A whole text file, NUL-terminated (malloc'd). */
static char *text_read(const char *path)
{
	FILE *f = fopen(path, "rb");
	cr_assert(f, "%s", path);
	cr_assert_eq(fseek(f, 0, SEEK_END), 0);
	long n = ftell(f);
	rewind(f);
	char *t = malloc((size_t)n + 1);
	cr_assert(t);
	cr_assert_eq(fread(t, 1, (size_t)n, f), (size_t)n);
	t[n] = 0;
	fclose(f);
	return t;
}

/* Writes head, then tok, then tail to path. */
static void text_write3(const char *path, const char *head, size_t head_len, const char *tok,
			const char *tail)
{
	FILE *f = fopen(path, "wb");
	cr_assert(f);
	fwrite(head, 1, head_len, f);
	fputs(tok, f);
	fputs(tail, f);
	cr_assert_eq(fclose(f), 0);
}

Test(nn_lz, every_number_must_be_finite_the_last_one_too)
{
	lz_raw r;
	char path[128], err[512];
	raw_make(&r, 5);
	snprintf(path, sizeof(path), "%s/inf.txt", lz_dir);
	raw_write(&r, path, 0, 0);
	char *text = text_read(path);
	/* "inf" for the input conv's first bias: strtof takes it without ERANGE. */
	char *bias = strchr(strchr(text, '\n') + 1, '\n') + 1;
	text_write3(path, text, (size_t)(bias - text), "inf", bias + strcspn(bias, " \n"));
	cr_assert_null(nn_lz_import(path, err, sizeof(err)), "inf was taken for a weight");
	cr_assert(strstr(err, "inf"), "inf: %s", err);
	/* The last number, with no newline after it, out of a float's range. */
	size_t n = strlen(text);
	cr_assert(n > 2 && text[n - 1] == '\n');
	text[--n] = 0;
	char *last = strrchr(text, '\n') + 1;
	text_write3(path, text, (size_t)(last - text), "1e99", "");
	cr_assert_null(nn_lz_import(path, err, sizeof(err)), "1e99 was taken for the last weight");
	cr_assert(strstr(err, "1e99"), "last: %s", err);
	/* The same file with a finite last number and no newline loads. */
	text_write3(path, text, (size_t)(last - text), "0.25", "");
	nn_net *net = nn_lz_import(path, err, sizeof(err));
	cr_assert(net, "%s", err);
	cr_assert_float_eq(net->value_fc2.b[0], 0.25f, 0);
	nn_net_free(net);
	free(text);
	raw_free(&r);
}

/* In the child of mem_limit_run: the import of the file at arg must be
 * refused for its shape, not for want of memory. */
static int lz_bomb_child(void *arg)
{
	char err[512];
	nn_net *net = nn_lz_import(arg, err, sizeof(err));
	if (net)
		return 2;
	fprintf(stderr, "bomb: %s\n", err);
	return strstr(err, "more than") ? 0 : 3;
}

Test(nn_lz, a_gzip_bomb_is_refused_in_bounded_memory, .timeout = 120)
{
	/* "1", then one line of 64M zeros: 128 MB of text in a few hundred KB of
	 * gzip. No supported network has a first weight line of more than
	 * 1024 x 18 x 9 numbers. */
	char path[128];
	static char zeros[1 << 20];
	for (size_t i = 0; i < sizeof(zeros); i += 2) {
		zeros[i] = '0';
		zeros[i + 1] = ' ';
	}
	snprintf(path, sizeof(path), "%s/bomb.gz", lz_dir);
	gzFile z = gzopen(path, "wb9");
	cr_assert(z);
	gzputs(z, "1\n");
	for (int i = 0; i < 128; i++)
		cr_assert_eq(gzwrite(z, zeros, sizeof(zeros)), (int)sizeof(zeros));
	gzputs(z, "\n");
	cr_assert_eq(gzclose(z), Z_OK);
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_lt(st.st_size, 1 << 20, "the bomb is %lld bytes", (long long)st.st_size);
	/* 256 MB more address space: the numbers alone would need 256 MB. */
	int rc = mem_limit_run(lz_bomb_child, path, (size_t)256 << 20);
	cr_assert_eq(rc, 0, "the bomb was not refused for its shape in bounded memory (%d)", rc);
}
