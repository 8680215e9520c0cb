/* lz_import.c: Leela Zero weights, format version 1.
 *
 * The file is text, plain or gzip'd (zlib reads both), one tensor per line:
 *   line 1       "1" (the format version)
 *   4 lines      input conv: weights [C][18][3][3], biases, BN means, BN vars
 *   8 per block  conv1 (w, b, mean, var), conv2 (w, b, mean, var)
 *   6 lines      policy head: conv w [2][C], b, mean, var; FC w [362][722], b
 *   8 lines      value head: conv w [1][C], b, mean, var; FC1 w [256][361], b;
 *                FC2 w [256], b [1]
 * Blocks and channels are inferred from the line count and the bias lines.
 * LZ's BN has no scale or shift: y = (x - mean) / sqrt(var + 1e-5); its
 * loader folds the conv bias into the mean (mean -= bias, bias = 0), which
 * is the same as our BN applied to conv + bias with gamma 1, beta 0, so the
 * numbers are kept as they are.
 */
#include "engine/fileio.h"
#include "nn/net.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#define LZ_SIZE 19
#define LZ_AREA (LZ_SIZE * LZ_SIZE)
#define LZ_PLANES 18

/* All numbers of the file and where each line starts. */
typedef struct lz_text {
	float *v;        /* numbers, in file order */
	size_t n, cap;   /* used and allocated entries of v */
	size_t *line;    /* start of each line in v; line[n_lines] = n */
	size_t n_lines, line_cap; /* used and allocated entries of line */
} lz_text;

static int lz_push(void **p, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 1024;
	void *q = realloc(*p, c * elem);
	if (!q)
		return -1;
	*p = q;
	*cap = c;
	return 0;
}

/* Ends the current line (empty lines are ignored: trailing newlines). */
static int lz_end_line(lz_text *t, size_t start)
{
	if (t->n == start)
		return 0;
	if (lz_push((void **)&t->line, &t->line_cap, t->n_lines + 1, sizeof(size_t)) < 0)
		return -1;
	t->line[t->n_lines++] = start;
	return 0;
}

/* Reads every number; the version line is checked by the caller. */
static int lz_read(gzFile gz, lz_text *t, char *err, size_t errlen)
{
	char chunk[1 << 16], tok[64];
	int nt = 0, r;
	size_t line_start = 0;
	long lineno = 1;
	while ((r = gzread(gz, chunk, sizeof(chunk))) > 0) {
		/* A token may straddle two chunks: tok carries it over. */
		for (int i = 0; i < r; i++) {
			char ch = chunk[i];
			int sep = ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t';
			if (!sep) {
				if (nt >= (int)sizeof(tok) - 1) {
					snprintf(err, errlen, "line %ld: a number longer than %d characters",
						 lineno, (int)sizeof(tok) - 1);
					return -1;
				}
				tok[nt++] = ch;
				continue;
			}
			if (nt) {
				char *end;
				tok[nt] = 0;
				errno = 0;
				float f = strtof(tok, &end);
				if (*end || errno == ERANGE || f != f) {
					snprintf(err, errlen, "line %ld: \"%s\" is not a finite number",
						 lineno, tok);
					return -1;
				}
				if (lz_push((void **)&t->v, &t->cap, t->n, sizeof(float)) < 0)
					goto oom;
				t->v[t->n++] = f;
				nt = 0;
			}
			if (ch == '\n') {
				if (lz_end_line(t, line_start) < 0)
					goto oom;
				line_start = t->n;
				lineno++;
			}
		}
	}
	if (r < 0) {
		int e;
		const char *m = gzerror(gz, &e);
		snprintf(err, errlen, "read error: %s", e == Z_ERRNO ? strerror(errno) : m);
		return -1;
	}
	if (nt) {
		/* Last number without a newline. */
		char *end;
		tok[nt] = 0;
		float f = strtof(tok, &end);
		if (*end || f != f) {
			snprintf(err, errlen, "line %ld: \"%s\" is not a number", lineno, tok);
			return -1;
		}
		if (lz_push((void **)&t->v, &t->cap, t->n, sizeof(float)) < 0)
			goto oom;
		t->v[t->n++] = f;
	}
	if (lz_end_line(t, line_start) < 0 ||
	    lz_push((void **)&t->line, &t->line_cap, t->n_lines + 1, sizeof(size_t)) < 0)
		goto oom;
	t->line[t->n_lines] = t->n;
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
	return -1;
}

static size_t lz_count(const lz_text *t, size_t l)
{
	return t->line[l + 1] - t->line[l];
}

/* Copies line l into dst after checking it has `want` numbers. */
static int lz_take(const lz_text *t, size_t *l, float *dst, size_t want, const char *what,
		   char *err, size_t errlen)
{
	size_t got = lz_count(t, *l);
	if (got != want) {
		snprintf(err, errlen, "line %zu (%s): %zu numbers, expected %zu", *l + 1, what, got,
			 want);
		return -1;
	}
	memcpy(dst, t->v + t->line[*l], want * sizeof(float));
	(*l)++;
	return 0;
}

/* A conv's four lines; gamma and beta are the identity already. */
static int lz_conv(const lz_text *t, size_t *l, nn_conv *c, const char *what, char *err,
		   size_t errlen)
{
	size_t o = (size_t)c->c_out;
	if (lz_take(t, l, c->w, o * c->c_in * c->k * c->k, what, err, errlen) < 0 ||
	    lz_take(t, l, c->b, o, what, err, errlen) < 0 ||
	    lz_take(t, l, c->bn_mean, o, what, err, errlen) < 0 ||
	    lz_take(t, l, c->bn_var, o, what, err, errlen) < 0)
		return -1;
	/* var + eps must stay positive for the square root. */
	for (size_t i = 0; i < o; i++)
		if (c->bn_var[i] < 0) {
			snprintf(err, errlen, "line %zu (%s): negative variance %g", *l, what,
				 (double)c->bn_var[i]);
			return -1;
		}
	return 0;
}

static int lz_fc(const lz_text *t, size_t *l, nn_fc *f, const char *what, char *err,
		 size_t errlen)
{
	return lz_take(t, l, f->w, (size_t)f->n_in * f->n_out, what, err, errlen) < 0 ||
			       lz_take(t, l, f->b, (size_t)f->n_out, what, err, errlen) < 0 ?
		       -1 :
		       0;
}

nn_net *nn_lz_import(const char *path, char *err, size_t errlen)
{
	nn_net *net = NULL;
	lz_text t;
	char e[300];
	memset(&t, 0, sizeof(t));
	int fd = fileio_open_regular(path, "network", err, errlen);
	if (fd < 0)
		return NULL;
	gzFile gz = gzdopen(fd, "rb");
	if (!gz) {
		snprintf(err, errlen, "cannot open %s: %s", path, errno ? strerror(errno) : "zlib");
		close(fd);
		return NULL;
	}
	gzbuffer(gz, 1 << 17);
	if (lz_read(gz, &t, e, sizeof(e)) < 0)
		goto fail;
	if (t.n_lines < 1 || lz_count(&t, 0) != 1 || t.v[0] != 1.0f) {
		if (t.n_lines >= 1 && lz_count(&t, 0) == 1 && t.v[0] == 2.0f)
			snprintf(e, sizeof(e), "Leela Zero format version 2 (ELF-converted "
				 "networks) is not supported; only version 1");
		else
			snprintf(e, sizeof(e), "not a Leela Zero v1 network: the first line "
				 "must be \"1\"");
		goto fail;
	}
	/* 1 version + 4 input + 8 per block + 6 policy + 8 value lines. */
	if (t.n_lines < 19 || (t.n_lines - 19) % 8 != 0) {
		snprintf(e, sizeof(e), "%zu lines: a Leela Zero v1 network has 19 + 8 * blocks "
			 "(file truncated?)", t.n_lines);
		goto fail;
	}
	int blocks = (int)((t.n_lines - 19) / 8);
	size_t channels = lz_count(&t, 2);
	size_t pol_line = 5 + 8 * (size_t)blocks, val_line = pol_line + 6;
	size_t pol_ch = lz_count(&t, pol_line + 1), val_ch = lz_count(&t, val_line + 1);
	size_t hidden = lz_count(&t, val_line + 5);
	if (lz_count(&t, pol_line + 5) != LZ_AREA + 1) {
		snprintf(e, sizeof(e), "policy has %zu outputs: only 19x19 Leela Zero networks "
			 "(362) are supported", lz_count(&t, pol_line + 5));
		goto fail;
	}
	if (channels < 1 || channels > NN_MAX_CHANNELS || pol_ch < 1 || pol_ch > 64 ||
	    val_ch < 1 || val_ch > 64 || hidden < 1 || hidden > 4096 ||
	    lz_count(&t, val_line + 7) != 1) {
		snprintf(e, sizeof(e), "implausible shapes (channels %zu, policy %zu, value %zu, "
			 "hidden %zu)", channels, pol_ch, val_ch, hidden);
		goto fail;
	}
	if (blocks > NN_MAX_BLOCKS) {
		snprintf(e, sizeof(e), "%d blocks: at most %d are supported", blocks, NN_MAX_BLOCKS);
		goto fail;
	}
	nn_arch a = nn_arch_lz(LZ_SIZE, blocks, (int)channels);
	a.policy_channels = (int)pol_ch;
	a.value_channels = (int)val_ch;
	a.value_hidden = (int)hidden;
	net = nn_net_new(&a, e, sizeof(e));
	if (!net)
		goto fail;
	size_t l = 1;
	if (lz_conv(&t, &l, &net->input, "input conv", e, sizeof(e)) < 0)
		goto fail;
	for (int i = 0; i < blocks; i++)
		if (lz_conv(&t, &l, &net->block[i].conv1, "residual conv", e, sizeof(e)) < 0 ||
		    lz_conv(&t, &l, &net->block[i].conv2, "residual conv", e, sizeof(e)) < 0)
			goto fail;
	if (lz_conv(&t, &l, &net->policy_conv, "policy conv", e, sizeof(e)) < 0 ||
	    lz_fc(&t, &l, &net->policy_fc, "policy FC", e, sizeof(e)) < 0 ||
	    lz_conv(&t, &l, &net->value_conv, "value conv", e, sizeof(e)) < 0 ||
	    lz_fc(&t, &l, &net->value_fc1, "value FC1", e, sizeof(e)) < 0 ||
	    lz_fc(&t, &l, &net->value_fc2, "value FC2", e, sizeof(e)) < 0)
		goto fail;
	snprintf(net->meta.name, NN_ID_LEN, "lz:%dx%d", blocks, (int)channels);
	gzclose(gz);
	free(t.v);
	free(t.line);
	return net;
fail:
	snprintf(err, errlen, "%s: %s", path, e);
	gzclose(gz);
	free(t.v);
	free(t.line);
	nn_net_free(net);
	return NULL;
}
