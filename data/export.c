#include "data/export.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "engine/fileio.h"
#include "engine/game_desc.h"
#include "engine/sgf.h"

const char *export_result_text(const char *kind, int result, double score, int resigned,
			       char *buf, size_t len)
{
	if (resigned >= 0)
		snprintf(buf, len, "%c+R", resigned == GAME_BLACK ? 'W' : 'B');
	else if (result == 0)
		snprintf(buf, len, "0");
	else if (!strcmp(kind, "go") && score != 0)
		snprintf(buf, len, "%c+%g", result > 0 ? 'B' : 'W', fabs(score));
	else
		snprintf(buf, len, "%c+", result > 0 ? 'B' : 'W');
	return buf;
}

char *export_move_line(const game_record *r)
{
	game *g = malloc(sizeof(*g));
	if (!g)
		return NULL;
	if (game_init(g, &r->params) != GAME_OK) {
		free(g);
		return NULL;
	}
	size_t cap = (size_t)r->n_moves * 9 + 2, len = 0;
	char *text = malloc(cap);
	if (!text) {
		free(g);
		return NULL;
	}
	bool spaced = false;
	char mv[16];
	for (int i = 0; i < r->n_moves; i++)
		if (strlen(game_move_to_text(g, r->moves[i], mv)) > 1)
			spaced = true;
	for (int i = 0; i < r->n_moves; i++) {
		game_move_to_text(g, r->moves[i], mv);
		len += (size_t)snprintf(text + len, cap - len, "%s%s", spaced && i ? " " : "", mv);
	}
	snprintf(text + len, cap - len, "\n");
	free(g);
	return text;
}

/* One move's comment: the root value for the mover, the kind of search
 * and what it recorded. */
static void move_comment(const game_record *r, int i, char *comment, size_t len)
{
	int n = 0;
	if (!isnan(r->root_value[i]))
		n = snprintf(comment, len, "value %+.2f for the mover", r->root_value[i]);
	long visits = 0;
	for (int k = r->visit_start[i]; k < r->visit_start[i + 1]; k++)
		visits += r->visits[k].count;
	snprintf(comment + n, len - (size_t)n, "%s%s search", n ? ", " : "",
		 r->full[i] ? "full" : "fast");
	if (visits) {
		size_t m = strlen(comment);
		if (r->target == RECORD_TARGET_IMPROVED)
			snprintf(comment + m, len - m, ", Gumbel improved policy");
		else
			snprintf(comment + m, len - m, ", %ld visits", visits);
	}
}

char *export_go_sgf(const store_game_info *g, const game_record *r)
{
	sgf_record sr;
	char *text = NULL;
	sgf_record_init(&sr);
	sr.size = r->params.size;
	sr.komi = r->params.komi;
	snprintf(sr.rules, sizeof(sr.rules), "Chinese");
	if (g->model_id > 0) {
		snprintf(sr.pb, sizeof(sr.pb), "sente model %lld", (long long)g->model_id);
		snprintf(sr.pw, sizeof(sr.pw), "sente model %lld", (long long)g->model_id);
	} else {
		snprintf(sr.pb, sizeof(sr.pb), "sente (no model)");
		snprintf(sr.pw, sizeof(sr.pw), "sente (no model)");
	}
	export_result_text("go", r->result, r->score, r->resigned, sr.re, sizeof(sr.re));
	time_t sec = (time_t)g->created;
	struct tm tm;
	if (localtime_r(&sec, &tm))
		strftime(sr.dt, sizeof(sr.dt), "%Y-%m-%d", &tm);
	for (int i = 0; i < r->n_moves; i++) {
		char comment[128];
		move_comment(r, i, comment, sizeof(comment));
		if (sgf_record_add_move(&sr, i % 2 ? GO_WHITE : GO_BLACK, r->moves[i], comment))
			goto out;
	}
	char root[160];
	snprintf(root, sizeof(root), "sente self-play game %lld%s%s", (long long)g->id,
		 g->worker[0] ? ", worker " : "", g->worker);
	if (!(sr.comment = strdup(root)))
		goto out;
	text = sgf_write(&sr);
out:
	sgf_record_free(&sr);
	return text;
}

/* State of one export: where to, what happened, and the first failure. */
typedef struct export_state {
	const char *dir;
	FILE *log;
	const char *log_prefix;
	export_counts *c;
	char *err;
	size_t errlen;
	bool failed;
} export_state;

static int export_one(void *ctx, const store_game_info *g)
{
	export_state *e = ctx;
	game_record r;
	char msg[256], path[4096];
	e->c->listed++;
	if (record_decode(g->blob, g->blob_len, &r, msg, sizeof(msg))) {
		if (e->log)
			fprintf(e->log, "%sgame %lld skipped: %s\n", e->log_prefix ? e->log_prefix : "",
				(long long)g->id, msg);
		e->c->skipped++;
		return 0;
	}
	char *text = NULL;
	const game_desc *d = game_desc_from_params(&r.params);
	bool sgf = d->has_go_board;
	if (sgf) {
		snprintf(path, sizeof(path), "%s/game-%lld.sgf", e->dir, (long long)g->id);
		text = export_go_sgf(g, &r);
	} else {
		/* Named by the game's short name: game-ID.c4.txt. */
		const char *tag = d->aliases && d->aliases[0] ? d->aliases[0] : d->name;
		snprintf(path, sizeof(path), "%s/game-%lld.%s.txt", e->dir, (long long)g->id, tag);
		text = export_move_line(&r);
	}
	if (!text) {
		snprintf(e->err, e->errlen, "game %lld: out of memory", (long long)g->id);
		e->failed = true;
	} else if (fileio_write_text(path, text, e->err, e->errlen) != 0) {
		e->failed = true;
	} else if (sgf) {
		e->c->sgf++;
	} else {
		e->c->lines++;
	}
	free(text);
	record_free(&r);
	return e->failed ? 1 : 0;
}

int export_games(store *s, const char *dir, int64_t game_id, int64_t limit, FILE *log,
		 const char *log_prefix, export_counts *counts, char *err, size_t errlen)
{
	memset(counts, 0, sizeof(*counts));
	struct stat st;
	if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
		return -1;
	}
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s is not a folder", dir);
		return -1;
	}
	export_state e = { .dir = dir, .log = log, .log_prefix = log_prefix, .c = counts,
			   .err = err, .errlen = errlen };
	int n = store_list_games(s, game_id, limit, export_one, &e);
	if (e.failed)
		return -1;
	if (n < 0) {
		snprintf(err, errlen, "%s", store_errmsg(s));
		return -1;
	}
	return 0;
}
