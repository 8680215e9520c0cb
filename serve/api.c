/* api.c: the dashboard's JSON, built from the store's read-only queries,
 * and the metrics export. Every parameter is checked here before it reaches
 * a (prepared, bound) statement. */
#include "serve/serve.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/record.h"
#include "engine/game.h"

/* Most games /api/games lists, and most metric names /api/run loads. */
enum { SERVE_MAX_LIMIT = 1000, SERVE_MAX_NAMES = 512 };

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else if (*p == '<') /* safe inside a <script> of the snapshot */
			fputs("\\u003c", f);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static void json_num(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.9g", v);
	else
		fputs("null", f);
}

/* A decimal integer in [lo, hi], the whole text: true when it is one. */
static bool parse_int(const char *s, long lo, long hi, long *out)
{
	if (!s || !*s || strlen(s) > 18)
		return false;
	for (const char *p = s; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	errno = 0;
	long v = strtol(s, NULL, 10);
	if (errno || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/* Metric names are what sente writes: letters, digits, _ / . - only. */
static bool valid_name(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > 96)
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '_' || *p == '/' || *p == '.' || *p == '-'))
			return false;
	return true;
}

/* ---- one series ------------------------------------------------------------ */

typedef struct series_out {
	FILE *f;
	int n;
	int part; /* 0 step, 1 time, 2 value */
} series_out;

static int series_one(void *ctx, int64_t step, double time, double value)
{
	series_out *o = ctx;
	if (o->n++)
		fputc(',', o->f);
	if (o->part == 0)
		fprintf(o->f, "%lld", (long long)step);
	else
		json_num(o->f, o->part == 1 ? time : value);
	return 0;
}

/* {"step": [...], "time": [...], "value": [...]} of one metric. */
static int write_series(FILE *f, store *db, const char *name)
{
	static const char *const keys[] = { "step", "time", "value" };
	fputc('{', f);
	for (int part = 0; part < 3; part++) {
		series_out o = { f, 0, part };
		fprintf(f, "%s\"%s\":[", part ? "," : "", keys[part]);
		if (store_metrics(db, name, series_one, &o) < 0)
			return -1;
		fputc(']', f);
	}
	fputc('}', f);
	return 0;
}

/* ---- metric names ------------------------------------------------------------ */

typedef struct names_out {
	char (*names)[100];
	int n;
} names_out;

static int names_one(void *ctx, const char *name)
{
	names_out *o = ctx;
	if (o->n >= SERVE_MAX_NAMES)
		return 1;
	snprintf(o->names[o->n++], sizeof(o->names[0]), "%s", name);
	return 0;
}

static int write_names(FILE *f, store *db)
{
	names_out o = { calloc(SERVE_MAX_NAMES, sizeof(*o.names)), 0 };
	if (!o.names || store_metric_names(db, names_one, &o) < 0) {
		free(o.names);
		return -1;
	}
	fputs("{\"names\":[", f);
	for (int i = 0; i < o.n; i++) {
		if (i)
			fputc(',', f);
		json_str(f, o.names[i]);
	}
	fputs("]}", f);
	free(o.names);
	return 0;
}

/* ---- models ------------------------------------------------------------------ */

typedef struct list_out {
	FILE *f;
	int n;
	store *db; /* for lookups per row; may be NULL when none are made */
} list_out;

static int model_one(void *ctx, const store_model *m)
{
	list_out *o = ctx;
	fprintf(o->f, "%s{\"id\":%lld,\"file\":", o->n++ ? "," : "", (long long)m->id);
	const char *base = strrchr(m->file, '/');
	json_str(o->f, base ? base + 1 : m->file);
	fprintf(o->f, ",\"parent\":%lld,\"step\":%lld,\"created\":", (long long)m->parent_id,
		(long long)m->train_step);
	json_num(o->f, m->created);
	fputs(",\"notes\":", o->f);
	json_str(o->f, m->notes);
	fputc('}', o->f);
	return 0;
}

static int write_models(FILE *f, store *db)
{
	list_out o = { f, 0, NULL };
	fputc('[', f);
	if (store_list_models(db, model_one, &o) < 0)
		return -1;
	fputc(']', f);
	return 0;
}

/* ---- evaluations (sente eval) -------------------------------------------------- */

/* One row of the evaluations table with its model's compute (null when the
 * model has no row of it: the page then takes the metrics'). */
static int evaluation_one(void *ctx, const store_evaluation *e)
{
	list_out *o = ctx;
	fprintf(o->f, "%s{\"model\":%lld,\"method\":", o->n++ ? "," : "", (long long)e->model_id);
	json_str(o->f, e->method);
	fputs(",\"part\":", o->f);
	json_str(o->f, e->part);
	fprintf(o->f, ",\"n\":%d,\"value\":", e->n);
	json_num(o->f, e->value);
	fputs(",\"seconds\":", o->f);
	json_num(o->f, e->seconds);
	fputs(",\"compute_seconds\":", o->f);
	store_compute c;
	if (store_model_compute(o->db, e->model_id, &c) == 1) {
		json_num(o->f, c.seconds);
		fputs(",\"compute_cpu_seconds\":", o->f);
		json_num(o->f, c.cpu_seconds);
	} else {
		fputs("null,\"compute_cpu_seconds\":null", o->f);
	}
	fputc('}', o->f);
	return 0;
}

/* The evaluations of every model ([] for a store from before schema 5). */
static int write_evaluations(FILE *f, store *db, int schema)
{
	list_out o = { f, 0, db };
	fputc('[', f);
	if (schema >= 5 && store_evaluations(db, 0, NULL, evaluation_one, &o) < 0)
		return -1;
	fputc(']', f);
	return 0;
}

/* ---- games ------------------------------------------------------------------- */

static void game_fields(FILE *f, const store_game_info *g)
{
	fprintf(f, "\"id\":%lld,\"model\":%lld,\"worker\":", (long long)g->id, (long long)g->model_id);
	json_str(f, g->worker);
	fputs(",\"game\":", f);
	json_str(f, g->game);
	fprintf(f, ",\"size\":%d,\"komi\":", g->size);
	json_num(f, g->komi);
	fprintf(f, ",\"result\":%d,\"score\":", g->result);
	json_num(f, g->score);
	fprintf(f, ",\"resigned\":%d,\"length\":%d,\"positions\":%d,\"created\":", g->resigned,
		g->length, g->n_positions);
	json_num(f, g->created);
}

static int game_row(void *ctx, const store_game_info *g)
{
	list_out *o = ctx;
	fputs(o->n++ ? ",{" : "{", o->f);
	game_fields(o->f, g);
	fputc('}', o->f);
	return 0;
}

static int write_games(FILE *f, store *db, long limit)
{
	list_out o = { f, 0, NULL };
	fputc('[', f);
	if (store_list_games(db, 0, limit, game_row, &o) < 0)
		return -1;
	fputc(']', f);
	return 0;
}

typedef struct game_out {
	FILE *f;
	int found;
	char err[256];
} game_out;

/* One game with its moves (as text) and the board after each move, one
 * string per position: rows top to bottom, '.' empty, 'X' first player,
 * 'O' second. */
static int game_full(void *ctx, const store_game_info *g)
{
	game_out *o = ctx;
	game_record r;
	memset(&r, 0, sizeof(r));
	game *pos = malloc(sizeof(*pos));
	o->found = 1;
	if (!pos || record_decode(g->blob, g->blob_len, &r, o->err, sizeof(o->err)) != 0 ||
	    game_init(pos, &r.params) != GAME_OK) {
		if (!o->err[0])
			snprintf(o->err, sizeof(o->err), "game %lld cannot be replayed", (long long)g->id);
		goto out;
	}
	FILE *f = o->f;
	fputc('{', f);
	game_fields(f, g);
	int w = game_width(pos), h = game_height(pos);
	fprintf(f, ",\"width\":%d,\"height\":%d,\"moves\":[", w, h);
	char buf[16];
	for (int i = 0; i < r.n_moves; i++) {
		if (i)
			fputc(',', f);
		game *tmp = pos; /* text of the move in the position it was played in */
		json_str(f, game_move_to_text(tmp, r.moves[i], buf));
		if (game_play(pos, r.moves[i]) != GAME_OK)
			break;
	}
	fputs("],\"boards\":[", f);
	game_init(pos, &r.params);
	char *row = malloc((size_t)w * h + 1);
	for (int i = 0; row && i <= r.n_moves; i++) {
		int k = 0;
		for (int y = 0; y < h; y++)
			for (int x = 0; x < w; x++) {
				int c = game_cell(pos, x, y);
				row[k++] = c < 0 ? '.' : c == GAME_BLACK ? 'X' : 'O';
			}
		row[k] = 0;
		fprintf(f, "%s\"%s\"", i ? "," : "", row);
		if (i == r.n_moves || game_play(pos, r.moves[i]) != GAME_OK)
			break;
	}
	free(row);
	fputs("]}", f);
out:
	record_free(&r);
	free(pos);
	return 1;
}

/* ---- the whole run ------------------------------------------------------------- */

static int write_run(FILE *f, store *db)
{
	names_out o = { calloc(SERVE_MAX_NAMES, sizeof(*o.names)), 0 };
	int rc = -1;
	if (!o.names || store_metric_names(db, names_one, &o) < 0)
		goto out;
	store_stats st;
	if (store_get_stats(db, &st) != 0)
		goto out;
	fprintf(f, "{\"schema\":%d,\"games\":%lld,\"positions\":%lld,\"models_n\":%lld,"
		   "\"bytes\":%lld,\"kinds\":[",
		st.schema_version, (long long)st.games, (long long)st.positions, (long long)st.models,
		(long long)st.page_bytes);
	for (int i = 0; i < st.n_kinds; i++) {
		fprintf(f, "%s{\"game\":", i ? "," : "");
		json_str(f, st.kinds[i].game);
		fprintf(f, ",\"size\":%d,\"games\":%lld,\"moves\":%lld,\"black_wins\":%lld,"
			   "\"white_wins\":%lld,\"draws\":%lld,\"resignations\":%lld}",
			st.kinds[i].size, (long long)st.kinds[i].games, (long long)st.kinds[i].moves,
			(long long)st.kinds[i].black_wins, (long long)st.kinds[i].white_wins,
			(long long)st.kinds[i].draws, (long long)st.kinds[i].resignations);
	}
	fputs("],\"metrics\":{", f);
	for (int i = 0; i < o.n; i++) {
		if (i)
			fputc(',', f);
		json_str(f, o.names[i]);
		fputc(':', f);
		if (write_series(f, db, o.names[i]) != 0)
			goto out;
	}
	fputs("},\"models\":", f);
	if (write_models(f, db) != 0)
		goto out;
	fputs(",\"games_recent\":", f);
	if (write_games(f, db, 10) != 0)
		goto out;
	fputs(",\"evaluations\":", f);
	if (write_evaluations(f, db, st.schema_version) != 0)
		goto out;
	/* The run's configuration, as `sente run` stored it (null before). */
	char config[8192];
	fputs(",\"config\":", f);
	if (store_get_meta(db, STORE_META_RUN_CONFIG, config, sizeof(config)) == 1)
		json_str(f, config);
	else
		fputs("null", f);
	fputc('}', f);
	rc = 0;
out:
	free(o.names);
	return rc;
}

/* ---- the dispatch ---------------------------------------------------------------- */

static void reply_error(serve_reply *r, int status, const char *msg)
{
	free(r->body);
	r->body = NULL;
	r->len = 0;
	r->file[0] = 0;
	r->status = status;
	r->type = "application/json";
	FILE *f = open_memstream(&r->body, &r->len);
	if (!f)
		return;
	fputs("{\"error\":", f);
	json_str(f, msg);
	fputs("}\n", f);
	fclose(f);
}

void serve_reply_free(serve_reply *r)
{
	if (!r)
		return;
	free(r->body);
	r->body = NULL;
	r->len = 0;
}

void serve_answer(store *db, const char *url, serve_arg_fn arg, void *ctx, serve_reply *r)
{
	memset(r, 0, sizeof(*r));
	r->status = 200;
	r->type = "application/json";
	if (!url || strlen(url) > 256) {
		reply_error(r, 414, "path too long");
		return;
	}
	if (!strcmp(url, "/") || !strcmp(url, "/index.html")) {
		r->type = "text/html; charset=utf-8";
		FILE *f = open_memstream(&r->body, &r->len);
		char err[256];
		if (!f || serve_page_write(f, NULL, err, sizeof(err)) != 0) {
			if (f)
				fclose(f);
			reply_error(r, 500, "page not written");
			return;
		}
		fclose(f);
		return;
	}
	if (!strncmp(url, "/models/", 8)) {
		long id;
		if (!parse_int(url + 8, 1, INT32_MAX, &id)) {
			reply_error(r, 400, "expected /models/ID with a model id");
			return;
		}
		if (store_model_file(db, id, r->file, sizeof(r->file)) != 0) {
			reply_error(r, 404, "no such model");
			return;
		}
		r->type = "application/octet-stream";
		return;
	}
	FILE *f = open_memstream(&r->body, &r->len);
	if (!f) {
		reply_error(r, 500, "out of memory");
		return;
	}
	int rc = 0;
	const char *msg = NULL;
	int status = 200;
	if (!strcmp(url, "/api/run")) {
		rc = write_run(f, db);
	} else if (!strcmp(url, "/api/metrics")) {
		rc = write_names(f, db);
	} else if (!strcmp(url, "/api/metric")) {
		const char *name = arg(ctx, "name");
		if (!valid_name(name))
			status = 400, msg = "expected name=METRIC (letters, digits, _ / . -)";
		else {
			fputs("{\"name\":", f);
			json_str(f, name);
			fputs(",\"series\":", f);
			rc = write_series(f, db, name);
			fputc('}', f);
		}
	} else if (!strcmp(url, "/api/models")) {
		rc = write_models(f, db);
	} else if (!strcmp(url, "/api/evaluations")) {
		store_stats st;
		rc = store_get_stats(db, &st) != 0 ? -1 : write_evaluations(f, db, st.schema_version);
	} else if (!strcmp(url, "/api/games")) {
		const char *ls = arg(ctx, "limit");
		long limit = 20;
		if (ls && !parse_int(ls, 1, SERVE_MAX_LIMIT, &limit))
			status = 400, msg = "expected limit=N with N in 1..1000";
		else
			rc = write_games(f, db, limit);
	} else if (!strcmp(url, "/api/game")) {
		long id;
		game_out o = { f, 0, "" };
		if (!parse_int(arg(ctx, "id"), 1, INT64_MAX / 2, &id))
			status = 400, msg = "expected id=N with a game id";
		else if ((rc = store_list_games(db, id, 1, game_full, &o)) >= 0 && !o.found)
			status = 404, msg = "no such game";
		else if (o.err[0])
			status = 500, msg = o.err;
	} else {
		status = 404, msg = "no such page (see /api/run, /api/metrics, /api/metric?name=, "
				    "/api/models, /api/evaluations, /api/games, /api/game?id=)";
	}
	fputc('\n', f);
	fclose(f);
	if (rc < 0)
		reply_error(r, 503, store_errmsg(db));
	else if (msg)
		reply_error(r, status, msg);
}

/* ---- export --------------------------------------------------------------------- */

typedef struct export_out {
	FILE *f;
	serve_format fmt;
} export_out;

static int export_one(void *ctx, int64_t step, double time, const char *name, double value)
{
	export_out *o = ctx;
	if (o->fmt == SERVE_FORMAT_CSV) {
		/* Names are sente's own (no comma or quote); quoted anyway. */
		fprintf(o->f, "%lld,%.3f,\"%s\",", (long long)step, time, name);
		if (isfinite(value))
			fprintf(o->f, "%.9g", value);
		fputc('\n', o->f);
	} else {
		fprintf(o->f, "{\"step\":%lld,\"time\":%.3f,\"name\":", (long long)step, time);
		json_str(o->f, name);
		fputs(",\"value\":", o->f);
		json_num(o->f, value);
		fputs("}\n", o->f);
	}
	return 0;
}

int serve_export_metrics(store *db, FILE *f, serve_format fmt, char *err, size_t errlen)
{
	export_out o = { f, fmt };
	if (fmt == SERVE_FORMAT_CSV)
		fputs("step,time,name,value\n", f);
	int n = store_metric_rows(db, export_one, &o);
	if (n < 0)
		snprintf(err, errlen, "%s", store_errmsg(db));
	else if (fflush(f) != 0 || ferror(f)) {
		snprintf(err, errlen, "write failed: %s", strerror(errno));
		return -1;
	}
	return n;
}
