/* sgf.c: SGF reader, writer and replay; see sgf.h.
 *
 * The reader is one loop over the bytes with a depth counter, never a
 * recursion, so hostile nesting costs no stack. It interprets properties as
 * it meets them. The main line needs no tree either: following the first
 * variation at every branch means the main line is exactly the nodes that
 * come before the file's first ')'. Everything after that is only checked
 * for syntax until the first game tree closes.
 */
#include "engine/sgf.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest property identifier kept (upper-case letters); longer ones are
 * no property we know, so they are ignored like any unknown one. */
#define SGF_ID_MAX 8
/* Room for a decoded number or point value ("aa:ss", "-7.5"). */
#define SGF_SHORT_MAX 64

struct sgf_parser;

/* One value of a property, as the raw bytes of the text. */
typedef struct sgf_value {
	const char *id;   /* the property's identifier, upper case ("AB") */
	const char *raw;  /* first byte after '[' */
	size_t len;       /* raw length up to the closing ']', escapes included */
	size_t off;       /* byte offset of raw in the text, for messages */
	int index;        /* 0 for the property's first value, 1 for the next... */
} sgf_value;

typedef int (*sgf_prop_fn)(struct sgf_parser *p, const sgf_value *v);

/* How one known property is read. */
typedef struct sgf_prop {
	const char *id;  /* identifier, upper case */
	sgf_prop_fn fn;  /* reads one value into the record */
	bool root_info;  /* GM, SZ: read in the root pre-pass and nowhere else */
	bool single;     /* takes one value; more is an error */
} sgf_prop;

/* How the property reader treats what it reads. */
typedef enum sgf_mode {
	SGF_MODE_SKIP = 0,   /* off the main line: syntax only */
	SGF_MODE_ROOT = 1,   /* root pre-pass: GM and SZ only */
	SGF_MODE_MAIN = 2,   /* main line: everything but GM and SZ */
} sgf_mode;

typedef struct sgf_parser {
	const char *text;  /* the input, not NUL-terminated */
	size_t len;        /* its length */
	size_t pos;        /* next byte to read */
	sgf_record *rec;   /* what is being filled */
	char *err;         /* message buffer, may be NULL */
	size_t errlen;     /* its size */
	int n_nodes;       /* main-line nodes begun so far (1 = in the root) */
	int moves_at_node; /* rec->n_moves when the current node began */
	uint8_t stone_set[GO_MAX_SIZE * GO_MAX_SIZE]; /* points given a stone (AB/AW)
						       * in the current node */
	char *comment;     /* C of the current node, until the node ends */
} sgf_parser;

static void set_error(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int parse_error(sgf_parser *p, size_t off, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_error(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || errlen == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Sets "sgf: byte OFF: ..." and returns -1. */
static int parse_error(sgf_parser *p, size_t off, const char *fmt, ...)
{
	if (!p->err || p->errlen == 0)
		return -1;
	int n = snprintf(p->err, p->errlen, "sgf: byte %zu: ", off);
	if (n >= 0 && (size_t)n < p->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* ---- the record ---------------------------------------------------------- */

void sgf_record_init(sgf_record *r)
{
	memset(r, 0, sizeof(*r));
	r->game = 1;
	r->size = GO_MAX_SIZE;
}

void sgf_record_free(sgf_record *r)
{
	if (!r)
		return;
	for (int i = 0; i < r->n_moves; i++)
		free(r->moves[i].comment);
	free(r->moves);
	free(r->setup);
	free(r->edits);
	free(r->comment);
	sgf_record_init(r);
}

/* Grows *arr (of *cap elements of `elem` bytes) to hold `need`; -1 on
 * overflow or out of memory, *arr untouched then. */
static int grow(void **arr, int *cap, int need, size_t elem)
{
	if (need <= *cap)
		return 0;
	int ncap = *cap < 16 ? 16 : *cap;
	while (ncap < need) {
		if (ncap > (1 << 28))
			return -1;
		ncap *= 2;
	}
	void *n = realloc(*arr, (size_t)ncap * elem);
	if (!n)
		return -1;
	*arr = n;
	*cap = ncap;
	return 0;
}

void sgf_record_remove_setup(sgf_record *r, int point)
{
	for (int i = 0; i < r->n_setup; i++)
		if (r->setup[i].point == point) {
			/* Keep the order: it is the file's. */
			memmove(&r->setup[i], &r->setup[i + 1],
				(size_t)(r->n_setup - i - 1) * sizeof(r->setup[0]));
			r->n_setup--;
			return;
		}
}

int sgf_record_add_setup(sgf_record *r, int color, int point)
{
	if ((color != GO_BLACK && color != GO_WHITE) || point < 0 ||
	    point >= GO_MAX_SIZE * GO_MAX_SIZE)
		return -1;
	sgf_record_remove_setup(r, point);
	void *arr = r->setup;
	if (grow(&arr, &r->cap_setup, r->n_setup + 1, sizeof(r->setup[0])) != 0)
		return -1;
	r->setup = arr;
	r->setup[r->n_setup].color = (int8_t)color;
	r->setup[r->n_setup].point = (int16_t)point;
	r->n_setup++;
	return 0;
}

int sgf_record_add_edit(sgf_record *r, int move, int color, int point)
{
	if ((color != GO_BLACK && color != GO_WHITE && color != GO_EMPTY) || point < 0 ||
	    point >= GO_MAX_SIZE * GO_MAX_SIZE || move < 0 || move > r->n_moves ||
	    (r->n_edits > 0 && move < r->edits[r->n_edits - 1].move))
		return -1;
	void *arr = r->edits;
	if (grow(&arr, &r->cap_edits, r->n_edits + 1, sizeof(r->edits[0])) != 0)
		return -1;
	r->edits = arr;
	r->edits[r->n_edits].move = move;
	r->edits[r->n_edits].color = (int8_t)color;
	r->edits[r->n_edits].point = (int16_t)point;
	r->n_edits++;
	return 0;
}

int sgf_record_add_move(sgf_record *r, int color, int point, const char *comment)
{
	if ((color != GO_BLACK && color != GO_WHITE) || point < 0 ||
	    point > GO_MAX_SIZE * GO_MAX_SIZE || r->n_moves >= SGF_MAX_MOVES)
		return -1;
	char *c = NULL;
	if (comment) {
		size_t n = strlen(comment) + 1;
		if (!(c = malloc(n)))
			return -1;
		memcpy(c, comment, n);
	}
	void *arr = r->moves;
	if (grow(&arr, &r->cap_moves, r->n_moves + 1, sizeof(r->moves[0])) != 0) {
		free(c);
		return -1;
	}
	r->moves = arr;
	r->moves[r->n_moves].color = (int8_t)color;
	r->moves[r->n_moves].point = (int16_t)point;
	r->moves[r->n_moves].comment = c;
	r->n_moves++;
	return 0;
}

/* ---- values -------------------------------------------------------------- */

/* Decodes a raw value: escapes resolved, soft line breaks ("\" + newline)
 * dropped, NUL bytes dropped (they would cut the C string), tabs and the
 * like made spaces; `simple` (SimpleText) makes newlines spaces too. Writes
 * at most cap - 1 bytes and a NUL; returns the full decoded length, so a
 * result >= cap means it was truncated. */
static size_t value_decode(const char *src, size_t n, char *dst, size_t cap, bool simple)
{
	size_t o = 0, k = 0;
	for (size_t i = 0; i < n; i++) {
		char c = src[i];
		if (c == '\\' && i + 1 < n) {
			c = src[++i];
			if (c == '\n' || c == '\r') {
				/* \r\n and \n\r are one line break. */
				if (i + 1 < n && (src[i + 1] == '\n' || src[i + 1] == '\r') &&
				    src[i + 1] != c)
					i++;
				continue;
			}
		} else if ((c == '\n' || c == '\r') && simple) {
			if (i + 1 < n && (src[i + 1] == '\n' || src[i + 1] == '\r') &&
			    src[i + 1] != c)
				i++;
			c = ' ';
		}
		/* Escaped or not, other white space is a space (SGF's rule; it
		 * also keeps what the writer prints reading back the same). */
		if (c == '\t' || c == '\v' || c == '\f')
			c = ' ';
		if (c == '\0')
			continue;
		if (o + 1 < cap)
			dst[o++] = c;
		k++;
	}
	if (cap)
		dst[o] = '\0';
	return k;
}

/* Decodes a short value (number, point) into buf, spaces trimmed; -1 with a
 * message when it does not fit. */
static int value_short(sgf_parser *p, const sgf_value *v, char buf[SGF_SHORT_MAX])
{
	size_t n = value_decode(v->raw, v->len, buf, SGF_SHORT_MAX, true);
	if (n >= SGF_SHORT_MAX)
		return parse_error(p, v->off, "%s value too long", v->id);
	char *s = buf;
	while (*s == ' ')
		s++;
	size_t l = strlen(s);
	while (l > 0 && s[l - 1] == ' ')
		l--;
	memmove(buf, s, l);
	buf[l] = '\0';
	return 0;
}

/* Decimal integer, optional sign, at most 9 digits. */
static bool parse_int(const char *s, int *out)
{
	int sign = 1, v = 0, digits = 0;
	if (*s == '+' || *s == '-')
		sign = *s++ == '-' ? -1 : 1;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (++digits > 9)
			return false;
		v = v * 10 + (*s - '0');
	}
	if (digits == 0 || *s)
		return false;
	*out = sign * v;
	return true;
}

/* SGF real: [+-] digits [. digits] (at least one digit), plus an optional
 * exponent so that what sgf_write prints always reads back. The syntax is
 * checked here because strtod alone would take "nan", "inf" and hex. */
static bool parse_real(const char *s, double *out)
{
	const char *q = s;
	int digits = 0;
	if (*q == '+' || *q == '-')
		q++;
	for (; *q >= '0' && *q <= '9'; q++)
		digits++;
	if (*q == '.')
		for (q++; *q >= '0' && *q <= '9'; q++)
			digits++;
	if (digits == 0)
		return false;
	if (*q == 'e' || *q == 'E') {
		q++;
		if (*q == '+' || *q == '-')
			q++;
		if (!(*q >= '0' && *q <= '9'))
			return false;
		while (*q >= '0' && *q <= '9')
			q++;
	}
	if (*q)
		return false;
	double d = strtod(s, NULL);
	if (!isfinite(d))
		return false;
	*out = d;
	return true;
}

/* SGF coordinate letter: 'a'..'z' 0..25, 'A'..'Z' 26..51. */
static int coord_letter(char c)
{
	if (c >= 'a' && c <= 'z')
		return c - 'a';
	if (c >= 'A' && c <= 'Z')
		return c - 'A' + 26;
	return -1;
}

/* Two letters -> point of the record's board, with a message when they are
 * no point or not on the board. */
static int parse_point(sgf_parser *p, const sgf_value *v, const char *s, size_t n, int *point)
{
	int size = p->rec->size;
	if (n != 2 || coord_letter(s[0]) < 0 || coord_letter(s[1]) < 0)
		return parse_error(p, v->off, "%s[%.*s]: not a point", v->id, (int)n, s);
	int c = coord_letter(s[0]), r = coord_letter(s[1]);
	if (c >= size || r >= size)
		return parse_error(p, v->off, "%s[%.*s]: point off the %dx%d board",
				   v->id, (int)n, s, size, size);
	*point = (size - 1 - r) * size + c;
	return 0;
}

/* ---- properties ---------------------------------------------------------- */

static int prop_gm(sgf_parser *p, const sgf_value *v)
{
	char buf[SGF_SHORT_MAX];
	int g;
	if (value_short(p, v, buf) != 0)
		return -1;
	if (!parse_int(buf, &g))
		return parse_error(p, v->off, "GM[%s]: not a number", buf);
	if (g != 1)
		return parse_error(p, v->off, "not a Go game (GM[%d])", g);
	p->rec->game = g;
	return 0;
}

static int prop_sz(sgf_parser *p, const sgf_value *v)
{
	char buf[SGF_SHORT_MAX];
	int w, h;
	if (value_short(p, v, buf) != 0)
		return -1;
	char *colon = strchr(buf, ':');
	if (colon) {
		*colon = '\0';
		if (!parse_int(buf, &w) || !parse_int(colon + 1, &h))
			return parse_error(p, v->off, "SZ: not a size");
		if (w != h)
			return parse_error(p, v->off, "rectangular board SZ[%d:%d] not supported", w, h);
	} else if (!parse_int(buf, &w)) {
		return parse_error(p, v->off, "SZ[%s]: not a size", buf);
	}
	if (w < GO_MIN_SIZE || w > GO_MAX_SIZE)
		return parse_error(p, v->off, "board size %d not supported (%d..%d)", w,
				   GO_MIN_SIZE, GO_MAX_SIZE);
	p->rec->size = w;
	return 0;
}

static int prop_km(sgf_parser *p, const sgf_value *v)
{
	char buf[SGF_SHORT_MAX];
	double k = 0;
	if (value_short(p, v, buf) != 0)
		return -1;
	/* KM[] is seen in the wild; it says nothing, so komi stays 0. */
	if (buf[0] && !parse_real(buf, &k))
		return parse_error(p, v->off, "KM[%s]: not a number", buf);
	p->rec->komi = k;
	return 0;
}

static int prop_ha(sgf_parser *p, const sgf_value *v)
{
	char buf[SGF_SHORT_MAX];
	int h;
	if (value_short(p, v, buf) != 0)
		return -1;
	if (!parse_int(buf, &h) || h < 0 || h >= GO_MAX_SIZE * GO_MAX_SIZE)
		return parse_error(p, v->off, "HA[%s]: not a handicap", buf);
	p->rec->handicap = h;
	return 0;
}

/* SimpleText into a fixed field; when it must be cut, the cut does not
 * split a UTF-8 sequence. */
static void text_field(const sgf_value *v, char *dst, size_t cap)
{
	if (value_decode(v->raw, v->len, dst, cap, true) < cap)
		return;
	size_t n = strlen(dst), lead = n;
	while (lead > 0 && ((unsigned char)dst[lead - 1] & 0xC0) == 0x80)
		lead--;
	if (lead == 0)
		return;
	unsigned char c = (unsigned char)dst[lead - 1];
	size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
	if (n - (lead - 1) < need)
		dst[lead - 1] = '\0';
}

static int prop_ru(sgf_parser *p, const sgf_value *v)
{
	text_field(v, p->rec->rules, sizeof(p->rec->rules));
	return 0;
}

static int prop_pb(sgf_parser *p, const sgf_value *v)
{
	text_field(v, p->rec->pb, sizeof(p->rec->pb));
	return 0;
}

static int prop_pw(sgf_parser *p, const sgf_value *v)
{
	text_field(v, p->rec->pw, sizeof(p->rec->pw));
	return 0;
}

static int prop_re(sgf_parser *p, const sgf_value *v)
{
	text_field(v, p->rec->re, sizeof(p->rec->re));
	return 0;
}

static int prop_dt(sgf_parser *p, const sgf_value *v)
{
	text_field(v, p->rec->dt, sizeof(p->rec->dt));
	return 0;
}

static int prop_c(sgf_parser *p, const sgf_value *v)
{
	char *c = malloc(v->len + 1);
	if (!c)
		return parse_error(p, v->off, "out of memory");
	value_decode(v->raw, v->len, c, v->len + 1, false);
	free(p->comment);
	p->comment = c;
	return 0;
}

static int prop_move(sgf_parser *p, const sgf_value *v)
{
	char buf[SGF_SHORT_MAX];
	int color = v->id[0] == 'B' ? GO_BLACK : GO_WHITE;
	int size = p->rec->size, point;
	if (value_short(p, v, buf) != 0)
		return -1;
	/* "tt" is FF[3]'s pass; on boards up to 19 it is no point anyway. */
	if (buf[0] == '\0' || (size <= 19 && strcmp(buf, "tt") == 0))
		point = size * size;
	else if (parse_point(p, v, buf, strlen(buf), &point) != 0)
		return -1;
	if (p->rec->n_moves >= SGF_MAX_MOVES)
		return parse_error(p, v->off, "more than %d moves", SGF_MAX_MOVES);
	if (sgf_record_add_move(p->rec, color, point, NULL) != 0)
		return parse_error(p, v->off, "out of memory");
	return 0;
}

/* AB, AW, AE: a point or an FF[4] rectangle "aa:cc" (either corner order). */
static int prop_setup(sgf_parser *p, const sgf_value *v)
{
	char buf[SGF_SHORT_MAX];
	int color = v->id[1] == 'B' ? GO_BLACK : v->id[1] == 'W' ? GO_WHITE : GO_EMPTY;
	int a, b;
	bool edit = p->moves_at_node > 0; /* after the first move: an edit */
	if (value_short(p, v, buf) != 0)
		return -1;
	if (buf[0] == '\0')
		return 0; /* an empty list says nothing */
	char *colon = strchr(buf, ':');
	if (colon) {
		if (parse_point(p, v, buf, (size_t)(colon - buf), &a) != 0 ||
		    parse_point(p, v, colon + 1, strlen(colon + 1), &b) != 0)
			return -1;
	} else {
		if (parse_point(p, v, buf, strlen(buf), &a) != 0)
			return -1;
		b = a;
	}
	int size = p->rec->size;
	int x0 = a % size, y0 = a / size, x1 = b % size, y1 = b / size;
	if (x0 > x1) {
		int t = x0;
		x0 = x1;
		x1 = t;
	}
	if (y0 > y1) {
		int t = y0;
		y0 = y1;
		y1 = t;
	}
	/* Top row first, as the file reads. */
	for (int y = y1; y >= y0; y--)
		for (int x = x0; x <= x1; x++) {
			int pt = y * size + x;
			if (color == GO_EMPTY) {
				/* AE may clear a point of this node's rectangles. */
				if (edit ? sgf_record_add_edit(p->rec, p->moves_at_node, GO_EMPTY, pt) != 0
					 : (sgf_record_remove_setup(p->rec, pt), false))
					return parse_error(p, v->off, "out of memory");
				continue;
			}
			/* Two stones on one point in one node: the file
			 * contradicts itself (SGF wants the points of AB, AW
			 * and AE unique within a node). */
			if (p->stone_set[pt])
				return parse_error(p, v->off, "%s: %c%c set twice in one node", v->id,
						   'a' + x, 'a' + (size - 1 - y));
			p->stone_set[pt] = 1;
			if ((edit ? sgf_record_add_edit(p->rec, p->moves_at_node, color, pt)
				  : sgf_record_add_setup(p->rec, color, pt)) != 0)
				return parse_error(p, v->off, "out of memory");
		}
	return 0;
}

static const sgf_prop sgf_props[] = {
	{ "GM", prop_gm, true, true },
	{ "SZ", prop_sz, true, true },
	{ "KM", prop_km, false, true },
	{ "HA", prop_ha, false, true },
	{ "RU", prop_ru, false, true },
	{ "PB", prop_pb, false, true },
	{ "PW", prop_pw, false, true },
	{ "RE", prop_re, false, true },
	{ "DT", prop_dt, false, true },
	{ "C", prop_c, false, true },
	{ "B", prop_move, false, true },
	{ "W", prop_move, false, true },
	{ "AB", prop_setup, false, false },
	{ "AW", prop_setup, false, false },
	{ "AE", prop_setup, false, false },
};

static const sgf_prop *prop_find(const char *id)
{
	for (size_t i = 0; i < sizeof(sgf_props) / sizeof(sgf_props[0]); i++)
		if (strcmp(sgf_props[i].id, id) == 0)
			return &sgf_props[i];
	return NULL;
}

/* ---- syntax -------------------------------------------------------------- */

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static bool is_letter(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static void skip_space(sgf_parser *p)
{
	while (p->pos < p->len && is_space(p->text[p->pos]))
		p->pos++;
}

/* Reads one property (identifier and its values) at p->pos and, as `mode`
 * says, hands its values to the property's reader. */
static int property_read(sgf_parser *p, sgf_mode mode)
{
	const char *t = p->text;
	size_t id_off = p->pos;
	char id[SGF_ID_MAX + 1];
	int n = 0;
	bool too_long = false;

	/* Lower-case letters are ignored (FF[3] "AddBlack" is AB). */
	for (; p->pos < p->len && is_letter(t[p->pos]); p->pos++) {
		if (t[p->pos] >= 'a')
			continue;
		if (n < SGF_ID_MAX)
			id[n++] = t[p->pos];
		else
			too_long = true;
	}
	id[n] = '\0';
	size_t id_len = p->pos - id_off;
	const sgf_prop *prop = too_long || n == 0 ? NULL : prop_find(id);
	if (prop && (mode == SGF_MODE_SKIP || prop->root_info != (mode == SGF_MODE_ROOT)))
		prop = NULL;

	skip_space(p);
	if (p->pos >= p->len || t[p->pos] != '[')
		return parse_error(p, p->pos, "property %.*s without a value (expected '[')",
				   (int)(id_len > 16 ? 16 : id_len), t + id_off);
	for (int index = 0; p->pos < p->len && t[p->pos] == '['; index++) {
		size_t open = p->pos++;
		size_t start = p->pos;
		while (p->pos < p->len && t[p->pos] != ']')
			p->pos += t[p->pos] == '\\' && p->pos + 1 < p->len ? 2 : 1;
		if (p->pos >= p->len)
			return parse_error(p, open, "value not closed (expected ']')");
		if (prop) {
			sgf_value v = { .id = prop->id, .raw = t + start, .len = p->pos - start,
					.off = start, .index = index };
			if (prop->single && index > 0)
				return parse_error(p, open, "%s takes one value", prop->id);
			if (prop->fn(p, &v) != 0)
				return -1;
		}
		p->pos++;
		skip_space(p);
	}
	return 0;
}

/* The root node's GM and SZ, read before its other properties so that a
 * file giving AB before SZ still decodes its points on the right board. */
static int root_prepass(sgf_parser *p)
{
	size_t save = p->pos;
	int rc = 0;
	for (;;) {
		skip_space(p);
		if (p->pos >= p->len || !is_letter(p->text[p->pos]))
			break;
		if ((rc = property_read(p, SGF_MODE_ROOT)) != 0)
			break;
	}
	p->pos = save;
	return rc;
}

/* A main-line node ends: its comment goes to its last move, or to the
 * record when it is the root; other comments are dropped. */
static void node_end(sgf_parser *p)
{
	sgf_record *r = p->rec;
	if (r->n_moves > p->moves_at_node) {
		free(r->moves[r->n_moves - 1].comment);
		r->moves[r->n_moves - 1].comment = p->comment;
	} else if (p->n_nodes == 1) {
		free(r->comment);
		r->comment = p->comment;
	} else {
		free(p->comment);
	}
	p->comment = NULL;
}

static const char *char_name(char c, char buf[8])
{
	if (c > ' ' && c < 127)
		snprintf(buf, 8, "'%c'", c);
	else
		snprintf(buf, 8, "0x%02x", (unsigned)(unsigned char)c);
	return buf;
}

static int parse(sgf_parser *p)
{
	const char *t = p->text;
	size_t depth = 0;         /* open game trees */
	bool on_main = true;      /* no ')' yet: still on the main line */
	bool in_node = false;     /* after ';': properties may follow */
	bool after_close = false; /* after ')': only '(' or ')' may follow */
	bool node_main = false;   /* the current node is on the main line */
	char cbuf[8];

	/* Text before the first '(' is skipped: files from the web often carry
	 * a header or a byte-order mark. */
	const char *open = p->len ? memchr(t, '(', p->len) : NULL;
	if (!open)
		return parse_error(p, p->len, "no game tree (expected '(')");
	p->pos = (size_t)(open - t);
	for (;;) {
		skip_space(p);
		if (p->pos >= p->len)
			return parse_error(p, p->len, "unexpected end of file (expected ')')");
		char c = t[p->pos];
		if (c == '(') {
			if (in_node && node_main)
				node_end(p);
			in_node = after_close = false;
			depth++;
			p->pos++;
			skip_space(p);
			if (p->pos >= p->len || t[p->pos] != ';')
				return parse_error(p, p->pos, "expected ';' after '('");
		} else if (c == ')') {
			if (in_node && node_main)
				node_end(p);
			in_node = on_main = false;
			after_close = true;
			p->pos++;
			if (--depth == 0)
				return 0;
		} else if (c == ';') {
			if (after_close)
				return parse_error(p, p->pos, "node after a variation (expected '(' or ')')");
			if (in_node && node_main)
				node_end(p);
			in_node = true;
			node_main = on_main;
			p->pos++;
			if (node_main) {
				p->n_nodes++;
				p->moves_at_node = p->rec->n_moves;
				memset(p->stone_set, 0, sizeof(p->stone_set));
				if (p->n_nodes == 1 && root_prepass(p) != 0)
					return -1;
			}
		} else if (is_letter(c)) {
			if (!in_node)
				return parse_error(p, p->pos, "property outside a node (expected ';')");
			if (property_read(p, node_main ? SGF_MODE_MAIN : SGF_MODE_SKIP) != 0)
				return -1;
		} else {
			return parse_error(p, p->pos, "unexpected %s", char_name(c, cbuf));
		}
	}
}

int sgf_read(const char *text, size_t len, sgf_record *out, char *err, size_t errlen)
{
	sgf_parser p = { .text = text, .len = len, .rec = out, .err = err, .errlen = errlen };
	int rc;

	sgf_record_init(out);
	if (err && errlen)
		err[0] = '\0';
	if (!text) {
		p.text = "";
		p.len = 0;
	}
	rc = parse(&p);
	free(p.comment);
	if (rc != 0)
		sgf_record_free(out);
	return rc;
}

int sgf_load_file(const char *path, sgf_record *out, char *err, size_t errlen)
{
	char msg[256];
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int rc = -1;
	FILE *f;

	sgf_record_init(out);
	if (!(f = fopen(path, "rb"))) {
		set_error(err, errlen, "sgf: %s: %s", path, strerror(errno));
		goto out;
	}
	for (;;) {
		if (len == cap) {
			if (cap > SGF_MAX_FILE) {
				set_error(err, errlen, "sgf: %s: larger than %u MB", path,
					  SGF_MAX_FILE >> 20);
				goto out;
			}
			size_t ncap = cap ? cap * 2 : 65536;
			if (ncap > SGF_MAX_FILE + 1)
				ncap = SGF_MAX_FILE + 1;
			char *n = realloc(buf, ncap);
			if (!n) {
				set_error(err, errlen, "sgf: %s: out of memory", path);
				goto out;
			}
			buf = n;
			cap = ncap;
		}
		size_t got = fread(buf + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		set_error(err, errlen, "sgf: %s: read error", path);
		goto out;
	}
	if (len > SGF_MAX_FILE) {
		set_error(err, errlen, "sgf: %s: larger than %u MB", path, SGF_MAX_FILE >> 20);
		goto out;
	}
	rc = sgf_read(buf, len, out, msg, sizeof(msg));
	if (rc != 0)
		/* Name the file: "sgf: x.sgf: byte 17: ...". */
		set_error(err, errlen, "sgf: %s: %s", path,
			  strncmp(msg, "sgf: ", 5) == 0 ? msg + 5 : msg);
out:
	if (f)
		fclose(f);
	free(buf);
	return rc;
}

/* ---- replay -------------------------------------------------------------- */

/* "cd" for a point (SGF letters), "" for the pass. */
static void point_sgf(int size, int point, char buf[3])
{
	if (point >= size * size) {
		buf[0] = '\0';
		return;
	}
	buf[0] = (char)('a' + point % size);
	buf[1] = (char)('a' + (size - 1 - point / size));
	buf[2] = '\0';
}

/* "C6" (GTP vertex, no I) or "pass". */
static void point_gtp(int size, int point, char buf[16])
{
	if (point >= size * size) {
		strcpy(buf, "pass");
		return;
	}
	int x = point % size;
	snprintf(buf, 16, "%c%d", (char)('A' + x + (x >= 8)), point / size + 1);
}

/* Applies the record's edits before move `move`, from edits[*e] on (and
 * moves *e past them). 0, or -1 with a message. */
static int replay_edits(const sgf_record *r, go_board *b, int move, int *e, char *err,
			size_t errlen)
{
	int size = b->size, area = size * size, from = *e;
	while (*e < r->n_edits && r->edits[*e].move == move)
		(*e)++;
	if (*e == from)
		return 0;
	int8_t col[GO_MAX_SIZE * GO_MAX_SIZE];
	for (int p = 0; p < area; p++)
		col[p] = (int8_t)go_color_at(b, p % size, p / size);
	bool adds_only = true;
	for (int k = from; k < *e; k++) {
		const sgf_edit *x = &r->edits[k];
		if (x->point < 0 || x->point >= area) {
			set_error(err, errlen, "sgf: setup before move %d off the board", move + 1);
			return -1;
		}
		adds_only = adds_only && x->color != GO_EMPTY && col[x->point] == GO_EMPTY;
		col[x->point] = x->color;
	}
	if (!adds_only) { /* a stone goes or changes colour: start afresh */
		int to_move = b->to_move;
		go_init(b, size, b->komi);
		go_set_to_move(b, to_move);
	}
	for (int k = adds_only ? from : 0; k < (adds_only ? *e : area); k++) {
		int p = adds_only ? r->edits[k].point : k;
		if ((adds_only || col[p] != GO_EMPTY) && go_place_stone(b, col[p], p) != 0) {
			char s[3], g[16];
			point_sgf(size, p, s);
			point_gtp(size, p, g);
			set_error(err, errlen, "sgf: setup before move %d: A%c[%s] (%s) cannot be placed",
				  move + 1, col[p] == GO_BLACK ? 'B' : 'W', s, g);
			return -1;
		}
	}
	return 0;
}

int sgf_replay(const sgf_record *r, go_board *b, int upto, char *err, size_t errlen)
{
	char s[3], g[16];

	if (r->game != 1) {
		set_error(err, errlen, "sgf: not a Go game (GM[%d])", r->game);
		return -1;
	}
	if (go_init(b, r->size, r->komi) != 0) {
		set_error(err, errlen, "sgf: size %d, komi %g not supported (komi must be a multiple of 0.5)",
			  r->size, r->komi);
		return -1;
	}
	int area = r->size * r->size;
	bool handicap = r->handicap >= 2 && r->n_setup > 0;
	for (int i = 0; i < r->n_setup; i++) {
		if (r->setup[i].point < 0 || r->setup[i].point >= area) {
			set_error(err, errlen, "sgf: setup stone %d off the board", i + 1);
			return -1;
		}
		handicap = handicap && r->setup[i].color == GO_BLACK;
	}
	if (r->n_setup >= area) {
		set_error(err, errlen, "sgf: %d setup stones do not fit on the board", r->n_setup);
		return -1;
	}
	if (handicap) {
		int pts[GO_MAX_SIZE * GO_MAX_SIZE];
		for (int i = 0; i < r->n_setup; i++)
			pts[i] = r->setup[i].point;
		if (go_set_handicap(b, pts, r->n_setup) != 0) {
			set_error(err, errlen, "sgf: handicap of %d stones cannot be placed", r->n_setup);
			return -1;
		}
	} else {
		for (int i = 0; i < r->n_setup; i++)
			if (go_place_stone(b, r->setup[i].color, r->setup[i].point) != 0) {
				point_sgf(r->size, r->setup[i].point, s);
				point_gtp(r->size, r->setup[i].point, g);
				set_error(err, errlen, "sgf: setup stone A%c[%s] (%s) cannot be placed",
					  r->setup[i].color == GO_BLACK ? 'B' : 'W', s, g);
				return -1;
			}
	}
	if (upto < 0 || upto > r->n_moves)
		upto = r->n_moves;
	int e = 0;
	for (int i = 0; i <= upto; i++) {
		if (replay_edits(r, b, i, &e, err, errlen) != 0)
			return -1;
		if (i == upto)
			break;
		const sgf_move *m = &r->moves[i];
		if ((m->color != GO_BLACK && m->color != GO_WHITE) || m->point < 0 || m->point > area) {
			set_error(err, errlen, "sgf: move %d is not a move of this board", i + 1);
			return -1;
		}
		/* Played for the colour the record names: out-of-turn moves and
		 * White moving first after a handicap replay as recorded. */
		int rc = go_play_color(b, m->color, m->point);
		if (rc != 0) {
			point_sgf(r->size, m->point, s);
			point_gtp(r->size, m->point, g);
			set_error(err, errlen, "sgf: move %d %c[%s] (%s) %s", i + 1,
				  m->color == GO_BLACK ? 'B' : 'W', s, g,
				  rc == -2 ? "does not fit in the history" : "is illegal");
			return -1;
		}
	}
	return 0;
}

int sgf_record_from_go(const go_board *b, sgf_record *out)
{
	bool all_black = true;

	sgf_record_init(out);
	out->size = b->size;
	out->komi = b->komi;
	snprintf(out->rules, sizeof(out->rules), "Tromp-Taylor");
	for (int i = 0; i < b->n_history; i++) {
		const go_action *a = &b->history[i];
		int rc;
		if (a->setup && out->n_moves > 0) {
			rc = sgf_record_add_edit(out, out->n_moves, a->color, a->point);
		} else if (a->setup) {
			all_black = all_black && a->color == GO_BLACK;
			rc = sgf_record_add_setup(out, a->color, a->point);
		} else {
			rc = sgf_record_add_move(out, a->color, a->point, NULL);
		}
		if (rc != 0)
			goto fail;
	}
	if (all_black && out->n_setup >= 2)
		out->handicap = out->n_setup;
	if (b->resigned == GO_BLACK || b->resigned == GO_WHITE) {
		snprintf(out->re, sizeof(out->re), "%c+R", b->resigned == GO_BLACK ? 'W' : 'B');
	} else if (go_is_over(b)) {
		double s = go_score(b);
		if (s == 0)
			snprintf(out->re, sizeof(out->re), "0");
		else
			snprintf(out->re, sizeof(out->re), "%c+%g", s > 0 ? 'B' : 'W', fabs(s));
	}
	return 0;
fail:
	sgf_record_free(out);
	return -1;
}

/* ---- writing ------------------------------------------------------------- */

/* A growing string; `failed` sticks after an allocation failure. */
typedef struct sgf_buf {
	char *s;     /* the text, NUL-terminated while not failed */
	size_t len;  /* its length */
	size_t cap;  /* allocated bytes */
	bool failed; /* out of memory: the text is incomplete */
} sgf_buf;

static void buf_put(sgf_buf *b, const char *s, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t ncap = b->cap ? b->cap : 256;
		while (ncap < b->len + n + 1)
			ncap *= 2;
		char *x = realloc(b->s, ncap);
		if (!x) {
			b->failed = true;
			return;
		}
		b->s = x;
		b->cap = ncap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void buf_str(sgf_buf *b, const char *s)
{
	buf_put(b, s, strlen(s));
}

/* ID[text] with ']' and '\' escaped. */
static void buf_text(sgf_buf *b, const char *id, const char *text)
{
	buf_str(b, id);
	buf_put(b, "[", 1);
	for (const char *c = text; *c; c++) {
		if (*c == ']' || *c == '\\')
			buf_put(b, "\\", 1);
		buf_put(b, c, 1);
	}
	buf_put(b, "]", 1);
}

static void buf_point(sgf_buf *b, int size, int point)
{
	char s[3];
	point_sgf(size, point, s);
	buf_put(b, "[", 1);
	buf_str(b, s);
	buf_put(b, "]", 1);
}

/* Shortest "%g" form that reads back to the same double. */
static void format_real(double d, char buf[32])
{
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, 32, "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			return;
	}
}

/* The edits before move `move` (from edits[*e]) as one node: AB, AW, AE. */
static void write_edits(sgf_buf *b, const sgf_record *r, int move, int *e)
{
	int from = *e;
	while (*e < r->n_edits && r->edits[*e].move == move)
		(*e)++;
	if (*e == from)
		return;
	buf_str(b, "\n;");
	static const char *const ids[] = { "AB", "AW", "AE" };
	static const int colors[] = { GO_BLACK, GO_WHITE, GO_EMPTY };
	/* Each point once, with the last edit's colour: the node's result
	 * whatever the order of its edits (SGF gives a property once a node). */
	for (int c = 0; c < 3; c++) {
		bool first = true;
		for (int k = from; k < *e; k++) {
			bool last = true;
			for (int j = k + 1; j < *e; j++)
				last = last && r->edits[j].point != r->edits[k].point;
			if (r->edits[k].color != colors[c] || !last)
				continue;
			if (first)
				buf_str(b, ids[c]);
			first = false;
			buf_point(b, r->size, r->edits[k].point);
		}
	}
}

char *sgf_write(const sgf_record *r)
{
	sgf_buf b = { 0 };
	char tmp[64], komi[32];

	if (r->size < GO_MIN_SIZE || r->size > GO_MAX_SIZE || !isfinite(r->komi))
		return NULL;
	int area = r->size * r->size;
	for (int i = 0; i < r->n_setup; i++)
		if (r->setup[i].point < 0 || r->setup[i].point >= area ||
		    (r->setup[i].color != GO_BLACK && r->setup[i].color != GO_WHITE))
			return NULL;
	for (int i = 0; i < r->n_moves; i++)
		if (r->moves[i].point < 0 || r->moves[i].point > area ||
		    (r->moves[i].color != GO_BLACK && r->moves[i].color != GO_WHITE))
			return NULL;
	for (int i = 0; i < r->n_edits; i++)
		if (r->edits[i].point < 0 || r->edits[i].point >= area || r->edits[i].move < 0 ||
		    r->edits[i].move > r->n_moves || (i > 0 && r->edits[i].move < r->edits[i - 1].move) ||
		    (r->edits[i].color != GO_BLACK && r->edits[i].color != GO_WHITE &&
		     r->edits[i].color != GO_EMPTY))
			return NULL;

	format_real(r->komi, komi);
	snprintf(tmp, sizeof(tmp), "SZ[%d]KM[%s]", r->size, komi);
	buf_str(&b, "(;FF[4]GM[1]CA[UTF-8]AP[sente]");
	buf_str(&b, tmp);
	if (r->handicap > 0) {
		snprintf(tmp, sizeof(tmp), "HA[%d]", r->handicap);
		buf_str(&b, tmp);
	}
	if (r->rules[0])
		buf_text(&b, "RU", r->rules);
	if (r->pb[0])
		buf_text(&b, "PB", r->pb);
	if (r->pw[0])
		buf_text(&b, "PW", r->pw);
	if (r->re[0])
		buf_text(&b, "RE", r->re);
	if (r->dt[0])
		buf_text(&b, "DT", r->dt);
	if (r->comment)
		buf_text(&b, "C", r->comment);
	for (int color = GO_BLACK; color <= GO_WHITE; color++) {
		bool first = true;
		for (int i = 0; i < r->n_setup; i++) {
			if (r->setup[i].color != color)
				continue;
			if (first)
				buf_str(&b, color == GO_BLACK ? "\nAB" : "\nAW");
			first = false;
			buf_point(&b, r->size, r->setup[i].point);
		}
	}
	int e = 0;
	for (int i = 0; i <= r->n_moves; i++) {
		write_edits(&b, r, i, &e);
		if (i == r->n_moves)
			break;
		const sgf_move *m = &r->moves[i];
		/* A line per move keeps the file readable and diffable. */
		buf_str(&b, m->color == GO_BLACK ? "\n;B" : "\n;W");
		buf_point(&b, r->size, m->point);
		if (m->comment)
			buf_text(&b, "C", m->comment);
	}
	buf_str(&b, ")\n");
	if (b.failed) {
		free(b.s);
		return NULL;
	}
	return b.s;
}
