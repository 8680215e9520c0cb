/* opt.c: the option tables of the `sente` subcommands (see opt.h), and the
 * small parsing helpers of cli.h. Built into bin/sente and linked into the
 * test binary, so it calls no other file of cli/. */
#include "cli/opt.h"

#include <assert.h>
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "engine/game.h"
#include "nn/backend.h"

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "sente %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see 'sente %s --help')\n", cmd);
	return 2;
}

bool cli_wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return true;
	}
	return false;
}

bool cli_parse_int(const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end != '\0' || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

bool cli_parse_double(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end != '\0')
		return false;
	*out = v;
	return true;
}

/* ---- shared callbacks ------------------------------------------------------ */

int cli_opt_nn_flag(const cli_opt *o, const char *value, char *err, size_t errlen)
{
	int r = nn_backend_parse_flag(o->name, value, o->ptr, err, errlen);
	assert(r != 0 && "cli_opt_nn_flag serves --backend, --gpus and --precision only");
	return r < 0 ? -1 : 0;
}

int cli_opt_game(const cli_opt *o, const char *value, char *err, size_t errlen)
{
	if (game_kind_from_name(value, o->ptr))
		return 0;
	snprintf(err, errlen, "unknown game '%s' (go or connect4)", value);
	return -1;
}

int cli_opt_int_list(const cli_opt *o, const char *value, char *err, size_t errlen)
{
	const cli_int_list *l = o->ptr;
	int n = 0;
	const char *p = value;
	for (;;) {
		char tok[32];
		size_t len = strcspn(p, ",");
		long v;
		if (n == l->cap || len == 0 || len >= sizeof(tok))
			goto bad;
		memcpy(tok, p, len);
		tok[len] = '\0';
		if (!cli_parse_int(tok, (long)o->lo, (long)o->hi, &v))
			goto bad;
		l->v[n++] = (int)v;
		if (p[len] == '\0')
			break;
		p += len + 1;
	}
	*l->n = n;
	return 0;
bad:
	snprintf(err, errlen, "%s takes up to %d integers %" PRId64 "..%" PRId64
		 " separated by commas, got '%s'", o->name, l->cap, o->lo, o->hi, value);
	return -1;
}

/* ---- parsing --------------------------------------------------------------- */

static const cli_opt *find_opt(const cli_spec *spec, const char *a)
{
	for (int k = 0; k < spec->n_opts; k++) {
		const cli_opt *o = &spec->opts[k];
		if (!strcmp(a, o->name) || (o->alias && !strcmp(a, o->alias)))
			return o;
	}
	return NULL;
}

static void store_int(const cli_opt *o, int64_t v)
{
	if (o->size == sizeof(int64_t)) {
		memcpy(o->ptr, &v, sizeof(v));
	} else if (o->size == sizeof(int)) {
		int x = (int)v;
		memcpy(o->ptr, &x, sizeof(x));
	} else {
		assert(o->size == sizeof(bool) && "an integer field is an int or 8 bytes");
		bool b = v != 0;
		memcpy(o->ptr, &b, sizeof(b));
	}
}

static int64_t load_int(const cli_opt *o)
{
	if (o->size == sizeof(int64_t)) {
		int64_t v;
		memcpy(&v, o->ptr, sizeof(v));
		return v;
	}
	if (o->size == sizeof(int)) {
		int x;
		memcpy(&x, o->ptr, sizeof(x));
		return x;
	}
	bool b;
	memcpy(&b, o->ptr, sizeof(b));
	return b;
}

/* "a, b or c" into buf. */
static void choice_text(const cli_opt *o, char *buf, size_t len)
{
	size_t at = 0;
	buf[0] = '\0';
	for (int i = 0; o->choices[i] && at < len; i++) {
		const char *sep = i == 0 ? "" : o->choices[i + 1] ? ", " : " or ";
		at += (size_t)snprintf(buf + at, len - at, "%s%s", sep, o->choices[i]);
	}
}

/* Parses one option's value; 0, or -1 with the message in err. */
static int parse_value(const cli_opt *o, const char *v, char *err, size_t errlen)
{
	switch (o->type) {
	case CLI_OPT_FLAG:
		store_int(o, o->hi);
		return 0;
	case CLI_OPT_INT: {
		char *end;
		errno = 0;
		long long x = strtoll(v, &end, 10);
		if (errno || end == v || *end || x < o->lo || x > o->hi) {
			if (o->hi == INT64_MAX)
				snprintf(err, errlen, "%s takes an integer >= %" PRId64 ", got '%s'",
					 o->name, o->lo, v);
			else
				snprintf(err, errlen, "%s takes an integer %" PRId64 "..%" PRId64
					 ", got '%s'", o->name, o->lo, o->hi, v);
			return -1;
		}
		store_int(o, (int64_t)x);
		return 0;
	}
	case CLI_OPT_REAL: {
		double d;
		/* Finite in the field's own type too (1e300 is no float). */
		bool ok = cli_parse_double(v, &d) && isfinite(d) &&
			  (o->size != sizeof(float) || fabs(d) <= FLT_MAX) && d <= o->rhi &&
			  (o->open_lo ? d > o->rlo : d >= o->rlo);
		if (!ok) {
			if (isinf(o->rlo) && isinf(o->rhi))
				snprintf(err, errlen, "%s takes a number, got '%s'", o->name, v);
			else if (o->open_lo)
				snprintf(err, errlen, "%s takes a number > %g and <= %g, got '%s'", o->name,
					 o->rlo, o->rhi, v);
			else
				snprintf(err, errlen, "%s takes a number %g..%g, got '%s'", o->name, o->rlo,
					 o->rhi, v);
			return -1;
		}
		if (o->size == sizeof(float)) {
			float f = (float)d;
			memcpy(o->ptr, &f, sizeof(f));
		} else {
			assert(o->size == sizeof(double) && "a real field is a float or a double");
			memcpy(o->ptr, &d, sizeof(d));
		}
		return 0;
	}
	case CLI_OPT_STRING:
		assert(o->size == sizeof(const char *));
		memcpy(o->ptr, &v, sizeof(v));
		return 0;
	case CLI_OPT_BUF:
		if (strlen(v) >= o->size) {
			snprintf(err, errlen, "%s takes at most %zu characters, got '%s'", o->name,
				 o->size - 1, v);
			return -1;
		}
		memcpy(o->ptr, v, strlen(v) + 1);
		return 0;
	case CLI_OPT_CHOICE:
		for (int i = 0; o->choices[i]; i++)
			if (!strcmp(v, o->choices[i])) {
				store_int(o, i);
				return 0;
			}
		char names[256];
		choice_text(o, names, sizeof(names));
		snprintf(err, errlen, "%s takes %s, got '%s'", o->name, names, v);
		return -1;
	case CLI_OPT_CALL:
		err[0] = '\0';
		if (o->call(o, v, err, errlen) == 0)
			return 0;
		if (!err[0])
			snprintf(err, errlen, "bad value '%s' for %s", v, o->name);
		return -1;
	}
	assert(!"unknown option type");
	return -1;
}

bool cli_opt_parse(const cli_spec *spec, int argc, char **argv, int *rc)
{
	*rc = 2;
	if (cli_wants_help(argc, argv)) {
		cli_opt_help(spec, stdout);
		*rc = 0;
		return false;
	}
	if (spec->pos_n)
		*spec->pos_n = 0;
	bool only_pos = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!only_pos && !strcmp(a, "--")) {
			only_pos = true;
			continue;
		}
		if (!only_pos && a[0] == '-' && a[1] != '\0') {
			const cli_opt *o = find_opt(spec, a);
			if (!o) {
				cli_usage_error(spec->cmd, "unknown option '%s'", a);
				return false;
			}
			const char *v = NULL;
			if (o->type != CLI_OPT_FLAG) {
				if (i + 1 >= argc) {
					cli_usage_error(spec->cmd, "%s needs a value (%s)", a,
							o->meta ? o->meta : "one argument");
					return false;
				}
				v = argv[++i];
			}
			char err[512];
			if (parse_value(o, v, err, sizeof(err)) < 0) {
				cli_usage_error(spec->cmd, "%s", err);
				return false;
			}
			if (o->given)
				*o->given = true;
			continue;
		}
		if (!spec->pos || *spec->pos_n >= spec->pos_max) {
			if (spec->pos && spec->pos_extra) {
				char msg[512];
				snprintf(msg, sizeof(msg), spec->pos_extra, a);
				cli_usage_error(spec->cmd, "%s", msg);
			} else {
				cli_usage_error(spec->cmd, "unexpected argument '%s'", a);
			}
			return false;
		}
		spec->pos[(*spec->pos_n)++] = a;
	}
	*rc = 0;
	return true;
}

/* ---- help ------------------------------------------------------------------ */

enum { HELP_WIDTH = 79, HELP_MAX_LABEL = 26 };

/* "-w, --weights FILE" (or "    --nn-threads N" when some option of the
 * table has a short name and this one has none) into buf. */
static int label_text(const cli_opt *o, bool aliases, char *buf, size_t len)
{
	const char *meta = o->type == CLI_OPT_FLAG ? NULL : o->meta ? o->meta : "X";
	if (o->alias)
		return snprintf(buf, len, "%s, %s%s%s", o->alias, o->name, meta ? " " : "", meta ? meta : "");
	return snprintf(buf, len, "%s%s%s%s", aliases ? "    " : "", o->name, meta ? " " : "",
			meta ? meta : "");
}

/* The default as help shows it, into buf ("" for none). */
static void default_text(const cli_opt *o, char *buf, size_t len)
{
	buf[0] = '\0';
	if (o->def) {
		snprintf(buf, len, "%s", o->def);
		return;
	}
	switch (o->type) {
	case CLI_OPT_INT:
		snprintf(buf, len, "%" PRId64, load_int(o));
		break;
	case CLI_OPT_REAL: {
		double d;
		if (o->size == sizeof(float)) {
			float f;
			memcpy(&f, o->ptr, sizeof(f));
			d = f;
		} else {
			memcpy(&d, o->ptr, sizeof(d));
		}
		snprintf(buf, len, "%g", d);
		break;
	}
	case CLI_OPT_STRING: {
		const char *s;
		memcpy(&s, o->ptr, sizeof(s));
		if (s)
			snprintf(buf, len, "%s", s);
		break;
	}
	case CLI_OPT_BUF:
		snprintf(buf, len, "%s", (const char *)o->ptr);
		break;
	case CLI_OPT_CHOICE: {
		int64_t i = load_int(o);
		int n = 0;
		while (o->choices[n])
			n++;
		if (i >= 0 && i < n)
			snprintf(buf, len, "%s", o->choices[i]);
		break;
	}
	case CLI_OPT_FLAG:
	case CLI_OPT_CALL:
		break;
	}
}

/* Writes text wrapped at HELP_WIDTH, every line after the first indented
 * by `indent` columns, the first starting at column `col`; '\n' breaks. */
static void wrap(FILE *f, const char *text, int col, int indent)
{
	const char *p = text;
	while (*p) {
		if (*p == '\n') {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
			p++;
			continue;
		}
		if (*p == ' ') {
			p++;
			continue;
		}
		int w = (int)strcspn(p, " \n");
		if (col > indent && col + 1 + w > HELP_WIDTH) {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
		} else if (col > indent) {
			fputc(' ', f);
			col++;
		}
		fwrite(p, 1, (size_t)w, f);
		col += w;
		p += w;
	}
}

void cli_opt_help(const cli_spec *spec, FILE *f)
{
	fprintf(f, "usage: sente %s %s\n", spec->prog ? spec->prog : spec->cmd,
		spec->usage ? spec->usage : "[options]");
	if (spec->about)
		fprintf(f, "\n%s", spec->about);
	bool aliases = false;
	int width = 0;
	for (int k = 0; k < spec->n_opts; k++)
		aliases |= spec->opts[k].alias != NULL;
	for (int k = 0; k < spec->n_opts; k++) {
		char label[128];
		int w = label_text(&spec->opts[k], aliases, label, sizeof(label));
		if (w <= HELP_MAX_LABEL && w > width)
			width = w;
	}
	if (spec->n_opts > 0)
		fprintf(f, "\noptions:\n");
	int indent = 2 + width + 2;
	for (int k = 0; k < spec->n_opts; k++) {
		const cli_opt *o = &spec->opts[k];
		char label[128], def[256], line[1024];
		int w = label_text(o, aliases, label, sizeof(label));
		default_text(o, def, sizeof(def));
		snprintf(line, sizeof(line), "%s%s%s%s", o->help ? o->help : "", def[0] ? " (default " : "",
			 def, def[0] ? ")" : "");
		fprintf(f, "  %s", label);
		if (w > width) {
			fprintf(f, "\n%*s", indent, "");
		} else {
			fprintf(f, "%*s", width - w + 2, "");
		}
		wrap(f, line, indent, indent);
		fputc('\n', f);
	}
	if (spec->after)
		fprintf(f, "\n%s", spec->after);
}
