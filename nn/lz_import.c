/* lz_import.c: Leela Zero weights, format version 1.
 *
 * The file is text, plain or gzip'd (zlib reads both), one tensor per line:
 *   line 1       "1" (the format version)
 *   4 lines      input conv: weights [C][18][3][3], biases, BN means, BN vars
 *   8 per block  conv1 (w, b, mean, var), conv2 (w, b, mean, var)
 *   6 lines      policy head: conv w [2][C], b, mean, var; FC w [362][722], b
 *   8 lines      value head: conv w [1][C], b, mean, var; FC1 w [256][361], b;
 *                FC2 w [256], b [1]
 * Channels come from the first weight line, blocks from where the policy
 * head starts; every line is checked against that shape as it is read
 * (lz_shape), so a huge or endless file is refused early with little memory.
 * LZ's BN has no scale or shift: y = (x - mean) / sqrt(var + 1e-5); its
 * loader folds the conv bias into the mean (mean -= bias, bias = 0), which
 * is the same as our BN applied to conv + bias with gamma 1, beta 0, so the
 * numbers are kept as they are.
 */
#include "engine/fileio.h"
#include "nn/net.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
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

/* The shape of a Leela Zero file as it streams in. The first weight line
 * gives the channels (C x 18 x 3 x 3 numbers); from then on every line's
 * length is known or bounded: a tower line 0 of 9 C^2 numbers starts a
 * residual block, one of P x C (P <= LZ_MAX_HEAD) the policy head, and the
 * next line (C or P numbers) tells them apart. So a line too long, or a
 * file longer than any supported net of its width, is refused as soon as
 * it is read, before it is stored. */
typedef enum lz_part {
	LZ_PART_VERSION, /* line 0: "1" */
	LZ_PART_INPUT,   /* the input conv's 4 lines */
	LZ_PART_TOWER,   /* residual blocks, 8 lines each */
	LZ_PART_POLICY,  /* 6 lines, the first two read as tower lines */
	LZ_PART_VALUE,   /* 8 lines */
	LZ_PART_END,     /* nothing more may follow */
} lz_part;

typedef struct lz_shape {
	lz_part part;        /* where the next line belongs */
	int j;               /* its index within the part */
	size_t c;            /* tower channels, once line 1 is read */
	size_t p, v, h;      /* policy and value channels, value FC1 width */
	size_t pol_cand;     /* tower line 0 could be the policy conv with this P */
	bool res_cand;       /* tower line 0 could be a residual conv */
	int blocks;          /* residual blocks read */
} lz_shape;

#define LZ_MAX_HEAD 64     /* policy and value head channels */
#define LZ_MAX_HIDDEN 4096 /* value FC1 width */

static size_t lz_max(size_t a, size_t b)
{
	return a > b ? a : b;
}

/* The most numbers the next line may hold (0: no line may follow). */
static size_t lz_shape_limit(const lz_shape *s)
{
	size_t c = s->c;
	switch (s->part) {
	case LZ_PART_VERSION:
		return 1;
	case LZ_PART_INPUT:
		return s->j == 0 ? (size_t)NN_MAX_CHANNELS * LZ_PLANES * 9 : c;
	case LZ_PART_TOWER:
		if (s->j == 0)
			return lz_max(s->blocks < NN_MAX_BLOCKS ? 9 * c * c : 0, LZ_MAX_HEAD * c);
		if (s->j == 1)
			return lz_max(s->res_cand ? c : 0, s->pol_cand);
		return s->j == 4 ? 9 * c * c : c;
	case LZ_PART_POLICY:
		return s->j == 4 ? (size_t)(LZ_AREA + 1) * s->p * LZ_AREA :
		       s->j == 5 ? LZ_AREA + 1 :
				   s->p;
	case LZ_PART_VALUE:
		switch (s->j) {
		case 0:
			return LZ_MAX_HEAD * c;
		case 4:
			return (size_t)LZ_MAX_HIDDEN * s->v * LZ_AREA;
		case 5:
		case 6:
			return s->h;
		case 7:
			return 1;
		default:
			return s->v;
		}
	case LZ_PART_END:
		return 0;
	}
	return 0;
}

/* What the next line is, for messages. */
static const char *lz_shape_what(const lz_shape *s)
{
	static const char *const policy[] = { "policy conv", "policy conv", "policy conv",
					      "policy conv", "policy FC", "policy FC" };
	static const char *const value[] = { "value conv", "value conv", "value conv", "value conv",
					     "value FC1", "value FC1", "value FC2", "value FC2" };
	switch (s->part) {
	case LZ_PART_VERSION:
		return "version";
	case LZ_PART_INPUT:
		return "input conv";
	case LZ_PART_TOWER:
		return s->j < 2 ? "residual or policy conv" : "residual conv";
	case LZ_PART_POLICY:
		return policy[s->j];
	case LZ_PART_VALUE:
		return value[s->j];
	case LZ_PART_END:
		break;
	}
	return "past the value head";
}

/* Takes a finished line of n numbers: 0, or -1 with a message. `lineno`
 * is its line in the file (1-based) for messages. */
static int lz_shape_line(lz_shape *s, size_t n, long lineno, char *err, size_t errlen)
{
	size_t c = s->c, want = 0;
	const char *what = lz_shape_what(s);
	switch (s->part) {
	case LZ_PART_VERSION:
		want = 1;
		break;
	case LZ_PART_INPUT:
		if (s->j == 0) {
			if (n == 0 || n % (LZ_PLANES * 9) != 0) {
				snprintf(err, errlen, "line %ld (input conv): %zu numbers, expected "
					 "channels x %d x 3 x 3", lineno, n, LZ_PLANES);
				return -1;
			}
			s->c = n / (LZ_PLANES * 9);
			s->j++;
			return 0;
		}
		want = c;
		break;
	case LZ_PART_TOWER:
		if (s->j == 0) {
			s->res_cand = s->blocks < NN_MAX_BLOCKS && n == 9 * c * c;
			s->pol_cand = n % c == 0 && n / c >= 1 && n / c <= LZ_MAX_HEAD ? n / c : 0;
			if (!s->res_cand && !s->pol_cand) {
				snprintf(err, errlen, "line %ld (%s): %zu numbers, expected %zu (a "
					 "residual conv%s) or a multiple of %zu up to %zu (the policy "
					 "conv)", lineno, what, n, 9 * c * c,
					 s->blocks < NN_MAX_BLOCKS ? "" : ", but there are "
					 "already the most blocks supported", c, LZ_MAX_HEAD * c);
				return -1;
			}
			s->j++;
			return 0;
		}
		if (s->j == 1) {
			if (s->res_cand && n == c) {
				s->j++;
				return 0;
			}
			if (s->pol_cand && n == s->pol_cand) {
				s->p = s->pol_cand;
				s->part = LZ_PART_POLICY;
				s->j = 2;
				return 0;
			}
			snprintf(err, errlen, "line %ld (%s bias): %zu numbers, expected %zu", lineno,
				 what, n, s->res_cand ? c : s->pol_cand);
			return -1;
		}
		want = s->j == 4 ? 9 * c * c : c;
		break;
	case LZ_PART_POLICY:
		if (s->j == 4 && n != (size_t)(LZ_AREA + 1) * s->p * LZ_AREA) {
			snprintf(err, errlen, "line %ld (policy FC): %zu numbers, expected %d x %zu: "
				 "only 19x19 Leela Zero networks (362 policy outputs) are "
				 "supported", lineno, n, LZ_AREA + 1, s->p * LZ_AREA);
			return -1;
		}
		want = lz_shape_limit(s);
		break;
	case LZ_PART_VALUE:
		if (s->j == 0 || s->j == 4) {
			size_t unit = s->j == 0 ? c : s->v * LZ_AREA;
			size_t most = s->j == 0 ? LZ_MAX_HEAD : LZ_MAX_HIDDEN;
			if (n == 0 || n % unit != 0 || n / unit > most) {
				snprintf(err, errlen, "line %ld (%s): %zu numbers, expected a multiple "
					 "of %zu up to %zu", lineno, what, n, unit, most * unit);
				return -1;
			}
			if (s->j == 0)
				s->v = n / unit;
			else
				s->h = n / unit;
			s->j++;
			return 0;
		}
		want = lz_shape_limit(s);
		break;
	case LZ_PART_END:
		snprintf(err, errlen, "line %ld: %zu numbers after the value head, which ends a "
			 "Leela Zero v1 network", lineno, n);
		return -1;
	}
	if (n != want) {
		snprintf(err, errlen, "line %ld (%s): %zu numbers, expected %zu", lineno, what, n,
			 want);
		return -1;
	}
	s->j++;
	/* Parts end: move on. */
	if (s->part == LZ_PART_VERSION || (s->part == LZ_PART_INPUT && s->j == 4)) {
		s->part++;
		s->j = 0;
	} else if (s->part == LZ_PART_TOWER && s->j == 8) {
		s->blocks++;
		s->j = 0;
	} else if (s->part == LZ_PART_POLICY && s->j == 6) {
		s->part = LZ_PART_VALUE;
		s->j = 0;
	} else if (s->part == LZ_PART_VALUE && s->j == 8) {
		s->part = LZ_PART_END;
	}
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

/* One token as a finite float: 0, or -1 with a message. */
static int lz_number(char *tok, long lineno, float *out, char *err, size_t errlen)
{
	char *end;
	errno = 0;
	float f = strtof(tok, &end);
	if (end == tok || *end || errno == ERANGE || !isfinite(f)) {
		snprintf(err, errlen, "line %ld: \"%s\" is not a finite number", lineno, tok);
		return -1;
	}
	*out = f;
	return 0;
}

/* Bytes a line of n numbers may take: a number is at most LZ_TOKEN - 1
 * characters, plus separators; blank lines before it count too. */
#define LZ_TOKEN 64
static size_t lz_byte_limit(size_t n)
{
	return (n + 1) * (LZ_TOKEN + 8) + 4096;
}

/* Reads every number, checking the shape of each line as it streams in
 * (see lz_shape), so nothing longer than a supported network is stored. */
static int lz_read(gzFile gz, lz_text *t, lz_shape *s, char *err, size_t errlen)
{
	char chunk[1 << 16], tok[LZ_TOKEN];
	int nt = 0, r;
	size_t line_start = 0, limit = lz_shape_limit(s), bytes = 0;
	long lineno = 1;
	bool eof = false;
	while (!eof) {
		r = gzread(gz, chunk, sizeof(chunk));
		if (r < 0) {
			int e;
			const char *m = gzerror(gz, &e);
			snprintf(err, errlen, "read error: %s", e == Z_ERRNO ? strerror(errno) : m);
			return -1;
		}
		if (r == 0) {
			/* A last line without a newline ends like any other. */
			eof = true;
			chunk[0] = '\n';
			r = 1;
		}
		for (int i = 0; i < r; i++) {
			char ch = chunk[i];
			int sep = ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t';
			if (++bytes > lz_byte_limit(limit)) {
				snprintf(err, errlen, "line %ld (%s): longer than %zu bytes, which %zu "
					 "numbers never need", lineno, lz_shape_what(s),
					 lz_byte_limit(limit), limit);
				return -1;
			}
			if (!sep) {
				if (nt >= LZ_TOKEN - 1) {
					snprintf(err, errlen, "line %ld: a number longer than %d characters",
						 lineno, LZ_TOKEN - 1);
					return -1;
				}
				tok[nt++] = ch;
				continue;
			}
			if (nt) {
				tok[nt] = 0;
				nt = 0;
				if (t->n - line_start >= limit) {
					snprintf(err, errlen, "line %ld (%s): more than %zu numbers", lineno,
						 lz_shape_what(s), limit);
					return -1;
				}
				if (lz_push((void **)&t->v, &t->cap, t->n, sizeof(float)) < 0)
					goto oom;
				if (lz_number(tok, lineno, &t->v[t->n], err, errlen) < 0)
					return -1;
				t->n++;
			}
			if (ch != '\n')
				continue;
			if (t->n > line_start) {
				if (s->part == LZ_PART_VERSION && t->n - line_start == 1 &&
				    t->v[line_start] != 1.0f) {
					if (t->v[line_start] == 2.0f)
						snprintf(err, errlen, "Leela Zero format version 2 (ELF-"
							 "converted networks) is not supported; only version 1");
					else
						snprintf(err, errlen, "not a Leela Zero v1 network: the "
							 "first line must be \"1\"");
					return -1;
				}
				if (lz_shape_line(s, t->n - line_start, lineno, err, errlen) < 0)
					return -1;
				if (lz_end_line(t, line_start) < 0)
					goto oom;
				line_start = t->n;
				limit = lz_shape_limit(s);
				bytes = 0;
			}
			lineno++;
		}
	}
	if (s->part != LZ_PART_END) {
		snprintf(err, errlen, "the file ends after %zu lines, before the %s: a Leela Zero v1 "
			 "network has 19 + 8 * blocks (file truncated?)", t->n_lines,
			 lz_shape_what(s));
		return -1;
	}
	if (lz_push((void **)&t->line, &t->line_cap, t->n_lines + 1, sizeof(size_t)) < 0)
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
	lz_shape s = { .part = LZ_PART_VERSION };
	if (lz_read(gz, &t, &s, e, sizeof(e)) < 0)
		goto fail;
	/* lz_read saw every line's shape: this is a 19x19 LZ network. */
	int blocks = s.blocks;
	size_t channels = s.c;
	nn_arch a = nn_arch_lz(LZ_SIZE, blocks, (int)channels);
	a.policy_channels = (int)s.p;
	a.value_channels = (int)s.v;
	a.value_hidden = (int)s.h;
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
