/* The SQLite store: create, models, games, metrics; migration from an
 * empty, a version-1 and a version-3 database; refusal of newer, foreign and garbage
 * files; corrupt rows skipped; the replay window; four processes writing
 * at once; `sente db` driven through $SENTE_BIN; schema 5 (a model's compute,
 * the evaluations of `sente eval`) and the upgrade of a version-4 database. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "data/export.h"
#include "data/store.h"
#include "engine/sgf.h"

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A fresh folder per test: tests run in parallel processes. */
static char dir[64], db_path[128];

static void make_dir(void)
{
	snprintf(dir, sizeof(dir), "/tmp/sente-store-XXXXXX");
	cr_assert(mkdtemp(dir), "mkdtemp");
	snprintf(db_path, sizeof(db_path), "%s/sente.db", dir);
}

static void remove_dir(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

TestSuite(store, .init = make_dir, .fini = remove_dir);

/* A random game; `full` moves (at most) are marked full searches with a
 * few visit entries, so its n_positions is known. */
static void random_game(game_record *r, game_kind kind, uint64_t *rng, int full)
{
	game_params p = game_params_default(kind);
	if (kind == GAME_KIND_GO)
		p.size = 9;
	game *g = malloc(sizeof(*g));
	cr_assert_eq(game_init(g, &p), GAME_OK);
	record_init(r, &p);
	int legal[GAME_MAX_ACTIONS];
	while (!game_is_over(g) && r->n_moves < 120) {
		int n = game_legal_moves(g, legal);
		int mv = legal[xs(rng) % (uint64_t)n];
		bool is_full = r->n_moves < full;
		record_visit v[3];
		int nv = 0;
		if (is_full)
			for (int k = 0; k < n && k < 3; k++)
				v[nv++] = (record_visit){ (int16_t)legal[k], (uint16_t)(1 + xs(rng) % 500) };
		cr_assert_eq(record_add_move(r, mv, is_full, 0.5f, v, nv), 0);
		cr_assert_eq(game_play(g, mv), GAME_OK);
	}
	record_set_outcome(r, g);
	free(g);
}

/* Runs SQL on the file directly, bypassing the store. */
static void raw_sql(const char *path, const char *sql)
{
	sqlite3 *db;
	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	char *msg = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
	cr_assert_eq(rc, SQLITE_OK, "%s: %s", sql, msg ? msg : "");
	sqlite3_close(db);
}

/* What the read-back callback expects and saw. */
typedef struct seen {
	int n;               /* games delivered */
	game_record *want;   /* [4] the records stored, oldest first */
	int64_t *want_ids;   /* [4] their ids */
} seen;

static int seen_fn(void *ctx, int64_t game_id, const game_record *got)
{
	seen *sn = ctx;
	int k = 3 - sn->n++;
	cr_assert_eq(game_id, sn->want_ids[k]);
	cr_assert_eq(got->n_moves, sn->want[k].n_moves);
	cr_assert_eq(memcmp(got->moves, sn->want[k].moves, (size_t)got->n_moves * 2), 0);
	cr_assert_eq(got->n_visits, sn->want[k].n_visits);
	cr_assert_eq(got->result, sn->want[k].result);
	cr_assert_eq(got->score, sn->want[k].score);
	return 0;
}

/* Metric values as store_metrics delivers them. */
typedef struct mseen {
	int n;            /* values seen */
	int64_t step[4];  /* their steps */
	double value[4];  /* and values */
} mseen;

static int mseen_fn(void *ctx, int64_t st, double t, double v)
{
	mseen *m = ctx;
	cr_assert(t > 1.6e9, "a Unix time");
	m->step[m->n] = st;
	m->value[m->n++] = v;
	return 0;
}

Test(store, create_models_games_metrics)
{
	char err[512];
	store *s = store_open(db_path, err, sizeof(err));
	cr_assert(s, "%s", err);
	cr_assert_eq(store_schema_version(s), STORE_SCHEMA_VERSION);

	int64_t id = 0, a, b, step;
	char file[256];
	cr_assert_eq(store_latest_model(s, &id, file, sizeof(file), &step), 0, "no model yet");
	cr_assert_eq(store_add_model(s, "models/a.sente", 0, 0, NULL, &a), 0, "%s", store_errmsg(s));
	cr_assert_eq(store_add_model(s, "models/b.sente", a, 1000, "from a", &b), 0, "%s", store_errmsg(s));
	cr_assert_eq(store_latest_model(s, &id, file, sizeof(file), &step), 1);
	cr_assert_eq(id, b);
	cr_assert_str_eq(file, "models/b.sente");
	cr_assert_eq(step, 1000);
	cr_assert_eq(store_model_file(s, a, file, sizeof(file)), 0);
	cr_assert_str_eq(file, "models/a.sente");
	cr_assert_eq(store_model_file(s, 999, file, sizeof(file)), -1);
	cr_assert(strstr(store_errmsg(s), "no model with id 999"), "%s", store_errmsg(s));
	cr_assert_eq(store_add_model(s, "x", 999, 0, NULL, NULL), -1, "parent must exist");

	uint64_t rng = 3;
	game_record r[4];
	int64_t gid[4];
	for (int i = 0; i < 4; i++) {
		random_game(&r[i], i % 2 ? GAME_KIND_GO : GAME_KIND_CONNECT4, &rng, 5 + i);
		cr_assert_eq(store_add_game(s, i ? b : 0, "w1", &r[i], &gid[i]), 0, "%s", store_errmsg(s));
	}
	cr_assert_eq(store_add_game(s, 12345, "w1", &r[0], NULL), -1, "unknown model refused");
	cr_assert(strstr(store_errmsg(s), "no model with id 12345"), "%s", store_errmsg(s));
	int64_t games, positions;
	cr_assert_eq(store_count(s, &games, &positions), 0);
	cr_assert_eq(games, 4);
	cr_assert_eq(positions, 5 + 6 + 7 + 8);

	/* Read back, newest first, equal to what went in. */
	seen sn = { .want = r, .want_ids = gid };
	cr_assert_eq(store_recent_games(s, 0, 0, seen_fn, &sn, err, sizeof(err)), 4, "%s", err);
	cr_assert_str_eq(err, "");

	/* Metrics, one and several per step, back in step order. */
	const char *names[2] = { "loss", "lr" };
	double vals[2] = { 2.0, 0.1 };
	cr_assert_eq(store_add_metric(s, 20, "loss", 1.0), 0);
	cr_assert_eq(store_add_metrics(s, 10, names, vals, 2), 0);
	cr_assert_eq(store_add_metric(s, 30, "loss", 0.5), 0);
	mseen m = { 0 };
	cr_assert_eq(store_metrics(s, "loss", mseen_fn, &m), 3);
	cr_assert_eq(m.step[0], 10);
	cr_assert_eq(m.value[0], 2.0);
	cr_assert_eq(m.step[1], 20);
	cr_assert_eq(m.step[2], 30);
	cr_assert_eq(m.value[2], 0.5);

	store_stats st;
	cr_assert_eq(store_get_stats(s, &st), 0);
	cr_assert_eq(st.models, 2);
	cr_assert_eq(st.games, 4);
	cr_assert_eq(st.metrics, 4);
	cr_assert_eq(st.n_kinds, 2);
	cr_assert_str_eq(st.kinds[0].game, "connect4");
	cr_assert_str_eq(st.kinds[1].game, "go");
	cr_assert_eq(st.kinds[1].size, 9);
	char ok[64];
	cr_assert_eq(store_integrity_check(s, ok, sizeof(ok)), 0);
	cr_assert_str_eq(ok, "ok");
	store_close(s);
	store_close(NULL);

	/* Reopening finds it all, in WAL mode. */
	s = store_open(db_path, err, sizeof(err));
	cr_assert(s, "%s", err);
	cr_assert_eq(store_count(s, &games, NULL), 0);
	cr_assert_eq(games, 4);
	cr_assert_eq(store_vacuum(s), 0, "%s", store_errmsg(s));
	store_close(s);
	for (int i = 0; i < 4; i++)
		record_free(&r[i]);
}

Test(store, missing_file_is_not_created_without_the_flag)
{
	char err[512];
	store *s = store_open_ex(db_path, 0, err, sizeof(err));
	cr_assert_null(s);
	cr_assert(strstr(err, "No such file"), "%s", err);
	cr_assert_neq(access(db_path, F_OK), 0, "the file was created");
}

/* Rows as schema 1 stored them: model 5, game 9 of model 5 (g), metric
 * "loss" = 0.5 at step 3. */
static void insert_v1_rows(sqlite3 *db, const game_record *g)
{
	uint8_t *blob;
	size_t len;
	cr_assert_eq(record_encode(g, &blob, &len), 0);
	cr_assert_eq(sqlite3_exec(db, "INSERT INTO models (id, file, parent_id, train_step, created, notes) "
				  "VALUES (5, 'm5.sente', NULL, 1200, 1.7e9, 'v1 model');"
				  "INSERT INTO metrics (step, time, name, value) VALUES (3, 1.7e9, 'loss', 0.5)",
				  NULL, NULL, NULL), SQLITE_OK);
	sqlite3_stmt *st;
	cr_assert_eq(sqlite3_prepare_v2(db, "INSERT INTO games (id, model_id, worker, game, size, komi, "
					"result, score, resigned, length, n_positions, created, record) "
					"VALUES (9, 5, 'v1-worker', 'go', ?1, ?2, ?3, ?4, ?5, ?6, ?7, "
					"1.7e9, ?8)", -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_int(st, 1, g->params.size);
	sqlite3_bind_double(st, 2, g->params.komi);
	sqlite3_bind_int(st, 3, g->result);
	sqlite3_bind_double(st, 4, g->score);
	sqlite3_bind_int(st, 5, g->resigned);
	sqlite3_bind_int(st, 6, g->n_moves);
	sqlite3_bind_int(st, 7, record_full_count(g));
	sqlite3_bind_blob(st, 8, blob, (int)len, SQLITE_TRANSIENT);
	cr_assert_eq(sqlite3_step(st), SQLITE_DONE, "%s", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	free(blob);
}

static int v1_model_fn(void *ctx, const store_model *m)
{
	cr_assert_eq(m->id, 5);
	cr_assert_str_eq(m->file, "m5.sente");
	cr_assert_eq(m->parent_id, 0);
	cr_assert_eq(m->train_step, 1200);
	cr_assert_str_eq(m->notes, "v1 model");
	(*(int *)ctx)++;
	return 0;
}

static int v1_game_fn(void *ctx, const store_game_info *g)
{
	const game_record *want = ((const game_record **)ctx)[0];
	cr_assert_eq(g->id, 9);
	cr_assert_eq(g->model_id, 5);
	cr_assert_str_eq(g->worker, "v1-worker");
	cr_assert_str_eq(g->game, "go");
	cr_assert_eq(g->size, want->params.size);
	cr_assert_eq(g->result, want->result);
	cr_assert_eq(g->length, want->n_moves);
	cr_assert_eq(g->n_positions, record_full_count(want));
	game_record got;
	char err[256];
	cr_assert_eq(record_decode(g->blob, g->blob_len, &got, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(got.n_moves, want->n_moves);
	cr_assert_eq(memcmp(got.moves, want->moves, (size_t)got.n_moves * 2), 0);
	record_free(&got);
	((const game_record **)ctx)[1] = want; /* seen */
	return 0;
}

/* The rows of insert_v1_rows, read through the migrated store. */
static void check_v1_rows(store *s, const game_record *g)
{
	int models = 0;
	cr_assert_eq(store_list_models(s, v1_model_fn, &models), 1, "%s", store_errmsg(s));
	const game_record *ctx[2] = { g, NULL };
	cr_assert_eq(store_list_games(s, 9, 0, v1_game_fn, ctx), 1, "%s", store_errmsg(s));
	cr_assert(ctx[1], "game 9 was delivered");
	int64_t games, positions;
	cr_assert_eq(store_count(s, &games, &positions), 0);
	cr_assert_eq(games, 1);
	cr_assert_eq(positions, record_full_count(g));
	mseen m = { 0 };
	cr_assert_eq(store_metrics(s, "loss", mseen_fn, &m), 1, "%s", store_errmsg(s));
	cr_assert_eq(m.step[0], 3);
	cr_assert_eq(m.value[0], 0.5);
}

Test(store, migrates_empty_and_v1_databases)
{
	char err[512];
	/* An empty SQLite file (no tables): version 0. */
	raw_sql(db_path, "PRAGMA user_version = 0");
	store *s = store_open(db_path, err, sizeof(err));
	cr_assert(s, "%s", err);
	cr_assert_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
	store_close(s);

	/* A database left at version 1 with a game in it gains the arena's
	 * tables and keeps its data. */
	char v1[160];
	snprintf(v1, sizeof(v1), "%s/v1.db", dir);
	sqlite3 *db;
	cr_assert_eq(sqlite3_open(v1, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, store_migrations[0], NULL, NULL, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, "INSERT INTO meta VALUES ('schema_version', 1)", NULL, NULL, NULL),
		     SQLITE_OK);
	/* Its rows, written as version 1 did: a model, a Go game and a metric. */
	uint64_t old_rng = 77;
	game_record old;
	random_game(&old, GAME_KIND_GO, &old_rng, 6);
	insert_v1_rows(db, &old);
	sqlite3_close(db);
	s = store_open(v1, err, sizeof(err));
	cr_assert(s, "%s", err);
	check_v1_rows(s, &old);
	record_free(&old);
	uint64_t rng = 8;
	game_record r;
	random_game(&r, GAME_KIND_CONNECT4, &rng, 3);
	cr_assert_eq(store_add_game(s, 0, NULL, &r, NULL), 0, "%s", store_errmsg(s));
	record_free(&r);
	cr_assert_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
	store_close(s);
	cr_assert_eq(sqlite3_open(v1, &db), SQLITE_OK);
	sqlite3_stmt *st;
	cr_assert_eq(sqlite3_prepare_v2(db, "SELECT (SELECT value FROM meta WHERE key = 'schema_version'), "
					"(SELECT count(*) FROM matches), (SELECT count(*) FROM match_games)",
					-1, &st, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
	cr_assert_eq(sqlite3_column_int(st, 0), STORE_SCHEMA_VERSION);
	sqlite3_finalize(st);
	sqlite3_close(db);
}

/* A database of schema 3, whose games table CHECKed the game's name
 * against 'go' and 'connect4', opens: the table is rebuilt without the
 * CHECK and every row keeps its id, model, columns and record. */
Test(store, migrates_v3_games_without_game_names)
{
	char err[512];
	sqlite3 *db;
	cr_assert_eq(sqlite3_open(db_path, &db), SQLITE_OK);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(sqlite3_exec(db, store_migrations[i], NULL, NULL, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, "INSERT INTO meta VALUES ('schema_version', 3);"
				  "INSERT INTO models (id, file, created) VALUES (5, 'm5.sente', 1.7e9)",
				  NULL, NULL, NULL), SQLITE_OK);
	sqlite3_stmt *st;
	cr_assert_eq(sqlite3_prepare_v2(db, "INSERT INTO games (id, model_id, worker, game, size, komi, "
					"result, score, resigned, length, n_positions, created, record) "
					"VALUES (?1, ?2, 'old', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 1.7e9, ?11)",
					-1, &st, NULL), SQLITE_OK);
	game_record want[4];
	int64_t ids[4] = { 3, 7, 8, 12 }, positions = 0;
	uint64_t rng = 21;
	for (int i = 0; i < 4; i++) {
		random_game(&want[i], i % 2 ? GAME_KIND_CONNECT4 : GAME_KIND_GO, &rng, 4 + i);
		uint8_t *blob;
		size_t len;
		cr_assert_eq(record_encode(&want[i], &blob, &len), 0);
		const game_params *p = &want[i].params;
		sqlite3_bind_int64(st, 1, ids[i]);
		if (i < 2)
			sqlite3_bind_int64(st, 2, 5);
		else
			sqlite3_bind_null(st, 2);
		sqlite3_bind_text(st, 3, p->kind == GAME_KIND_GO ? "go" : "connect4", -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 4, p->kind == GAME_KIND_GO ? p->size : 7);
		sqlite3_bind_double(st, 5, p->kind == GAME_KIND_GO ? p->komi : 0);
		sqlite3_bind_int(st, 6, want[i].result);
		sqlite3_bind_double(st, 7, want[i].score);
		sqlite3_bind_int(st, 8, want[i].resigned);
		sqlite3_bind_int(st, 9, want[i].n_moves);
		sqlite3_bind_int(st, 10, record_full_count(&want[i]));
		sqlite3_bind_blob(st, 11, blob, (int)len, SQLITE_TRANSIENT);
		cr_assert_eq(sqlite3_step(st), SQLITE_DONE, "%s", sqlite3_errmsg(db));
		sqlite3_reset(st);
		free(blob);
		positions += record_full_count(&want[i]);
	}
	sqlite3_finalize(st);
	/* The old schema refuses a game it does not name. */
	cr_assert_neq(sqlite3_exec(db, "INSERT INTO games (game, size, komi, result, score, length, "
				   "n_positions, created, record) VALUES ('othello', 8, 0, 0, 0, 0, 0, 0, x'')",
				   NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);

	store *s = store_open(db_path, err, sizeof(err));
	cr_assert(s, "%s", err);
	cr_assert_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
	int64_t games, pos;
	cr_assert_eq(store_count(s, &games, &pos), 0);
	cr_assert_eq(games, 4);
	cr_assert_eq(pos, positions);
	seen sn = { 0, want, ids };
	cr_assert_eq(store_recent_games(s, 0, 0, seen_fn, &sn, err, sizeof(err)), 4, "%s", err);
	cr_assert_eq(store_last_skipped(s), 0);
	int64_t id;
	cr_assert_eq(store_add_game(s, 5, "new", &want[0], &id), 0, "%s", store_errmsg(s));
	cr_assert_eq(id, 13, "ids go on from the old rows");
	store_close(s);
	for (int i = 0; i < 4; i++)
		record_free(&want[i]);

	/* Same columns and index, model ids kept, no game named. */
	cr_assert_eq(sqlite3_open(db_path, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(db, "SELECT (SELECT sql FROM sqlite_master WHERE name = 'games'), "
					"(SELECT count(*) FROM sqlite_master WHERE name = 'games_model'), "
					"(SELECT count(*) FROM games WHERE model_id = 5), "
					"(SELECT group_concat(game) FROM games WHERE worker = 'old')",
					-1, &st, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
	const char *sql = (const char *)sqlite3_column_text(st, 0);
	cr_assert(sql && !strstr(sql, "connect4") && strstr(sql, "record BLOB NOT NULL"), "%s", sql);
	cr_assert_eq(sqlite3_column_int(st, 1), 1);
	cr_assert_eq(sqlite3_column_int(st, 2), 3);
	cr_assert_str_eq((const char *)sqlite3_column_text(st, 3), "go,connect4,go,connect4");
	sqlite3_finalize(st);
	sqlite3_close(db);
}

Test(store, refuses_newer_schema)
{
	char err[512];
	store *s = store_open(db_path, err, sizeof(err));
	cr_assert(s, "%s", err);
	store_close(s);
	raw_sql(db_path, "UPDATE meta SET value = 99 WHERE key = 'schema_version'");
	s = store_open(db_path, err, sizeof(err));
	cr_assert_null(s);
	cr_assert(strstr(err, "this database was written by a newer sente (schema 99); upgrade sente"),
		  "%s", err);
}

/* Bytes 18 and 19 of an SQLite header: 1 legacy journal, 2 WAL. */
static int header_byte(const char *path, int at)
{
	FILE *f = fopen(path, "rb");
	cr_assert(f);
	unsigned char h[100];
	cr_assert_eq(fread(h, 1, sizeof(h), f), sizeof(h));
	fclose(f);
	return h[at];
}

Test(store, refuses_foreign_and_garbage_files)
{
	char err[512];
	raw_sql(db_path, "CREATE TABLE people (name TEXT); INSERT INTO people VALUES ('ada')");
	store *s = store_open(db_path, err, sizeof(err));
	cr_assert_null(s);
	cr_assert(strstr(err, "not a sente database"), "%s", err);
	cr_assert_eq(header_byte(db_path, 18), 1, "the foreign file was switched to WAL");

	/* meta without schema_version is not ours either. */
	char other[160];
	snprintf(other, sizeof(other), "%s/meta.db", dir);
	raw_sql(other, "CREATE TABLE meta (key TEXT, value)");
	s = store_open(other, err, sizeof(err));
	cr_assert_null(s);
	cr_assert(strstr(err, "not a sente database"), "%s", err);

	char junk[160];
	snprintf(junk, sizeof(junk), "%s/junk.db", dir);
	FILE *f = fopen(junk, "wb");
	uint64_t rng = 4;
	for (int i = 0; i < 8192; i++)
		fputc((int)(xs(&rng) & 0xff), f);
	fclose(f);
	s = store_open(junk, err, sizeof(err));
	cr_assert_null(s);
	cr_assert(strstr(err, "not a sente database (not an SQLite file)"), "%s", err);

	s = store_open(dir, err, sizeof(err));
	cr_assert_null(s, "a directory");
	cr_assert(strstr(err, "directory"), "%s", err);
}

/* Collects ids delivered by store_recent_games. */
typedef struct collect {
	int n;            /* delivered */
	int64_t ids[64];  /* in order */
	int64_t positions; /* full moves seen */
	int stop_after;   /* stop when n reaches this (0: never) */
} collect;

static int collect_fn(void *ctx, int64_t id, const game_record *r)
{
	collect *c = ctx;
	c->ids[c->n++] = id;
	c->positions += record_full_count(r);
	return c->stop_after && c->n >= c->stop_after;
}

Test(store, corrupt_rows_are_skipped_and_counted)
{
	char err[512];
	store *s = store_open(db_path, err, sizeof(err));
	cr_assert(s, "%s", err);
	uint64_t rng = 5;
	for (int i = 0; i < 6; i++) {
		game_record r;
		random_game(&r, GAME_KIND_CONNECT4, &rng, 2);
		cr_assert_eq(store_add_game(s, 0, "w", &r, NULL), 0);
		record_free(&r);
	}
	store_close(s);
	/* Row 2 truncated, row 4 with a flipped byte, row 5 not a record. */
	raw_sql(db_path, "UPDATE games SET record = substr(record, 1, length(record) - 3) WHERE id = 2;"
			 "UPDATE games SET record = substr(record, 1, 10) || X'5A' || substr(record, 12) WHERE id = 4;"
			 "UPDATE games SET record = zeroblob(30) WHERE id = 5;");
	s = store_open(db_path, err, sizeof(err));
	cr_assert(s, "%s", err);
	collect c = { 0 };
	cr_assert_eq(store_recent_games(s, 0, 0, collect_fn, &c, err, sizeof(err)), 3);
	cr_assert_eq(store_last_skipped(s), 3);
	cr_assert(strstr(err, "skipped 3 corrupt game rows (game 5: record:"), "%s", err);
	cr_assert_eq(c.ids[0], 6);
	cr_assert_eq(c.ids[1], 3);
	cr_assert_eq(c.ids[2], 1);
	store_close(s);
}

/* data/export.h directly: the files, the corrupt rows named and
 * skipped, a folder that cannot be made, and RE as SGF says it. */
Test(store, export_writes_each_game_and_names_what_it_skips)
{
	char err[512], path[256], sub[160];
	store *s = store_open(db_path, err, sizeof(err));
	cr_assert(s, "%s", err);
	uint64_t rng = 11;
	int64_t ids[3];
	for (int i = 0; i < 3; i++) {
		game_record r;
		random_game(&r, i == 1 ? GAME_KIND_GO : GAME_KIND_CONNECT4, &rng, 4);
		cr_assert_eq(store_add_game(s, 0, "w", &r, &ids[i]), 0);
		record_free(&r);
	}
	store_close(s);
	raw_sql(db_path, "UPDATE games SET record = zeroblob(30) WHERE id = 3;");
	s = store_open(db_path, err, sizeof(err));
	cr_assert(s, "%s", err);
	snprintf(sub, sizeof(sub), "%s/out", dir);
	char *log = NULL;
	size_t loglen = 0;
	FILE *lf = open_memstream(&log, &loglen);
	export_counts c;
	cr_assert_eq(export_games(s, sub, 0, 0, lf, "sente db: ", &c, err, sizeof(err)), 0, "%s", err);
	fclose(lf);
	cr_assert_eq(c.listed, 3);
	cr_assert_eq(c.sgf, 1);
	cr_assert_eq(c.lines, 1);
	cr_assert_eq(c.skipped, 1);
	cr_assert(strstr(log, "sente db: game 3 skipped"), "%s", log);
	free(log);
	snprintf(path, sizeof(path), "%s/game-%lld.sgf", sub, (long long)ids[1]);
	cr_assert_eq(access(path, F_OK), 0, "%s", path);
	snprintf(path, sizeof(path), "%s/game-%lld.c4.txt", sub, (long long)ids[0]);
	cr_assert_eq(access(path, F_OK), 0, "%s", path);
	/* One game by id, and the limit. */
	cr_assert_eq(export_games(s, sub, ids[1], 0, NULL, NULL, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert(c.listed == 1 && c.sgf == 1 && c.lines == 0);
	cr_assert_eq(export_games(s, sub, 0, 1, NULL, NULL, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert(c.listed == 1 && c.skipped == 1, "the newest is the corrupt one");
	/* Where a file stands in the way of the folder. */
	snprintf(path, sizeof(path), "%s/game-%lld.sgf", sub, (long long)ids[1]);
	cr_assert_eq(export_games(s, path, 0, 0, NULL, NULL, &c, err, sizeof(err)), -1);
	cr_assert(strstr(err, "is not a folder"), "%s", err);
	snprintf(path, sizeof(path), "%s/game-%lld.sgf/x", sub, (long long)ids[1]);
	cr_assert_eq(export_games(s, path, 0, 0, NULL, NULL, &c, err, sizeof(err)), -1);
	cr_assert(strstr(err, "cannot create"), "%s", err);
	/* A file of the export that cannot be replaced stops it, named. */
	snprintf(path, sizeof(path), "%s/game-%lld.c4.txt", sub, (long long)ids[0]);
	cr_assert_eq(remove(path), 0);
	cr_assert_eq(mkdir(path, 0777), 0);
	cr_assert_eq(export_games(s, sub, 0, 0, NULL, NULL, &c, err, sizeof(err)), -1);
	cr_assert(strstr(err, "game-1.c4.txt"), "%s", err);
	store_close(s);

	char re[16];
	cr_assert_str_eq(export_result_text("go", 1, 3.5, -1, re, sizeof(re)), "B+3.5");
	cr_assert_str_eq(export_result_text("go", -1, -7.5, -1, re, sizeof(re)), "W+7.5");
	cr_assert_str_eq(export_result_text("go", -1, 0, GAME_BLACK, re, sizeof(re)), "W+R");
	cr_assert_str_eq(export_result_text("go", 0, 0, -1, re, sizeof(re)), "0");
	cr_assert_str_eq(export_result_text("connect4", 1, 1, -1, re, sizeof(re)), "B+");
}

Test(store, window_is_newest_games_up_to_max_positions)
{
	char err[512];
	store *s = store_open(db_path, err, sizeof(err));
	cr_assert(s, "%s", err);
	uint64_t rng = 6;
	/* Ten games of exactly 4 full moves each (Connect Four lasts >= 7). */
	for (int i = 0; i < 10; i++) {
		game_record r;
		random_game(&r, GAME_KIND_CONNECT4, &rng, 4);
		cr_assert_eq(record_full_count(&r), 4);
		cr_assert_eq(store_add_game(s, 0, NULL, &r, NULL), 0);
		record_free(&r);
	}
	collect c = { 0 };
	cr_assert_eq(store_recent_games(s, 10, 0, collect_fn, &c, err, sizeof(err)), 3, "4+4 < 10 <= 12");
	cr_assert_eq(c.ids[0], 10);
	cr_assert_eq(c.ids[2], 8);
	cr_assert_eq(c.positions, 12);

	memset(&c, 0, sizeof(c));
	cr_assert_eq(store_recent_games(s, 8, 0, collect_fn, &c, err, sizeof(err)), 2, "exactly 8");

	memset(&c, 0, sizeof(c));
	cr_assert_eq(store_recent_games(s, 1000, 7, collect_fn, &c, err, sizeof(err)), 3, "ids 8, 9, 10");
	cr_assert_eq(c.ids[2], 8);

	memset(&c, 0, sizeof(c));
	cr_assert_eq(store_recent_games(s, 0, 10, collect_fn, &c, err, sizeof(err)), 0, "nothing newer");

	memset(&c, 0, sizeof(c));
	c.stop_after = 2;
	cr_assert_eq(store_recent_games(s, 0, 0, collect_fn, &c, err, sizeof(err)), 2, "the callback stops it");
	store_close(s);
}

/* Four processes open the same new database at once and each adds 50
 * games: the schema is created once, and every row arrives. */
Test(store, four_writers_at_once, .timeout = 60)
{
	pid_t pids[4];
	for (int w = 0; w < 4; w++) {
		pids[w] = fork();
		cr_assert(pids[w] >= 0);
		if (pids[w] == 0) {
			char err[512], worker[16];
			store *s = store_open(db_path, err, sizeof(err));
			if (!s) {
				fprintf(stderr, "writer %d: %s\n", w, err);
				_exit(1);
			}
			snprintf(worker, sizeof(worker), "w%d", w);
			uint64_t rng = 100 + (uint64_t)w;
			for (int i = 0; i < 50; i++) {
				game_record r;
				random_game(&r, i % 5 ? GAME_KIND_CONNECT4 : GAME_KIND_GO, &rng, 3);
				if (store_add_game(s, 0, worker, &r, NULL)) {
					fprintf(stderr, "writer %d game %d: %s\n", w, i, store_errmsg(s));
					_exit(2);
				}
				record_free(&r);
			}
			store_close(s);
			_exit(0);
		}
	}
	for (int w = 0; w < 4; w++) {
		int st;
		cr_assert_eq(waitpid(pids[w], &st, 0), pids[w]);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer %d failed (status %d)", w, st);
	}
	char err[512];
	store *s = store_open(db_path, err, sizeof(err));
	cr_assert(s, "%s", err);
	int64_t games, positions;
	cr_assert_eq(store_count(s, &games, &positions), 0);
	cr_assert_eq(games, 200);
	cr_assert_eq(positions, 600);
	cr_assert_eq(store_integrity_check(s, NULL, 0), 0, "%s", store_errmsg(s));
	store_close(s);
}

/* ---- sente db ------------------------------------------------------------- */

static char out[1 << 16];

/* Runs `sente ARGS`, returns its exit code; stdout+stderr go to out. */
static int run_sente(const char *args)
{
	const char *bin = getenv("SENTE_BIN");
	if (!bin) {
		remove_dir(); /* a skipped test does not run .fini */
		cr_skip_test("SENTE_BIN is not set (run through make test)");
	}
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", bin, args);
	FILE *f = popen(cmd, "r");
	cr_assert(f, "popen %s", cmd);
	size_t n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	int st = pclose(f);
	cr_assert(WIFEXITED(st), "%s did not exit normally", cmd);
	return WEXITSTATUS(st);
}

Test(store, cli_db)
{
	char args[512], err[512];
	cr_assert_eq(run_sente("db --help"), 0, "sente db must be wired in: %s", out);
	cr_assert(strstr(out, "export-sgf"), "%s", out);

	store *s = store_open(db_path, err, sizeof(err));
	cr_assert(s, "%s", err);
	int64_t model;
	cr_assert_eq(store_add_model(s, "models/m1.sente", 0, 500, "first", &model), 0);
	uint64_t rng = 9;
	game_record go;
	random_game(&go, GAME_KIND_GO, &rng, 10);
	int64_t go_id, c4_id;
	cr_assert_eq(store_add_game(s, model, "box-1", &go, &go_id), 0);
	game_record c4;
	random_game(&c4, GAME_KIND_CONNECT4, &rng, 5);
	cr_assert_eq(store_add_game(s, model, "box-1", &c4, &c4_id), 0);
	store_close(s);

	snprintf(args, sizeof(args), "db %s stats", db_path);
	cr_assert_eq(run_sente(args), 0, "%s", out);
	char schema[32];
	snprintf(schema, sizeof(schema), "schema        %d", STORE_SCHEMA_VERSION);
	cr_assert(strstr(out, schema), "%s", out);
	cr_assert(strstr(out, "games         2"), "%s", out);
	cr_assert(strstr(out, "go 9x9"), "%s", out);
	cr_assert(strstr(out, "models/m1.sente"), "%s", out);

	snprintf(args, sizeof(args), "db %s --json", db_path);
	cr_assert_eq(run_sente(args), 0, "%s", out);
	snprintf(schema, sizeof(schema), "\"schema\":%d,", STORE_SCHEMA_VERSION);
	cr_assert(strstr(out, schema) && strstr(out, "\"games\":2,"), "%s", out);
	cr_assert(out[0] == '{' && strchr(out, '\n') == strrchr(out, '\n'), "one JSON line: %s", out);

	snprintf(args, sizeof(args), "db %s games --limit 5", db_path);
	cr_assert_eq(run_sente(args), 0, "%s", out);
	cr_assert(strstr(out, "box-1") && strstr(out, "connect4"), "%s", out);

	snprintf(args, sizeof(args), "db %s models", db_path);
	cr_assert_eq(run_sente(args), 0, "%s", out);
	cr_assert(strstr(out, "models/m1.sente") && strstr(out, "first"), "%s", out);

	/* Export: the SGF reads back with the same moves. */
	snprintf(args, sizeof(args), "db %s export-sgf %s/sgf", db_path, dir);
	cr_assert_eq(run_sente(args), 0, "%s", out);
	char path[256];
	snprintf(path, sizeof(path), "%s/sgf/game-%lld.sgf", dir, (long long)go_id);
	sgf_record sr;
	cr_assert_eq(sgf_load_file(path, &sr, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sr.size, 9);
	cr_assert_eq(sr.n_moves, go.n_moves);
	for (int i = 0; i < go.n_moves; i++)
		cr_assert_eq(sr.moves[i].point, go.moves[i]);
	sgf_record_free(&sr);
	snprintf(path, sizeof(path), "%s/sgf/game-%lld.c4.txt", dir, (long long)c4_id);
	FILE *f = fopen(path, "r");
	cr_assert(f, "%s", path);
	char line[128] = "";
	cr_assert(fgets(line, sizeof(line), f));
	fclose(f);
	cr_assert_eq((int)strlen(line), c4.n_moves + 1, "%s", line);
	for (int i = 0; i < c4.n_moves; i++)
		cr_assert_eq(line[i], '1' + c4.moves[i]);

	snprintf(args, sizeof(args), "db %s vacuum", db_path);
	cr_assert_eq(run_sente(args), 0, "%s", out);

	/* Usage errors exit 2, before the file is looked at. */
	snprintf(args, sizeof(args), "db %s frobnicate", db_path);
	cr_assert_eq(run_sente(args), 2, "%s", out);
	cr_assert(strstr(out, "unknown subcommand 'frobnicate'"), "%s", out);
	snprintf(args, sizeof(args), "db %s games --limit x", db_path);
	cr_assert_eq(run_sente(args), 2, "%s", out);
	snprintf(args, sizeof(args), "db %s export-sgf", db_path);
	cr_assert_eq(run_sente(args), 2, "%s", out);
	cr_assert_eq(run_sente("db"), 2, "%s", out);

	/* A missing or broken database exits 1 with the reason. */
	snprintf(args, sizeof(args), "db %s/nope.db stats", dir);
	cr_assert_eq(run_sente(args), 1, "%s", out);
	cr_assert(strstr(out, "nope.db"), "%s", out);
	snprintf(path, sizeof(path), "%s/junk.db", dir);
	f = fopen(path, "w");
	fputs("this is not a database, not even close, but long enough to look at..............\n", f);
	fclose(f);
	snprintf(args, sizeof(args), "db %s stats", path);
	cr_assert_eq(run_sente(args), 1, "%s", out);
	cr_assert(strstr(out, "not a sente database"), "%s", out);
	record_free(&go);
	record_free(&c4);
}

typedef struct match_rows {
	int n;            /* rows seen */
	int game_no[8];   /* their numbers */
	int result[8];    /* and results */
	char sgf0[64];    /* the first one's SGF */
} match_rows;

static int on_match_game(void *ctx, const store_match_game *g)
{
	match_rows *m = ctx;
	if (m->n < 8) {
		m->game_no[m->n] = g->game_no;
		m->result[m->n] = g->result;
	}
	if (m->n == 0)
		snprintf(m->sgf0, sizeof(m->sgf0), "%s", g->sgf);
	m->n++;
	return 0;
}

static int count_matches(void *ctx, const store_match *m)
{
	(*(int *)ctx) += m->games;
	return 0;
}

Test(store, matches_and_their_games)
{
	char err[512];
	store *s = store_open(db_path, err, sizeof(err));
	cr_assert(s, "%s", err);
	int64_t id = 0, found = 0;
	cr_assert_eq(store_find_match(s, "model:1", "gtp:gnugo", "go 9 7", &found), 0);
	cr_assert_eq(store_add_match(s, "model:1", "gtp:gnugo", "go 9 7", &id), 0, "%s", store_errmsg(s));
	cr_assert_eq(store_find_match(s, "model:1", "gtp:gnugo", "go 9 7", &found), 1);
	cr_assert_eq(found, id);
	/* Other settings, or the players swapped, are another match. */
	cr_assert_eq(store_find_match(s, "model:1", "gtp:gnugo", "go 9 6.5", &found), 0);
	cr_assert_eq(store_find_match(s, "gtp:gnugo", "model:1", "go 9 7", &found), 0);
	store_match_game g = { .match_id = id, .game_no = 1, .black = "gtp:gnugo", .white = "model:1",
			       .a_black = 0, .result = -1, .score = -12.5, .moves = 60,
			       .reason = "score", .sgf = "(;GM[1]SZ[9])" };
	cr_assert_eq(store_add_match_game(s, &g), 0, "%s", store_errmsg(s));
	g.game_no = 0;
	g.result = 1;
	g.sgf = NULL;
	cr_assert_eq(store_add_match_game(s, &g), 0, "%s", store_errmsg(s));
	/* A game number is stored once; results are -1..1. */
	cr_assert_eq(store_add_match_game(s, &g), -1);
	cr_assert(strstr(store_errmsg(s), "already stored"), "%s", store_errmsg(s));
	g.game_no = 5;
	g.result = 2;
	cr_assert_eq(store_add_match_game(s, &g), -1);
	match_rows rows = { 0 };
	cr_assert_eq(store_match_games(s, id, on_match_game, &rows), 2);
	cr_assert_eq(rows.game_no[0], 0);
	cr_assert_eq(rows.result[0], 1);
	cr_assert_eq(rows.sgf0[0], '\0');
	cr_assert_eq(rows.game_no[1], 1);
	cr_assert_eq(rows.result[1], -1);
	int games = 0;
	cr_assert_eq(store_list_matches(s, count_matches, &games), 1);
	cr_assert_eq(games, 2);
	cr_assert_eq(store_set_match_status(s, id, "done"), 0);
	store_stats st;
	cr_assert_eq(store_get_stats(s, &st), 0);
	cr_assert_eq(st.matches, 1);
	store_close(s);
}

/* An empty file at path. */
static void touch(const char *path)
{
	FILE *f = fopen(path, "w");
	cr_assert(f, "%s", path);
	fclose(f);
}

/* models.file of row id, as stored. */
static void stored_model_file(const char *path, int64_t id, char *buf, size_t len)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(db, "SELECT file FROM models WHERE id = ?1", -1, &st, NULL),
		     SQLITE_OK);
	sqlite3_bind_int64(st, 1, id);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
	snprintf(buf, len, "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(db);
}

/* Model files are stored relative to the database's folder and returned
 * resolved against it, from any working folder; a row written relative to
 * the writer's working folder still gives its file there. */
Test(store, model_paths_are_relative_to_the_database_folder)
{
	char err[512], file[1024], abs_outside[256];
	cr_assert_eq(chdir(dir), 0);
	cr_assert_eq(mkdir("run", 0777), 0);
	cr_assert_eq(mkdir("run/models", 0777), 0);
	cr_assert_eq(mkdir("elsewhere", 0777), 0);
	touch("run/models/new.sente");
	touch("run/models/old.sente");
	touch("outside.sente");
	snprintf(abs_outside, sizeof(abs_outside), "%s/outside.sente", dir);
	store *s = store_open("run/sente.db", err, sizeof(err));
	cr_assert(s, "%s", err);
	int64_t in, outside;
	cr_assert_eq(store_add_model(s, "run/models/new.sente", 0, 0, NULL, &in), 0, "%s",
		     store_errmsg(s));
	cr_assert_eq(store_add_model(s, "outside.sente", 0, 0, NULL, &outside), 0, "%s", store_errmsg(s));
	store_close(s);
	raw_sql("run/sente.db", "INSERT INTO models (id, file, created) "
				"VALUES (100, 'run/models/old.sente', 1.7e9)");
	stored_model_file("run/sente.db", in, file, sizeof(file));
	cr_assert_str_eq(file, "models/new.sente");
	stored_model_file("run/sente.db", outside, file, sizeof(file));
	cr_assert_str_eq(file, abs_outside);

	const char *cwd[] = { ".", "elsewhere", "elsewhere" };
	const char *db[] = { "run/sente.db", "../run/sente.db", NULL }; /* NULL: absolute */
	for (int k = 0; k < 3; k++) {
		cr_assert_eq(chdir(dir), 0);
		cr_assert_eq(chdir(cwd[k]), 0);
		char db_file[256];
		if (db[k])
			snprintf(db_file, sizeof(db_file), "%s", db[k]);
		else
			snprintf(db_file, sizeof(db_file), "%s/run/sente.db", dir);
		s = store_open_ex(db_file, 0, err, sizeof(err));
		cr_assert(s, "%s", err);
		cr_assert_eq(store_model_file(s, in, file, sizeof(file)), 0);
		cr_assert_eq(access(file, F_OK), 0, "%s from %s: %s", db_file, cwd[k], file);
		cr_assert_eq(store_model_file(s, outside, file, sizeof(file)), 0);
		cr_assert_str_eq(file, abs_outside);
		if (k == 0) {
			/* The old row, from the folder it was written in. */
			cr_assert_eq(store_model_file(s, 100, file, sizeof(file)), 0);
			cr_assert_str_eq(file, "run/models/old.sente");
		}
		int64_t id;
		cr_assert_eq(store_latest_model(s, &id, file, sizeof(file), NULL), 1);
		cr_assert_eq(id, 100);
		store_close(s);
	}
}

/* Read-only opens change nothing: an empty file is refused and stays
 * empty, an older schema is refused rather than migrated; no open takes a
 * path that is not a regular file. */
Test(store, read_only_opens_write_nothing)
{
	char err[512];
	struct stat st;
	touch(db_path);
	cr_assert_null(store_open_ex(db_path, STORE_OPEN_READONLY, err, sizeof(err)));
	cr_assert(strstr(err, "not a sente database"), "%s", err);
	cr_assert_eq(stat(db_path, &st), 0);
	cr_assert_eq(st.st_size, 0, "the empty file was written");

	char v1[160];
	snprintf(v1, sizeof(v1), "%s/v1.db", dir);
	raw_sql(v1, store_migrations[0]);
	raw_sql(v1, "INSERT INTO meta VALUES ('schema_version', 1)");
	cr_assert_null(store_open_ex(v1, STORE_OPEN_READONLY, err, sizeof(err)));
	cr_assert(strstr(err, "schema 1") && strstr(err, "read-only"), "%s", err);
	store *s = store_open(v1, err, sizeof(err));
	cr_assert(s, "%s", err);
	store_close(s);
	s = store_open_ex(v1, STORE_OPEN_READONLY, err, sizeof(err));
	cr_assert(s, "once migrated: %s", err);
	cr_assert_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
	cr_assert_eq(store_add_metric(s, 1, "x", 1), -1, "a read-only store writes nothing");
	store_close(s);

	char link[160];
	snprintf(link, sizeof(link), "%s/null.db", dir);
	cr_assert_eq(symlink("/dev/null", link), 0);
	for (int flags = 0; flags < 3; flags++) {
		cr_assert_null(store_open_ex(link, flags, err, sizeof(err)));
		cr_assert(strstr(err, "not a regular file"), "%s", err);
	}
}

/* ---- schema 5: a model's compute, and the evaluations of `sente eval` ---- */

static int take_value(void *ctx, int64_t step, double t, double value)
{
	*(double *)ctx = value;
	return 0;
}

Test(store, migrates_v4_keeping_rows_and_adds_compute)
{
	sqlite3 *db;
	cr_assert_eq(sqlite3_open(db_path, &db), SQLITE_OK);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(sqlite3_exec(db, store_migrations[i], NULL, NULL, NULL), SQLITE_OK, "%d", i);
	cr_assert_eq(sqlite3_exec(db, "INSERT INTO meta VALUES ('schema_version', 4);"
				  "INSERT INTO models (id, file, train_step, created, notes) "
				  "VALUES (1, 'models/a.sente', 0, 1.7e9, 'old'), "
				  "(2, 'models/b.sente', 120, 1.7e9, 'old');"
				  "INSERT INTO metrics (step, time, name, value) VALUES (120, 1.7e9, "
				  "'selfplay_seconds', 42.5)",
				  NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
	sqlite3_close(db);

	char err[512];
	store *s = store_open(db_path, err, sizeof(err));
	cr_assert(s, "%s", err);
	cr_assert_eq(store_schema_version(s), 5);
	int64_t id, step;
	char file[256];
	cr_assert_eq(store_latest_model(s, &id, file, sizeof(file), &step), 1);
	cr_assert(id == 2 && step == 120, "models kept");
	double v = 0;
	cr_assert_eq(store_metrics(s, "selfplay_seconds", take_value, &v), 1);
	cr_assert_eq(v, 42.5, "metrics kept");
	store_compute c;
	cr_assert_eq(store_model_compute(s, 2, &c), 0, "an old model has no compute row");
	/* New models of the upgraded run record theirs. */
	store_compute want = { .seconds = 61.5, .cpu_seconds = 118.25, .evals = 123456789012LL,
			       .games = 300, .positions = 4000 };
	cr_assert_eq(store_add_model_compute(s, "models/c.sente", 2, 240, "new", &want, &id), 0, "%s",
		     store_errmsg(s));
	cr_assert_eq(id, 3);
	cr_assert_eq(store_model_compute(s, 3, &c), 1);
	cr_assert(c.seconds == want.seconds && c.cpu_seconds == want.cpu_seconds &&
		  c.evals == want.evals && c.games == want.games && c.positions == want.positions);
	/* A model that cannot be registered leaves no compute either. */
	cr_assert_eq(store_add_model_compute(s, "models/d.sente", 99, 0, NULL, &want, NULL), -1,
		     "the parent must exist");
	cr_assert_eq(store_model_compute(s, 4, &c), 0);
	store_close(s);
}

typedef struct eval_seen {
	int n;
	double value;
	char method[64];
} eval_seen;

static int on_eval(void *ctx, const store_evaluation *e)
{
	eval_seen *s = ctx;
	s->n++;
	s->value = e->value;
	snprintf(s->method, sizeof(s->method), "%s", e->method);
	return 0;
}

Test(store, evaluations_are_keyed_by_model_method_and_part)
{
	char err[512];
	store *s = store_open(db_path, err, sizeof(err));
	cr_assert(s, "%s", err);
	int64_t a, b;
	cr_assert_eq(store_add_model(s, "models/a.sente", 0, 0, NULL, &a), 0);
	cr_assert_eq(store_add_model(s, "models/b.sente", a, 10, NULL, &b), 0);
	store_evaluation e[3] = {
		{ .model_id = a, .method = "net", .part = "all", .n = 10, .score = 3, .value = 0.3 },
		{ .model_id = a, .method = "net", .part = "begin-easy", .n = 5, .score = 1, .value = 0.2 },
		{ .model_id = b, .method = "search-v200-p100", .part = "all", .n = 10, .score = 1,
		  .value = 0.1 },
	};
	cr_assert_eq(store_add_evaluations(s, e, 3), 0, "%s", store_errmsg(s));
	eval_seen all = { 0 }, of_a = { 0 }, net = { 0 }, b_net = { 0 };
	cr_assert_eq(store_evaluations(s, 0, NULL, on_eval, &all), 3);
	cr_assert_eq(store_evaluations(s, a, NULL, on_eval, &of_a), 2);
	cr_assert_eq(store_evaluations(s, 0, "net", on_eval, &net), 2);
	cr_assert_eq(store_evaluations(s, b, "net", on_eval, &b_net), 0);
	/* The same key again replaces the row. */
	e[0].value = 0.4;
	cr_assert_eq(store_add_evaluations(s, e, 1), 0);
	eval_seen again = { 0 };
	cr_assert_eq(store_evaluations(s, 0, NULL, on_eval, &again), 3);
	eval_seen one = { 0 };
	store_evaluations(s, a, "net", on_eval, &one);
	cr_assert_eq(one.n, 2);
	cr_assert_eq(one.value, 0.4, "the new value");
	/* A model that does not exist is refused, and the batch with it. */
	store_evaluation bad[2] = {
		{ .model_id = b, .method = "x", .part = "all", .n = 1, .score = 0, .value = 0 },
		{ .model_id = 77, .method = "x", .part = "all", .n = 1, .score = 0, .value = 0 },
	};
	cr_assert_eq(store_add_evaluations(s, bad, 2), -1);
	eval_seen x = { 0 };
	cr_assert_eq(store_evaluations(s, 0, "x", on_eval, &x), 0, "one transaction");
	store_close(s);
}
