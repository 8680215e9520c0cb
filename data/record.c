/* record.c: game records and their blob encoding (format in record.h). */
#include "data/record.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "engine/game_desc.h"

/* Largest move count a record may hold: Go ends after 3 * size * size
 * moves (1083 on 19x19) and the board's history holds GO_MAX_HISTORY. */
#define RECORD_MAX_MOVES GO_MAX_HISTORY
/* Bytes of the fixed header: magic, version, kind, size (komi follows). */
#define RECORD_HEADER 7
/* The quantised root value that stands for "unknown". */
#define RECORD_VALUE_UNKNOWN (-128)

/* The policy size of p's game; 0 (no move fits) for an unknown kind. */
static int record_num_actions(const game_params *p)
{
	return game_desc_by_kind(p->kind) ? game_numbers_of(p).actions : 0;
}

void record_init(game_record *r, const game_params *p)
{
	memset(r, 0, sizeof(*r));
	r->params = *p;
	r->resigned = -1;
}

void record_free(game_record *r)
{
	if (!r)
		return;
	free(r->moves);
	free(r->full);
	free(r->explored);
	free(r->root_value);
	free(r->visit_start);
	free(r->visits);
	game_params p = r->params;
	record_init(r, &p);
}

/* Grows each per-move array to hold `need` moves; -1 when memory runs out
 * (arrays already grown stay valid: they are only larger). */
static int record_reserve_moves(game_record *r, int need)
{
	if (need <= r->capacity_moves)
		return 0;
	int cap = r->capacity_moves ? r->capacity_moves * 2 : 64;
	while (cap < need)
		cap *= 2;
	int16_t *m = realloc(r->moves, (size_t)cap * sizeof(*m));
	if (!m)
		return -1;
	r->moves = m;
	uint8_t *f = realloc(r->full, (size_t)cap * sizeof(*f));
	if (!f)
		return -1;
	r->full = f;
	uint8_t *e = realloc(r->explored, (size_t)cap * sizeof(*e));
	if (!e)
		return -1;
	r->explored = e;
	float *v = realloc(r->root_value, (size_t)cap * sizeof(*v));
	if (!v)
		return -1;
	r->root_value = v;
	int32_t *s = realloc(r->visit_start, (size_t)(cap + 1) * sizeof(*s));
	if (!s)
		return -1;
	if (!r->visit_start)
		s[0] = 0;
	r->visit_start = s;
	r->capacity_moves = cap;
	return 0;
}

static int record_reserve_visits(game_record *r, int need)
{
	if (need <= r->capacity_visits)
		return 0;
	int cap = r->capacity_visits ? r->capacity_visits * 2 : 256;
	while (cap < need)
		cap *= 2;
	record_visit *v = realloc(r->visits, (size_t)cap * sizeof(*v));
	if (!v)
		return -1;
	r->visits = v;
	r->capacity_visits = cap;
	return 0;
}

static int record_visit_cmp(const void *a, const void *b)
{
	const record_visit *x = a, *y = b;
	return (x->move > y->move) - (x->move < y->move);
}

int record_add_move(game_record *r, int move, bool full, float root_value,
		    const record_visit *v, int n_v)
{
	int actions = record_num_actions(&r->params);
	if (move < 0 || move >= actions || n_v < 0 || n_v > actions || (n_v > 0 && !v))
		return -1;
	if (r->n_moves >= RECORD_MAX_MOVES)
		return -1;
	if (record_reserve_moves(r, r->n_moves + 1) || record_reserve_visits(r, r->n_visits + n_v))
		return -1;
	record_visit *dst = r->visits ? r->visits + r->n_visits : NULL; /* NULL: nothing allocated yet */
	if (n_v > 0) {
		memcpy(dst, v, (size_t)n_v * sizeof(*v));
		qsort(dst, (size_t)n_v, sizeof(*dst), record_visit_cmp);
	}
	for (int i = 0; i < n_v; i++)
		if (dst[i].move < 0 || dst[i].move >= actions || (i > 0 && dst[i].move == dst[i - 1].move))
			return -1; /* nothing committed yet: n_visits unchanged */
	int i = r->n_moves++;
	r->moves[i] = (int16_t)move;
	r->full[i] = full ? 1 : 0;
	r->explored[i] = 0;
	r->root_value[i] = root_value;
	r->n_visits += n_v;
	r->visit_start[i + 1] = r->n_visits;
	return 0;
}

void record_mark_explored(game_record *r)
{
	if (r->n_moves > 0)
		r->explored[r->n_moves - 1] = 1;
}

void record_set_outcome(game_record *r, const game *g)
{
	r->result = game_result(g);
	r->resigned = game_resigned(g);
	/* An area count, unless someone resigned; else the result. */
	if (game_desc_of(g)->has_komi)
		r->score = r->resigned >= 0 ? 0 : game_score(g);
	else
		r->score = r->result;
}

int record_full_count(const game_record *r)
{
	int n = 0;
	for (int i = 0; i < r->n_moves; i++)
		n += r->full[i] != 0;
	return n;
}

double record_policy_entropy(const game_record *r, int *n)
{
	double sum = 0;
	int k = 0;
	for (int i = 0; i < r->n_moves; i++) {
		if (!r->full[i])
			continue;
		double total = 0, h = 0;
		for (int32_t v = r->visit_start[i]; v < r->visit_start[i + 1]; v++)
			total += r->visits[v].count;
		if (total <= 0)
			continue;
		for (int32_t v = r->visit_start[i]; v < r->visit_start[i + 1]; v++) {
			double p = r->visits[v].count / total;
			if (p > 0)
				h -= p * log(p);
		}
		sum += h;
		k++;
	}
	if (n)
		*n = k;
	return sum;
}

int record_position_targets(const game_record *r, int i, int to_move, int16_t *moves,
			    uint16_t *counts, float *value)
{
	int nv = 0;
	for (int32_t v = r->visit_start[i]; v < r->visit_start[i + 1]; v++) {
		moves[nv] = r->visits[v].move;
		counts[nv] = r->visits[v].count;
		nv++;
	}
	*value = record_value_target(r, i, to_move, 0, 1, false);
	return nv;
}

int record_reply_targets(const game_record *r, int i, int16_t *moves, uint16_t *counts)
{
	if (i + 1 >= r->n_moves)
		return 0;
	float unused;
	int n = record_position_targets(r, i + 1, GAME_BLACK, moves, counts, &unused);
	if (n == 0) {
		moves[0] = r->moves[i + 1];
		counts[0] = 1;
		n = 1;
	}
	return n;
}

float record_value_target(const game_record *r, int i, int to_move, float q_weight, float lambda,
			  bool cut)
{
	float g = (float)(to_move == GAME_BLACK ? r->result : -r->result);
	if (lambda < 1 || cut)
		for (int j = r->n_moves - 1; j > i; j--) {
			float q = r->root_value[j];
			if (isnan(q))
				continue;
			q = (j - i) % 2 ? -q : q;
			if (cut && r->explored[j])
				g = q;
			else if (lambda < 1)
				g = (1 - lambda) * q + lambda * g;
		}
	if (cut && r->explored[i] && !isnan(r->root_value[i]))
		g = r->root_value[i];
	if (q_weight == 0 || isnan(r->root_value[i]))
		return g;
	return (1 - q_weight) * g + q_weight * r->root_value[i];
}

int record_replay(const game_record *r, int upto, game *g)
{
	if (game_init(g, &r->params) != GAME_OK)
		return -1;
	if (upto < 0 || upto > r->n_moves)
		upto = r->n_moves;
	for (int i = 0; i < upto; i++)
		if (game_play(g, r->moves[i]) != GAME_OK)
			return -1;
	return 0;
}

int record_copy(game_record *dst, const game_record *src)
{
	record_init(dst, &src->params);
	if (record_reserve_moves(dst, src->n_moves + 1) ||
	    record_reserve_visits(dst, src->n_visits > 0 ? src->n_visits : 1)) {
		record_free(dst);
		return -1;
	}
	size_t n = (size_t)src->n_moves;
	if (n) {
		memcpy(dst->moves, src->moves, n * sizeof(*dst->moves));
		memcpy(dst->full, src->full, n * sizeof(*dst->full));
		memcpy(dst->explored, src->explored, n * sizeof(*dst->explored));
		memcpy(dst->root_value, src->root_value, n * sizeof(*dst->root_value));
	}
	if (src->visit_start)
		memcpy(dst->visit_start, src->visit_start, (n + 1) * sizeof(*dst->visit_start));
	if (src->n_visits)
		memcpy(dst->visits, src->visits, (size_t)src->n_visits * sizeof(*dst->visits));
	dst->n_moves = src->n_moves;
	dst->n_visits = src->n_visits;
	dst->result = src->result;
	dst->score = src->score;
	dst->resigned = src->resigned;
	dst->target = src->target;
	return 0;
}

/* ---- encoding ------------------------------------------------------------ */

/* A growing output buffer; `failed` latches the first allocation failure so
 * the writers need no checks of their own. */
typedef struct record_buf {
	uint8_t *data; /* malloc'd bytes */
	size_t len;    /* bytes written */
	size_t cap;    /* bytes allocated */
	bool failed;   /* an allocation failed; data is incomplete */
} record_buf;

static void buf_put(record_buf *b, const void *src, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n)
			cap *= 2;
		uint8_t *d = realloc(b->data, cap);
		if (!d) {
			b->failed = true;
			return;
		}
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, src, n);
	b->len += n;
}

static void buf_u8(record_buf *b, unsigned v)
{
	uint8_t c = (uint8_t)v;
	buf_put(b, &c, 1);
}

static void buf_varint(record_buf *b, uint32_t v)
{
	uint8_t tmp[5];
	size_t n = 0;
	do {
		tmp[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	buf_put(b, tmp, n);
}

static uint32_t zigzag(int32_t v)
{
	return ((uint32_t)v << 1) ^ (uint32_t)(v >> 31);
}

static int32_t unzigzag(uint32_t v)
{
	return (int32_t)(v >> 1) ^ -(int32_t)(v & 1);
}

static void buf_u32le(record_buf *b, uint32_t v)
{
	uint8_t t[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
	buf_put(b, t, 4);
}

static void buf_f64le(record_buf *b, double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof(u));
	uint8_t t[8];
	for (int i = 0; i < 8; i++)
		t[i] = (uint8_t)(u >> (8 * i));
	buf_put(b, t, 8);
}

static int8_t record_quantise_value(float v)
{
	if (isnan(v))
		return RECORD_VALUE_UNKNOWN;
	if (v > 1.0f)
		v = 1.0f;
	if (v < -1.0f)
		v = -1.0f;
	return (int8_t)lrintf(v * 127.0f);
}

int record_encode(const game_record *r, uint8_t **blob, size_t *len)
{
	*blob = NULL;
	*len = 0;
	const game_desc *d = game_desc_by_kind(r->params.kind);
	if (!d)
		return -1;
	/* A game without a size or komi choice ignores them: write its own. */
	game_params canon = r->params;
	if (!d->has_size)
		canon.size = d->defaults.size;
	if (!d->has_komi)
		canon.komi = d->defaults.komi;
	const game_params *p = &canon;
	double komi2 = p->komi * 2;
	if (p->size < 0 || p->size > 255 ||
	    komi2 != floor(komi2) || fabs(komi2) > 1e6 || r->result < -1 || r->result > 1 ||
	    r->resigned < -1 || r->resigned > 1 || r->n_moves < 0 || r->n_moves > RECORD_MAX_MOVES ||
	    (r->target != RECORD_TARGET_VISITS && r->target != RECORD_TARGET_IMPROVED))
		return -1;
	record_buf b = { 0 };
	buf_put(&b, RECORD_MAGIC, 4);
	buf_u8(&b, RECORD_VERSION);
	buf_u8(&b, (unsigned)p->kind);
	buf_u8(&b, (unsigned)p->size);
	buf_varint(&b, zigzag((int32_t)komi2));
	buf_u8(&b, (unsigned)(r->result + 1));
	buf_u8(&b, (unsigned)(r->resigned + 1));
	buf_f64le(&b, r->score);
	buf_u8(&b, (unsigned)r->target);
	buf_varint(&b, (uint32_t)r->n_moves);
	for (int i = 0; i < r->n_moves; i++)
		buf_varint(&b, (uint32_t)r->moves[i]);
	for (int i = 0; i < r->n_moves; i += 8) {
		unsigned bits = 0;
		for (int k = 0; k < 8 && i + k < r->n_moves; k++)
			bits |= (r->full[i + k] ? 1u : 0u) << k;
		buf_u8(&b, bits);
	}
	for (int i = 0; i < r->n_moves; i += 8) {
		unsigned bits = 0;
		for (int k = 0; k < 8 && i + k < r->n_moves; k++)
			bits |= (r->explored[i + k] ? 1u : 0u) << k;
		buf_u8(&b, bits);
	}
	for (int i = 0; i < r->n_moves; i++)
		buf_u8(&b, (uint8_t)record_quantise_value(r->root_value[i]));
	for (int i = 0; i < r->n_moves; i++) {
		int lo = r->visit_start[i], hi = r->visit_start[i + 1];
		buf_varint(&b, (uint32_t)(hi - lo));
		int prev = -1;
		for (int k = lo; k < hi; k++) {
			buf_varint(&b, (uint32_t)(r->visits[k].move - prev - 1));
			buf_varint(&b, r->visits[k].count);
			prev = r->visits[k].move;
		}
	}
	uint32_t crc = (uint32_t)crc32(0L, b.data, (uInt)b.len);
	buf_u32le(&b, crc);
	if (b.failed) {
		free(b.data);
		return -1;
	}
	*blob = b.data;
	*len = b.len;
	return 0;
}

/* ---- decoding ------------------------------------------------------------ */

/* A bounded reader over the blob; every read checks the end. */
typedef struct record_reader {
	const uint8_t *p; /* next byte */
	const uint8_t *end; /* one past the last byte to read (before the CRC) */
	const uint8_t *start; /* the blob, for offsets in messages */
} record_reader;

static bool rd_u8(record_reader *r, unsigned *v)
{
	if (r->p >= r->end)
		return false;
	*v = *r->p++;
	return true;
}

/* Unsigned LEB128 of at most 5 bytes that fits 32 bits. */
static bool rd_varint(record_reader *r, uint32_t *v)
{
	uint32_t x = 0;
	for (int shift = 0; shift < 35; shift += 7) {
		if (r->p >= r->end)
			return false;
		uint8_t c = *r->p++;
		if (shift == 28 && (c & 0xf0))
			return false; /* over 32 bits, or a sixth byte */
		x |= (uint32_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*v = x;
			return true;
		}
	}
	return false;
}

static bool rd_f64le(record_reader *r, double *d)
{
	if (r->end - r->p < 8)
		return false;
	uint64_t u = 0;
	for (int i = 0; i < 8; i++)
		u |= (uint64_t)r->p[i] << (8 * i);
	r->p += 8;
	memcpy(d, &u, sizeof(*d));
	return true;
}

static void record_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void record_err(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	int n = snprintf(err, errlen, "record: ");
	if (n < 0 || (size_t)n >= errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
}

/* Reads past one field; on failure says where the data ran out. */
#define RD(call, what)                                                                     \
	do {                                                                               \
		if (!(call)) {                                                             \
			record_err(err, errlen, "bad or truncated %s at byte %ld", what,   \
				   (long)(rd.p - rd.start));                               \
			goto out;                                                          \
		}                                                                          \
	} while (0)

int record_decode(const uint8_t *blob, size_t len, game_record *out, char *err, size_t errlen)
{
	record_init(out, &game_descs[0]->defaults);
	if (err && errlen)
		err[0] = '\0';
	int rc = -1;
	game *g = NULL;
	record_reader rd = { blob, blob, blob };

	if (!blob || len < RECORD_HEADER + 4) {
		record_err(err, errlen, "blob of %zu bytes is too short to be a game record", len);
		goto out;
	}
	if (memcmp(blob, RECORD_MAGIC, 4) != 0) {
		record_err(err, errlen, "bad magic (not a sente game record)");
		goto out;
	}
	unsigned version = blob[4];
	if (version < 1 || version > RECORD_VERSION) {
		if (version > RECORD_VERSION)
			record_err(err, errlen, "version %u is newer than this sente reads (%d); upgrade sente",
				   version, RECORD_VERSION);
		else
			record_err(err, errlen, "unknown version %u", version);
		goto out;
	}
	size_t body = len - 4;
	uint32_t want = (uint32_t)blob[body] | (uint32_t)blob[body + 1] << 8 |
			(uint32_t)blob[body + 2] << 16 | (uint32_t)blob[body + 3] << 24;
	if ((uint32_t)crc32(0L, blob, (uInt)body) != want) {
		record_err(err, errlen, "checksum mismatch (the record is corrupt or truncated)");
		goto out;
	}
	/* Past the checksum the fields are still checked one by one: a blob
	 * can be crafted with a valid CRC, and it must not crash us either. */
	rd.p = blob + 5;
	rd.end = blob + body;

	unsigned kind, size, res, resg;
	uint32_t u;
	game_params p;
	RD(rd_u8(&rd, &kind), "game kind");
	RD(rd_u8(&rd, &size), "board size");
	RD(rd_varint(&rd, &u), "komi");
	const game_desc *d = game_desc_by_kind((int)kind);
	if (!d) {
		record_err(err, errlen, "unknown game kind %u", kind);
		goto out;
	}
	p.kind = (game_kind)kind;
	p.size = (int)size;
	p.komi = unzigzag(u) / 2.0;
	g = malloc(sizeof(*g));
	if (!g) {
		record_err(err, errlen, "out of memory");
		goto out;
	}
	if (game_init(g, &p) != GAME_OK || (!d->has_size && p.size != d->defaults.size) ||
	    (!d->has_komi && p.komi != d->defaults.komi)) {
		record_err(err, errlen, "bad game parameters (%s, size %d, komi %.1f)",
			   game_kind_name(p.kind), p.size, p.komi);
		goto out;
	}
	out->params = p;
	RD(rd_u8(&rd, &res), "result");
	RD(rd_u8(&rd, &resg), "resignation");
	RD(rd_f64le(&rd, &out->score), "score");
	if (res > 2 || resg > 2 || !isfinite(out->score)) {
		record_err(err, errlen, "result, resignation or score out of range");
		goto out;
	}
	out->result = (int)res - 1;
	out->resigned = (int)resg - 1;
	out->target = RECORD_TARGET_VISITS;
	if (version >= 2) {
		unsigned target;
		RD(rd_u8(&rd, &target), "target kind");
		if (target > RECORD_TARGET_IMPROVED) {
			record_err(err, errlen, "unknown policy target kind %u", target);
			goto out;
		}
		out->target = (record_target)target;
	}

	uint32_t n;
	RD(rd_varint(&rd, &n), "move count");
	/* Each move takes at least three bytes (move, value, visit count), so
	 * this bound also keeps a lying count from allocating much. */
	if (n > RECORD_MAX_MOVES || n > (uint32_t)(rd.end - rd.p) / 3) {
		record_err(err, errlen, "move count %u is impossible for a blob of %zu bytes", n, len);
		goto out;
	}
	if (record_reserve_moves(out, (int)n + 1)) {
		record_err(err, errlen, "out of memory");
		goto out;
	}
	int actions = game_num_actions(g);
	for (uint32_t i = 0; i < n; i++) {
		RD(rd_varint(&rd, &u), "move");
		char text[8];
		if (u >= (uint32_t)actions || game_play(g, (int)u) != GAME_OK) {
			record_err(err, errlen, "move %u (%s) is illegal", i + 1,
				   u < (uint32_t)actions ? game_move_to_text(g, (int)u, text) : "out of range");
			goto out;
		}
		out->moves[i] = (int16_t)u;
	}
	for (uint32_t i = 0; i < n; i += 8) {
		unsigned bits;
		RD(rd_u8(&rd, &bits), "full-search flags");
		for (uint32_t k = 0; k < 8 && i + k < n; k++)
			out->full[i + k] = (bits >> k) & 1;
	}
	for (uint32_t i = 0; i < n; i += 8) {
		unsigned bits = 0;
		if (version >= 3)
			RD(rd_u8(&rd, &bits), "exploring-move flags");
		for (uint32_t k = 0; k < 8 && i + k < n; k++)
			out->explored[i + k] = (bits >> k) & 1;
	}
	for (uint32_t i = 0; i < n; i++) {
		unsigned q;
		RD(rd_u8(&rd, &q), "root value");
		int8_t s = (int8_t)(uint8_t)q;
		out->root_value[i] = s == RECORD_VALUE_UNKNOWN ? NAN : s / 127.0f;
	}
	out->visit_start[0] = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t nv;
		RD(rd_varint(&rd, &nv), "visit count");
		/* Two bytes at least per entry: the same guard against lies. */
		if (nv > (uint32_t)actions || nv > (uint32_t)(rd.end - rd.p) / 2) {
			record_err(err, errlen, "move %u: %u visit entries is impossible", i + 1, nv);
			goto out;
		}
		if (record_reserve_visits(out, out->n_visits + (int)nv)) {
			record_err(err, errlen, "out of memory");
			goto out;
		}
		int64_t prev = -1;
		for (uint32_t k = 0; k < nv; k++) {
			uint32_t delta, count;
			RD(rd_varint(&rd, &delta), "visit move");
			RD(rd_varint(&rd, &count), "visit count");
			int64_t m = prev + 1 + delta;
			if (m >= actions || count > UINT16_MAX) {
				record_err(err, errlen, "move %u: visit entry out of range", i + 1);
				goto out;
			}
			out->visits[out->n_visits++] = (record_visit){ (int16_t)m, (uint16_t)count };
			prev = m;
		}
		out->visit_start[i + 1] = out->n_visits;
	}
	if (rd.p != rd.end) {
		record_err(err, errlen, "%ld bytes left over after the last field", (long)(rd.end - rd.p));
		goto out;
	}
	out->n_moves = (int)n;
	rc = 0;
out:
	free(g);
	if (rc)
		record_free(out);
	return rc;
}
