/* Schema 5 of the store: a model's compute, written with its row, and the
 * evaluations of `sente eval`; a schema-4 database upgrades keeping every
 * row. */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/store.h"

static char dir[64], db_path[128];

static void make_dir(void)
{
	snprintf(dir, sizeof(dir), "/tmp/sente-storec-XXXXXX");
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

TestSuite(store_compute, .init = make_dir, .fini = remove_dir);

static int take_value(void *ctx, int64_t step, double t, double value)
{
	*(double *)ctx = value;
	return 0;
}

Test(store_compute, v4_database_upgrades_without_loss)
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

typedef struct seen {
	int n;
	double value;
	char method[64];
} seen;

static int on_eval(void *ctx, const store_evaluation *e)
{
	seen *s = ctx;
	s->n++;
	s->value = e->value;
	snprintf(s->method, sizeof(s->method), "%s", e->method);
	return 0;
}

Test(store_compute, evaluations_are_keyed_by_model_method_and_part)
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
	seen all = { 0 }, of_a = { 0 }, net = { 0 }, b_net = { 0 };
	cr_assert_eq(store_evaluations(s, 0, NULL, on_eval, &all), 3);
	cr_assert_eq(store_evaluations(s, a, NULL, on_eval, &of_a), 2);
	cr_assert_eq(store_evaluations(s, 0, "net", on_eval, &net), 2);
	cr_assert_eq(store_evaluations(s, b, "net", on_eval, &b_net), 0);
	/* The same key again replaces the row. */
	e[0].value = 0.4;
	cr_assert_eq(store_add_evaluations(s, e, 1), 0);
	seen again = { 0 };
	cr_assert_eq(store_evaluations(s, 0, NULL, on_eval, &again), 3);
	seen one = { 0 };
	store_evaluations(s, a, "net", on_eval, &one);
	cr_assert_eq(one.n, 2);
	cr_assert_eq(one.value, 0.4, "the new value");
	/* A model that does not exist is refused, and the batch with it. */
	store_evaluation bad[2] = {
		{ .model_id = b, .method = "x", .part = "all", .n = 1, .score = 0, .value = 0 },
		{ .model_id = 77, .method = "x", .part = "all", .n = 1, .score = 0, .value = 0 },
	};
	cr_assert_eq(store_add_evaluations(s, bad, 2), -1);
	seen x = { 0 };
	cr_assert_eq(store_evaluations(s, 0, "x", on_eval, &x), 0, "one transaction");
	store_close(s);
}
