/* The honest harness (loop/harness.h) on a tiny Connect Four run made by
 * the loop's phases: the compute each model records grows and leaves out
 * measurement; every model is measured, a second pass measures nothing
 * again; another precision is stored as its own method beside fp32's;
 * runs compare at equal compute; bad inputs are refused. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/store.h"
#include "engine/clock.h"
#include "loop/harness.h"
#include "loop/loop.h"
#include "loop/measure.h"
#include "nn/backend.h"
#include "nn/net.h"
#include "tests/cli/cli_util.h"
#include "tests/loop/loop_util.h"
#include "tests/no_temporary.h"

/* A tiny run of `iters` iterations in dir; measured in the run when
 * `measure`. The compute the loop counted, per iteration, into spent[]. */
static void tiny_run(const char *dir, int iters, bool measure, double *spent)
{
	char err[1024];
	loop_options o = loop_test_options(dir);
	o.measure_every = measure ? 1 : 0;
	loop *r = loop_open(&o, err, sizeof(err));
	cr_assert(r, "%s", err);
	double sum = 0;
	for (int i = 0; i < iters; i++) {
		loop_iteration it;
		cr_assert_eq(loop_selfplay(r, &it, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(loop_train(r, &it, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(loop_export(r, &it, err, sizeof(err)), 0, "%s", err);
		sum += it.selfplay_seconds + it.train_seconds;
		if (spent)
			spent[i] = sum;
		if (measure) {
			/* Slow on purpose, as a search measurement is: it must
			 * not count. */
			double t0 = clock_now();
			loop_measure(r, &it);
			while (clock_now() - t0 < 0.3)
				usleep(10000);
		}
	}
	loop_close(r);
}

static store *open_db(const char *dir)
{
	char path[512], err[256];
	snprintf(path, sizeof(path), "%s/sente.db", dir);
	store *db = store_open(path, err, sizeof(err));
	cr_assert(db, "%s", err);
	return db;
}

static harness_options small_eval(const char *dir)
{
	harness_options o = harness_options_default();
	snprintf(o.dir, sizeof(o.dir), "%s", dir);
	o.visits = 4;
	o.positions = 2;
	/* Every model: the default's spacing is over the run's compute, and an
	 * iteration of these tiny runs takes 5 ms or 5 s of CPU depending on
	 * what else the machine runs, so it may leave model 2 out.
	 * harness/spaces_the_models_over_the_compute tests the spacing. */
	o.every = 0;
	o.quiet = true;
	return o;
}

/* harness_eval(o), which must succeed, with what it prints into text. */
static void eval_logged(harness_options *o, char *text, size_t len)
{
	char err[1024];
	o->log = tmpfile();
	cr_assert(o->log);
	cr_assert_eq(harness_eval(o, err, sizeof(err)), 0, "%s", err);
	rewind(o->log);
	size_t got = fread(text, 1, len - 1, o->log);
	text[got] = 0;
	fclose(o->log);
	o->log = NULL;
}

/* Rows seen: count, and the latest `created`. */
/* The fewest positions behind a figure over all positions. */
static int fewest_all(void *ctx, const store_evaluation *e)
{
	int *few = ctx;
	if (!strcmp(e->part, "all") && (!*few || e->n < *few))
		*few = e->n;
	return 0;
}

typedef struct rows {
	int n, all;
	double created_max;
} rows;

static int count_row(void *ctx, const store_evaluation *e)
{
	rows *r = ctx;
	r->n++;
	r->all += !strcmp(e->part, "all");
	cr_assert(e->n > 0 && e->value >= 0 && e->value <= 1, "%s/%s: %d, %f", e->method, e->part,
		  e->n, e->value);
	cr_assert_float_eq(e->value, e->score / e->n, 1e-9);
	if (e->created > r->created_max)
		r->created_max = e->created;
	return 0;
}

Test(harness, compute_grows_and_leaves_out_measurement, .timeout = 240)
{
	char dir[] = "/tmp/sente-harness-XXXXXX";
	cr_assert(mkdtemp(dir));
	double spent[3];
	tiny_run(dir, 3, true, spent);
	store *db = open_db(dir);
	store_compute c, prev = { 0 };
	cr_assert_eq(store_model_compute(db, 1, &c), 1, "the first model has its compute");
	cr_assert(c.seconds == 0 && c.cpu_seconds == 0 && c.evals == 0);
	for (int id = 2; id <= 4; id++) {
		cr_assert_eq(store_model_compute(db, id, &c), 1, "model %d", id);
		/* Self-play and training of the iterations so far, and nothing
		 * else: each measurement took more than 0.3 s. */
		cr_assert(fabs(c.seconds - spent[id - 2]) < 0.05, "model %d: %.3f s counted, %.3f s of "
			  "self-play and training", id, c.seconds, spent[id - 2]);
		cr_assert(c.seconds > prev.seconds && c.cpu_seconds > prev.cpu_seconds &&
			  c.evals > prev.evals && c.games > prev.games && c.positions > prev.positions,
			  "model %d's compute grows", id);
		prev = c;
	}
	store_close(db);

	/* A resumed session goes on from the newest model's account. */
	tiny_run(dir, 1, false, NULL);
	db = open_db(dir);
	cr_assert_eq(store_model_compute(db, 5, &c), 1);
	cr_assert(c.seconds > prev.seconds && c.evals > prev.evals, "%.3f after %.3f", c.seconds,
		  prev.seconds);
	store_close(db);
	loop_test_rmdir(dir);
}

/* Every stored row, for comparing the database before and after. */
typedef struct snap {
	char method[64], part[32];
	int n;
	double score, created;
} snap;
typedef struct snaps {
	snap r[256];
	int n;
} snaps;

static int take_row(void *ctx, const store_evaluation *e)
{
	snaps *s = ctx;
	cr_assert(s->n < 256);
	snap *x = &s->r[s->n++];
	snprintf(x->method, sizeof(x->method), "%s", e->method);
	snprintf(x->part, sizeof(x->part), "%s", e->part);
	x->n = e->n;
	x->score = e->score;
	x->created = e->created;
	return 0;
}

static void take(const char *dir, int64_t model, const char *method, snaps *s)
{
	store *db = open_db(dir);
	s->n = 0;
	cr_assert_eq(store_evaluations(db, model, method, take_row, s), s->n);
	store_close(db);
}

Test(harness, measures_every_model_once_then_compares, .timeout = 240)
{
	char dir[] = "/tmp/sente-harness-XXXXXX", err[1024];
	cr_assert(mkdtemp(dir));
	tiny_run(dir, 2, false, NULL);
	harness_options o = small_eval(dir);
	snprintf(o.csv, sizeof(o.csv), "%s/eval.csv", dir);
	cr_assert_eq(harness_eval(&o, err, sizeof(err)), 0, "%s", err);
	store *db = open_db(dir);
	rows r = { 0 };
	cr_assert_eq(store_evaluations(db, 0, NULL, count_row, &r), r.n);
	/* 3 models, 2 methods, 6 sets and "all". */
	cr_assert_eq(r.all, 3 * 2, "%d rows for all positions", r.all);
	cr_assert_eq(r.n, 3 * 2 * 7, "%d rows", r.n);
	rows net = { 0 };
	store_evaluations(db, 2, "net", count_row, &net);
	cr_assert_eq(net.n, 7, "model 2 by the network alone");
	store_close(db);
	FILE *f = fopen(o.csv, "r");
	cr_assert(f, "the CSV was written");
	char line[512];
	int lines = 0;
	cr_assert(fgets(line, sizeof(line), f));
	cr_assert(strstr(line, "cpu_seconds"), "%s", line);
	while (fgets(line, sizeof(line), f))
		lines++;
	fclose(f);
	cr_assert_eq(lines, r.n, "one CSV line per figure");

	/* Again: nothing is measured twice. Meanwhile a killed `sente eval`
	 * left a temporary report, and another, alive, is writing one: the
	 * dead one's is swept, the live one's left alone. */
	char dead[64], live[64];
	snprintf(dead, sizeof(dead), "report.html.tmp.%ld.1", dead_pid());
	snprintf(live, sizeof(live), "report.html.tmp.%ld.2", (long)getpid());
	plant_file(dir, dead);
	plant_file(dir, live);
	cr_assert_eq(harness_eval(&o, err, sizeof(err)), 0, "%s", err);
	cr_assert_not(file_present(dir, dead), "a dead writer's temporary report stays");
	cr_assert(file_present(dir, live), "a live writer's temporary report was removed");
	db = open_db(dir);
	rows again = { 0 };
	store_evaluations(db, 0, NULL, count_row, &again);
	cr_assert_eq(again.n, r.n);
	cr_assert_eq(again.created_max, r.created_max, "no row was written again");
	store_close(db);

	/* A model the run does not have. */
	o.models[0] = 99;
	o.n_models = 1;
	cr_assert_eq(harness_eval(&o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "no model 99"), "%s", err);

	/* A new method (more visits) measures only that; --models a subset. */
	o.visits = 5;
	o.models[0] = 3;
	o.n_models = 1;
	cr_assert_eq(harness_eval(&o, err, sizeof(err)), 0, "%s", err);
	db = open_db(dir);
	rows v5 = { 0 }, v5_m2 = { 0 };
	store_evaluations(db, 3, "search-v5-p2", count_row, &v5);
	store_evaluations(db, 2, "search-v5-p2", count_row, &v5_m2);
	cr_assert_eq(v5.n, 7);
	cr_assert_eq(v5_m2.n, 0, "model 2 was not asked for");
	store_close(db);

	/* The default: the search on every position, as the network alone,
	 * named without a count. */
	cr_assert_eq(harness_options_default().positions, 0);
	o.positions = 0;
	cr_assert_eq(harness_eval(&o, err, sizeof(err)), 0, "%s", err);
	snaps every_pos, net3;
	take(dir, 3, "search-v5", &every_pos);
	take(dir, 3, "net", &net3);
	cr_assert_eq(every_pos.n, 7);
	cr_assert_eq(net3.n, 7);
	for (int i = 0; i < 7; i++)
		for (int j = 0; j < 7; j++)
			if (!strcmp(every_pos.r[i].part, net3.r[j].part))
				cr_assert_eq(every_pos.r[i].n, net3.r[j].n, "%s: every position",
					     net3.r[j].part);
	o.positions = 2;

	/* A model far worse than one before it is listed as a regression. */
	db = open_db(dir);
	store_evaluation worse[2] = {
		{ .model_id = 1, .method = "net", .part = "all", .n = 2000, .score = 200, .value = 0.1 },
		{ .model_id = 3, .method = "net", .part = "all", .n = 2000, .score = 1800, .value = 0.9 },
	};
	cr_assert_eq(store_add_evaluations(db, worse, 2), 0);
	store_close(db);
	o.n_models = 0;
	o.regress_minutes = 1e-9;
	char text[16384];
	eval_logged(&o, text, sizeof(text));
	cr_assert(strstr(text, "regression: model 3 net 90.0%"), "%s", text);
	cr_assert(strstr(text, "comparisons"), "%s", text);

	/* The run against itself twice under one label: the range is one
	 * value, and it is the run's value at that point. */
	char run_a[600], run_b[600], csv[600];
	snprintf(run_a, sizeof(run_a), "same=%s", dir);
	snprintf(run_b, sizeof(run_b), "same=%s", dir);
	snprintf(csv, sizeof(csv), "%s/compare.csv", dir);
	harness_compare_options co = { .runs = { run_a, run_b }, .n_runs = 2, .at = { 0 }, .n_at = 1,
				       .axis = HARNESS_AXIS_WALL, .part = "all" };
	snprintf(co.csv, sizeof(co.csv), "%s", csv);
	cr_assert_eq(harness_compare(&co, err, sizeof(err)), 0, "%s", err);
	f = fopen(csv, "r");
	cr_assert(f);
	cr_assert(fgets(line, sizeof(line), f));
	int found = 0;
	while (fgets(line, sizeof(line), f)) {
		char label[64], method[64], part[64];
		int at, runs;
		double mean, lo, hi;
		cr_assert_eq(sscanf(line, "%63[^,],%63[^,],%63[^,],%d,%d,%lf,%lf,%lf", label, method,
				    part, &at, &runs, &mean, &lo, &hi), 8, "%s", line);
		cr_assert_str_eq(label, "same");
		cr_assert_eq(runs, 2);
		cr_assert(lo == hi && fabs(mean - lo) < 1e-9, "%s", line);
		if (!strcmp(method, "net")) {
			/* At 0 minutes: the first model's error. */
			db = open_db(dir);
			rows first = { 0 };
			store_evaluations(db, 1, "net", count_row, &first);
			store_close(db);
			cr_assert_eq(first.n, 7);
			found++;
		}
	}
	fclose(f);
	cr_assert_eq(found, 1, "the network's row at 0 minutes");
	/* Under the table, each method's binomial standard error at the mean
	 * of its cells (here model 1's 10% at 0 minutes) on the fewest
	 * positions behind its figures. */
	db = open_db(dir);
	int fewest = 0;
	store_evaluations(db, 0, "net", fewest_all, &fewest);
	store_close(db);
	cr_assert(fewest > 0);
	char *out = NULL;
	size_t outlen = 0;
	co.out = open_memstream(&out, &outlen);
	co.csv[0] = 0;
	cr_assert_eq(harness_compare(&co, err, sizeof(err)), 0, "%s", err);
	fclose(co.out);
	co.out = NULL;
	char want[128];
	snprintf(want, sizeof(want), "net %.1f points (%d positions at 10.0%%)",
		 100 * sqrt(0.1 * 0.9 / fewest), fewest);
	cr_assert(strstr(out, "binomial standard error") && strstr(out, want), "want %s in:\n%s", want,
		  out);
	free(out);
	/* A point past the run's compute has no value. */
	co.at[0] = 100000;
	co.csv[0] = 0;
	cr_assert_eq(harness_compare(&co, err, sizeof(err)), 0, "%s", err);
	loop_test_rmdir(dir);
}

/* The measuring evaluator runs at the precision it is given: int8
 * calibrated at create, as self-play's backend is. */
Test(harness, measuring_evaluator_takes_the_precision, .timeout = 60)
{
	char err[512], what[4096];
	game_params c4 = game_params_default(GAME_KIND_CONNECT4);
	nn_arch a = nn_arch_default(&c4, 1, 8);
	nn_net *net = nn_net_new(&a, err, sizeof(err));
	cr_assert(net, "%s", err);
	nn_net_init_random(net, 5);
	eval_options eo = eval_options_default();
	nn_backend_options bo = nn_backend_options_default();
	static const nn_dtype want[2] = { NN_DTYPE_FP32, NN_DTYPE_INT8 };
	for (int k = 0; k < 2; k++) {
		bo.precision = want[k];
		nn_net *copy = NULL;
		nn_backend *be = NULL;
		evaluator *ev = loop_measure_evaluator(net, &eo, k ? &bo : NULL, &copy, &be, err,
						       sizeof(err));
		cr_assert(ev, "%s", err);
		be->ops->describe(be->ctx, what, sizeof(what));
		cr_assert(strstr(what, nn_dtype_name(want[k])), "%s", what);
		cr_assert_eq(strstr(what, "calibrated") != NULL, want[k] == NN_DTYPE_INT8, "%s", what);
		eval_free(ev);
		nn_backend_free(be);
		nn_net_free(copy);
	}
	/* fp16 is CUDA's: the CPU backend says so. */
	bo.precision = NN_DTYPE_FP16;
	nn_net *copy = NULL;
	nn_backend *be = NULL;
	cr_assert_null(loop_measure_evaluator(net, &eo, &bo, &copy, &be, err, sizeof(err)));
	cr_assert(strstr(err, "fp16"), "%s", err);
	nn_backend_free(be);
	nn_net_free(copy);
	nn_net_free(net);
}

/* int8 after fp32: its own methods, every model and set, and the fp32
 * rows untouched; a second int8 pass measures nothing. */
Test(harness, int8_beside_fp32, .timeout = 240)
{
	char dir[] = "/tmp/sente-harness-XXXXXX", err[1024];
	cr_assert(mkdtemp(dir));
	tiny_run(dir, 1, false, NULL);
	harness_options o = small_eval(dir);
	cr_assert_eq(harness_eval(&o, err, sizeof(err)), 0, "%s", err);
	snaps before, after, net8, search8;
	take(dir, 0, NULL, &before);
	cr_assert_eq(before.n, 2 * 2 * 7, "2 models, 2 methods, 6 sets and all: %d", before.n);

	o.precision = NN_DTYPE_INT8;
	o.quiet = false;
	char text[16384];
	eval_logged(&o, text, sizeof(text));
	cr_assert(strstr(text, "at int8") && strstr(text, "net@int8") &&
		  strstr(text, "search-v4-p2@int8") && strstr(text, "search-v4-p2 "),
		  "both precisions in the table:\n%s", text);

	take(dir, 0, "net@int8", &net8);
	take(dir, 0, "search-v4-p2@int8", &search8);
	cr_assert_eq(net8.n, 2 * 7, "%d rows", net8.n);
	cr_assert_eq(search8.n, 2 * 7, "%d rows", search8.n);
	for (int i = 0; i < net8.n; i++)
		if (!strcmp(net8.r[i].part, "all"))
			for (int j = 0; j < before.n; j++)
				if (!strcmp(before.r[j].method, "net") && !strcmp(before.r[j].part, "all"))
					/* The network alone sees every position at either precision. */
					cr_assert_eq(net8.r[i].n, before.r[j].n);

	/* The fp32 rows, as they were. */
	take(dir, 0, NULL, &after);
	cr_assert_eq(after.n, before.n + net8.n + search8.n);
	int same = 0;
	for (int i = 0; i < before.n; i++)
		for (int j = 0; j < after.n; j++)
			if (!strcmp(before.r[i].method, after.r[j].method) &&
			    !strcmp(before.r[i].part, after.r[j].part) && before.r[i].n == after.r[j].n &&
			    before.r[i].score == after.r[j].score &&
			    before.r[i].created == after.r[j].created)
				same++;
	cr_assert_eq(same, before.n, "%d of %d fp32 rows unchanged", same, before.n);

	/* Again at int8: nothing measured twice. */
	cr_assert_eq(harness_eval(&o, err, sizeof(err)), 0, "%s", err);
	snaps again;
	take(dir, 0, NULL, &again);
	cr_assert_eq(again.n, after.n);
	double newest = 0, newest_again = 0;
	for (int i = 0; i < after.n; i++)
		newest = fmax(newest, after.r[i].created);
	for (int i = 0; i < again.n; i++)
		newest_again = fmax(newest_again, again.r[i].created);
	cr_assert_eq(newest_again, newest, "no row was written again");
	loop_test_rmdir(dir);
}

/* Which models are measured: by default about HARNESS_AUTO_STEPS spread
 * evenly over the run's compute, whatever its length; --every M one per M
 * minutes; 0 every model; the first and the last always. */
Test(harness, spaces_the_models_over_the_compute)
{
	enum { N = 1201 };
	static double x[N];
	static bool pick[N];
	int lengths[] = { 10, 120, 600 }; /* minutes of compute */
	for (int k = 0; k < 3; k++) {
		for (int i = 0; i < N; i++)
			x[i] = lengths[k] * 60.0 * i / (N - 1);
		memset(pick, 0, sizeof(pick));
		int got = harness_spaced(x, N, -1, pick);
		cr_assert(got >= HARNESS_AUTO_STEPS && got <= HARNESS_AUTO_STEPS + 2,
			  "%d minutes: %d models", lengths[k], got);
		cr_assert(pick[0] && pick[N - 1], "the first and the last");
		/* Evenly: no gap between picked models over twice the step. */
		double step = x[N - 1] / HARNESS_AUTO_STEPS, last = 0;
		for (int i = 1; i < N; i++)
			if (pick[i]) {
				cr_assert(x[i] - last <= 2 * step, "a gap of %.0f s at %d", x[i] - last, i);
				last = x[i];
			}
	}
	memset(pick, 0, sizeof(pick));
	cr_assert_eq(harness_spaced(x, N, 60, pick), 11, "600 minutes, one per 60 and the last");
	memset(pick, 0, sizeof(pick));
	cr_assert_eq(harness_spaced(x, N, 0, pick), N, "0: every model");
	/* A single model, or all at 0 seconds: each is measured. */
	double zero[3] = { 0, 0, 0 };
	bool p3[3] = { false };
	cr_assert_eq(harness_spaced(zero, 3, -1, p3), 3);
	bool p1[1] = { false };
	cr_assert_eq(harness_spaced(zero, 1, -1, p1), 1);
}

Test(harness, labels_drop_the_seed)
{
	char l[64];
	harness_label("runs/c4-fpu-s2", l, sizeof(l));
	cr_assert_str_eq(l, "c4-fpu");
	harness_label("runs/c4-fpu-seed12/", l, sizeof(l));
	cr_assert_str_eq(l, "c4-fpu");
	harness_label("x_s3", l, sizeof(l));
	cr_assert_str_eq(l, "x");
	harness_label("c4-default", l, sizeof(l));
	cr_assert_str_eq(l, "c4-default");
	harness_label("gen2", l, sizeof(l));
	cr_assert_str_eq(l, "gen2", "digits alone do not name a seed");
}

/* A Go "run": one random 1x8 9x9 network registered in DIR's store. */
static void go_run(const char *dir)
{
	char err[512], file[600];
	game_params go = game_params_default(GAME_KIND_GO);
	go.size = 9;
	nn_arch a = nn_arch_default(&go, 1, 8);
	nn_net *net = nn_net_new(&a, err, sizeof(err));
	cr_assert(net, "%s", err);
	nn_net_init_random(net, 3);
	snprintf(file, sizeof(file), "%s/go.sente", dir);
	cr_assert_eq(nn_net_save(net, file, err, sizeof(err)), 0, "%s", err);
	nn_net_free(net);
	store *db = open_db(dir);
	cr_assert_eq(store_add_model(db, file, 0, 0, "test", NULL), 0);
	store_close(db);
}

Test(harness, refuses_bad_input, .timeout = 60)
{
	char dir[] = "/tmp/sente-harness-XXXXXX", err[1024];
	cr_assert(mkdtemp(dir));
	harness_options o = small_eval(dir);
	cr_assert_eq(harness_eval(&o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "no sente.db"), "%s", err);
	snprintf(o.dir, sizeof(o.dir), "%s/missing", dir);
	cr_assert_eq(harness_eval(&o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "not a run's folder"), "%s", err);
	o.dir[0] = 0;
	cr_assert_eq(harness_eval(&o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "--dir"), "%s", err);

	/* A database without models. */
	snprintf(o.dir, sizeof(o.dir), "%s", dir);
	store *db = open_db(dir);
	store_close(db);
	cr_assert_eq(harness_eval(&o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "no models"), "%s", err);

	/* A Go run, and no GNU Go where it is said to be. */
	go_run(dir);
	snprintf(o.gnugo, sizeof(o.gnugo), "%s/no-such-gnugo", dir);
	cr_assert_eq(harness_eval(&o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "GNU Go") && strstr(err, "apt-get install gnugo"), "%s", err);
	/* Another precision is for Connect Four's measurements only. */
	o.precision = NN_DTYPE_INT8;
	cr_assert_eq(harness_eval(&o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "Connect Four only"), "%s", err);
	o.precision = NN_DTYPE_FP32;

	/* Compare: nothing evaluated, or nothing to compare. */
	const char *runs[1] = { dir };
	harness_compare_options co = { .runs = { runs[0] }, .n_runs = 1, .at = { 10 }, .n_at = 1,
				       .part = "all" };
	cr_assert_eq(harness_compare(&co, err, sizeof(err)), -1);
	cr_assert(strstr(err, "no evaluations"), "%s", err);
	co.n_runs = 0;
	cr_assert_eq(harness_compare(&co, err, sizeof(err)), -1);
	loop_test_rmdir(dir);
}

/* A Go model against GNU Go, which scores the games: the win rate is
 * stored, and a second pass plays no game. */
Test(harness, go_against_gnugo, .timeout = 120)
{
	if (access("/usr/games/gnugo", X_OK) != 0 && system("command -v gnugo >/dev/null 2>&1") != 0)
		cr_skip_test("GNU Go is not installed");
	char dir[] = "/tmp/sente-harness-XXXXXX", err[1024];
	cr_assert(mkdtemp(dir));
	go_run(dir);
	store *db;
	harness_options o = small_eval(dir);
	o.games = 2;
	o.visits = 2;
	o.gnugo_level = 0;
	cr_assert_eq(harness_eval(&o, err, sizeof(err)), 0, "%s", err);
	db = open_db(dir);
	rows r = { 0 };
	cr_assert_eq(store_evaluations(db, 1, "gnugo-l0-v2-g2", count_row, &r), 1);
	cr_assert_eq(r.all, 1);
	store_close(db);
	cr_assert_eq(harness_eval(&o, err, sizeof(err)), 0, "%s", err);
	db = open_db(dir);
	rows again = { 0 };
	store_evaluations(db, 1, NULL, count_row, &again);
	cr_assert_eq(again.n, 1);
	cr_assert_eq(again.created_max, r.created_max, "measured once");
	store_close(db);
	loop_test_rmdir(dir);
}

/* The command: help, and usage errors before any work. */
Test(harness, command_line)
{
	char out[8192];
	char args[256];
	cr_assert_eq(cli_test_run("eval --help", out, sizeof(out)), 0);
	cr_assert(strstr(out, "--compare") && strstr(out, "--gnugo-level") && strstr(out, "--every"),
		  "%s", out);
	cr_assert_eq(cli_test_run("eval", out, sizeof(out)), 2);
	cr_assert(strstr(out, "--dir"), "%s", out);
	cr_assert_eq(cli_test_run("eval --compare", out, sizeof(out)), 2);
	cr_assert_eq(cli_test_run("eval --dir /nonexistent-sente-run", out, sizeof(out)), 1);
	cr_assert(strstr(out, "not a run's folder"), "%s", out);
	snprintf(args, sizeof(args), "eval --dir x --models 0");
	cr_assert_eq(cli_test_run(args, out, sizeof(out)), 2, "%s", out);
	cr_assert_eq(cli_test_run("run --measure-every -1", out, sizeof(out)), 2, "%s", out);
	cr_assert_eq(cli_test_run("eval --help", out, sizeof(out)), 0);
	cr_assert(strstr(out, "--precision") && strstr(out, "net@int8"), "%s", out);
	/* fp16 is CUDA's: refused before any work. */
	cr_assert_eq(cli_test_run("eval --dir x --precision fp16", out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "fp32, bf16 or int8"), "%s", out);
}
