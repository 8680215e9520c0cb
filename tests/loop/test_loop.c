/* The AlphaZero loop's phases (loop/loop.h), called directly on a tiny
 * Connect Four run in a temporary folder: each phase does what it says,
 * leaves the run resumable, and a reopened run carries on from it. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "data/store.h"
#include "engine/clock.h"
#include "engine/game_desc.h"
#include "loop/loop.h"
#include "train/replay.h"
#include "tests/loop/loop_util.h"
#include "train/learner.h"
#include "train/session.h"

/* A metric's last value at any step; NAN when it has none. */
static int take_last(void *ctx, int64_t step, double t, double value)
{
	*(double *)ctx = value;
	return 0;
}

/* Every row of metric `name` in the run in `dir` through fn. */
static void each_metric(const char *dir, const char *name,
			store_metric_fn fn, void *ctx)
{
	char path[512], err[256];
	snprintf(path, sizeof(path), "%s/sente.db", dir);
	store *db = store_open(path, err, sizeof(err));
	cr_assert(db, "%s", err);
	store_metrics(db, name, fn, ctx);
	store_close(db);
}

static double last_metric(const char *dir, const char *name)
{
	double v = NAN;
	each_metric(dir, name, take_last, &v);
	return v;
}

static bool exists(const char *dir, const char *file)
{
	char path[512];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return stat(path, &st) == 0;
}

/* Self-play, training and export: one iteration, each phase asserted. */
static void iterate(loop *r, loop_iteration *it)
{
	char err[1024];
	cr_assert_eq(loop_selfplay(r, it, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(loop_train(r, it, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(loop_export(r, it, err, sizeof(err)), 0, "%s", err);
}

Test(loop, phases_one_by_one_then_resume, .timeout = 240)
{
	char dir[] = "/tmp/sente-loop-XXXXXX", err[1024];
	cr_assert(mkdtemp(dir));
	loop_options o = loop_test_options(dir);
	loop *r = loop_open(&o, err, sizeof(err));
	cr_assert(r, "%s", err);
	cr_assert(!loop_resumed(r));
	cr_assert_eq(loop_step(r), 0);
	cr_assert_eq(loop_positions(r), 0, "a new run's window is empty");
	cr_assert_eq(loop_selfplay_model(r), 1, "the first network is model 1");
	cr_assert(exists(dir, "models/model-00000000.sente"));
	cr_assert(!isnan(last_metric(dir, "c4_error_net")), "a new run is measured at step 0");

	loop_iteration it;
	cr_assert_eq(loop_selfplay(r, &it, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(it.number, 1);
	cr_assert(it.games >= o.parallel_games, "at least one game per worker (%lld)",
		  (long long)it.games);
	cr_assert(it.new_positions > 0);
	cr_assert_eq(loop_positions(r), it.new_positions, "every recorded position is in the window");

	cr_assert_eq(loop_train(r, &it, err, sizeof(err)), 0, "%s", err);
	int want = (int)ceil(it.new_positions * o.sample_ratio / o.batch);
	cr_assert_eq(it.steps, want < 1 ? 1 : want, "sample_ratio samples per new position");
	cr_assert_eq(loop_step(r), it.steps);
	cr_assert_eq(it.step, it.steps);
	cr_assert(isfinite(it.loss) && it.loss > 0);

	cr_assert_eq(loop_export(r, &it, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(it.model_id, 2);
	cr_assert(it.promoted, "without gating every network plays");
	cr_assert_eq(loop_selfplay_model(r), 2);
	cr_assert(exists(dir, "checkpoints/learner.ckpt"));
	char model[64];
	snprintf(model, sizeof(model), "models/model-%08lld.sente", (long long)it.step);
	cr_assert(exists(dir, model), "%s", model);
	cr_assert_float_eq(last_metric(dir, "loss"), it.loss, 1e-6);

	loop_measure(r, &it);
	cr_assert(!isnan(last_metric(dir, "c4_error_net/begin-easy")));
	cr_assert_eq(loop_report(r, err, sizeof(err)), 0, "%s", err);
	cr_assert(exists(dir, "report.html"));
	int64_t step = loop_step(r), positions = loop_positions(r);
	loop_close(r);

	r = loop_open(&o, err, sizeof(err));
	cr_assert(r, "%s", err);
	cr_assert(loop_resumed(r));
	cr_assert_eq(loop_step(r), step, "the checkpoint's step");
	cr_assert_eq(loop_positions(r), positions, "the window refilled from the store");
	cr_assert_eq(loop_selfplay_model(r), 2, "self-play takes the newest model");
	loop_close(r);
	loop_test_rmdir(dir);
}

/* Whether metric `name` has a row at `step`. */
struct at_step {
	int64_t step;
	bool seen;
};

static int take_at(void *ctx, int64_t step, double t, double value)
{
	struct at_step *a = ctx;
	a->seen |= step == a->step;
	return 0;
}

static bool metric_at(const char *dir, const char *name, int64_t step)
{
	struct at_step a = { step, false };
	each_metric(dir, name, take_at, &a);
	return a.seen;
}

/* --measure-share: a due measurement is skipped while measuring has taken
 * more than that share of the session; 1 never skips. The first
 * measurement (step 0) counts, so with a share of 0 the next one is
 * skipped, and the closing one still runs. */
Test(loop, measuring_keeps_to_its_share_of_the_time, .timeout = 240)
{
	char dir[] = "/tmp/sente-loop-XXXXXX", err[1024];
	cr_assert(mkdtemp(dir));
	loop_options o = loop_test_options(dir);
	o.measure_share = 0;
	loop *r = loop_open(&o, err, sizeof(err));
	cr_assert(r, "%s", err);
	cr_assert(metric_at(dir, "c4_error_net", 0), "the first measurement runs");
	loop_iteration it;
	iterate(r, &it);
	loop_measure(r, &it);
	cr_assert(!metric_at(dir, "c4_error_net", it.step), "skipped: over its share");
	int64_t closing = loop_step(r);
	loop_close(r);
	cr_assert(metric_at(dir, "c4_error_net", closing), "the closing measurement runs");

	o.measure_share = 1;
	r = loop_open(&o, err, sizeof(err));
	cr_assert(r, "%s", err);
	iterate(r, &it);
	loop_measure(r, &it);
	cr_assert(metric_at(dir, "c4_error_net", it.step), "a share of 1 never skips");
	loop_close(r);
	loop_test_rmdir(dir);
}

Test(loop, gating_plays_a_match_and_records_it, .timeout = 240)
{
	char dir[] = "/tmp/sente-loop-XXXXXX", err[1024];
	cr_assert(mkdtemp(dir));
	loop_options o = loop_test_options(dir);
	o.gate_games = 2;
	o.gate_visits = 2;
	o.gate_threshold = 1.01; /* no score passes: the candidate never plays */
	loop *r = loop_open(&o, err, sizeof(err));
	cr_assert(r, "%s", err);
	loop_iteration it;
	iterate(r, &it);
	double score = last_metric(dir, "gate_score");
	cr_assert(!isnan(score), "the gating match's score is stored");
	cr_assert(!it.promoted);
	cr_assert_eq(loop_selfplay_model(r), 1, "the first network still plays");
	loop_close(r);
	/* Reopened, self-play takes the last promoted model, not the newest. */
	r = loop_open(&o, err, sizeof(err));
	cr_assert(r, "%s", err);
	cr_assert_eq(loop_selfplay_model(r), 1);
	loop_close(r);
	loop_test_rmdir(dir);
}

Test(loop, refuses_a_folder_of_another_game, .timeout = 120)
{
	char dir[] = "/tmp/sente-loop-XXXXXX", err[1024];
	cr_assert(mkdtemp(dir));
	loop_options o = loop_test_options(dir);
	loop *r = loop_open(&o, err, sizeof(err));
	cr_assert(r, "%s", err);
	loop_iteration it;
	iterate(r, &it);
	loop_close(r);
	game_params go = game_params_default(GAME_KIND_GO);
	go.size = 9;
	loop_options g = loop_test_options(dir);
	g.game = go;
	cr_assert_null(loop_open(&g, err, sizeof(err)));
	cr_assert(strstr(err, "holds a connect4 run, not go"), "%s", err);
	loop_test_rmdir(dir);
}

Test(loop, run_stops_when_asked)
{
	char dir[] = "/tmp/sente-loop-XXXXXX", err[1024];
	cr_assert(mkdtemp(dir));
	loop_options o = loop_test_options(dir);
	volatile sig_atomic_t stop = 1;
	o.stop = &stop;
	o.minutes = 60;
	cr_assert_eq(loop_run(&o, err, sizeof(err)), 0, "%s", err);
	cr_assert(exists(dir, "report.html"), "a stopped run still writes its report");
	cr_assert(isnan(last_metric(dir, "loss")), "no iteration ran");
	loop_test_rmdir(dir);
}

/* The newest registered model of the run in dir, loaded. */
static nn_net *newest_model(const char *dir)
{
	char path[512], err[256];
	snprintf(path, sizeof(path), "%s/sente.db", dir);
	sqlite3 *db;
	sqlite3_stmt *st;
	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(db, "SELECT file FROM models ORDER BY id DESC LIMIT 1", -1, &st,
					NULL),
		     SQLITE_OK);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
	snprintf(path, sizeof(path), "%s/%s", dir, (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(db);
	nn_net *net = nn_net_load(path, NULL, err, sizeof(err));
	cr_assert(net, "%s", err);
	return net;
}

/* --sizes 5,7: one network for both boards, its frame 7x7; self-play
 * plays both, the learner trains on both, and the exported network says
 * so, with its SE means masked to each board (and a resumed run keeps
 * them without the flag). */
Test(loop, one_network_for_two_board_sizes, .timeout = 240)
{
	char dir[] = "/tmp/sente-loop-XXXXXX", err[1024];
	cr_assert(mkdtemp(dir));
	loop_options o = loop_test_options(dir);
	o.game = game_params_sized(GAME_KIND_GO, 7, 7.5);
	o.sizes[0] = 5;
	o.sizes[1] = 7;
	o.n_sizes = 2;
	o.visits = 8;
	o.cheap_visits = 0;
	o.positions_per_iter = 150;
	o.minutes = 0.25;
	o.measure_every = 0;
	cr_assert_eq(loop_run(&o, err, sizeof(err)), 0, "%s", err);
	char path[256];
	snprintf(path, sizeof(path), "%s/sente.db", dir);
	sqlite3 *db;
	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	int n[2] = { 0, 0 };
	for (int k = 0; k < 2; k++) {
		char q[128];
		sqlite3_stmt *st;
		snprintf(q, sizeof(q), "SELECT count(*) FROM games WHERE size = %d", k ? 7 : 5);
		cr_assert_eq(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK);
		cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
		n[k] = sqlite3_column_int(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	cr_assert(n[0] > 0 && n[1] > 0, "games of 5x5: %d, of 7x7: %d", n[0], n[1]);
	nn_net *net = newest_model(dir);
	cr_assert_eq(net->arch.board_w, 7);
	cr_assert_eq(net->arch.sizes, 1u << 5 | 1u << 7);
	cr_assert_eq(net->arch.masked_pool, 1, "a new net of several sizes masks its pooling");
	nn_net_free(net);
	/* Resumed without --sizes: still both. */
	o.n_sizes = 0;
	o.minutes = 0.1;
	cr_assert_eq(loop_run(&o, err, sizeof(err)), 0, "%s", err);
	loop_test_rmdir(dir);
}

/* Self-play games carried from one iteration into the next
 * (--carry-games): each iteration still records the positions it asks for
 * (the first games to finish are the short ones), and the games go on
 * across the new networks. */
Test(loop, iterations_carrying_games_record_their_positions, .timeout = 240)
{
	char dir[] = "/tmp/sente-loop-XXXXXX", err[1024];
	cr_assert(mkdtemp(dir));
	loop_options o = loop_test_options(dir);
	cr_assert(!o.carry_games, "off by default for Connect Four");
	game_params go = game_params_default(GAME_KIND_GO);
	cr_assert(loop_options_default(&go).carry_games, "on by default for Go");
	o.carry_games = true;
	loop *r = loop_open(&o, err, sizeof(err));
	cr_assert(r, "%s", err);
	for (int i = 0; i < 3; i++) {
		loop_iteration it;
		iterate(r, &it);
		cr_assert_geq(it.new_positions, o.positions_per_iter, "iteration %d: %lld positions", i,
			      (long long)it.new_positions);
		cr_assert_gt(it.games, 0);
	}
	loop_close(r);
	loop_test_rmdir(dir);
}

/* --se-channels 8: a new network of squeeze-excitation blocks, which
 * self-play evaluates, the learner trains (its SE weights move) and the
 * exported model keeps; reopened without the option, the run keeps them. */
Test(loop, squeeze_excitation_blocks_train_and_resume, .timeout = 240)
{
	char dir[] = "/tmp/sente-loop-XXXXXX", err[1024];
	cr_assert(mkdtemp(dir));
	loop_options o = loop_test_options(dir);
	o.blocks = 2;
	o.se_channels = 8;
	loop *r = loop_open(&o, err, sizeof(err));
	cr_assert(r, "%s", err);
	loop_iteration it;
	iterate(r, &it);
	cr_assert_gt(loop_step(r), 0);
	loop_close(r);
	nn_net *first = newest_model(dir);
	cr_assert_eq(first->arch.se_channels, 8);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(first->arch.block_kind[i], NN_BLOCK_SE, "block %d", i);
	o.se_channels = 0;
	r = loop_open(&o, err, sizeof(err));
	cr_assert(r, "%s", err);
	cr_assert(loop_resumed(r));
	iterate(r, &it);
	loop_close(r);
	nn_net *second = newest_model(dir);
	cr_assert_eq(second->arch.block_kind[1], NN_BLOCK_SE, "the resumed run keeps its blocks");
	const nn_fc *a = &first->block[1].se2, *b = &second->block[1].se2;
	double moved = 0;
	for (int k = 0; k < a->n_in * a->n_out; k++)
		moved += fabs((double)a->w[k] - b->w[k]);
	cr_assert_gt(moved, 0, "training moved the SE weights");
	nn_net_free(first);
	nn_net_free(second);
	loop_test_rmdir(dir);
}

/* Another process that takes the database's write lock when told (as a
 * long `sente db vacuum` holds it) and lets it go when told. It is forked
 * before the loop starts its threads, so that it runs no code a thread of
 * ours could have held a lock in. */
typedef struct locker {
	pid_t pid;   /* the process */
	int cmd;     /* write: 'L' lock, 'U' unlock, 'Q' quit */
	int ack;     /* read: 'y' done, 'n' failed */
} locker;

static locker locker_start(const char *dir)
{
	int cmd[2], ack[2];
	cr_assert_eq(pipe(cmd), 0);
	cr_assert_eq(pipe(ack), 0);
	locker l = { .pid = fork() };
	if (l.pid == 0) {
		char path[600], c;
		snprintf(path, sizeof(path), "%s/sente.db", dir);
		sqlite3 *db = NULL;
		while (read(cmd[0], &c, 1) == 1 && c != 'Q') {
			char x = 'n';
			if (c == 'L' && sqlite3_open(path, &db) == SQLITE_OK &&
			    sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK)
				x = 'y';
			if (c == 'U' && sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL) == SQLITE_OK &&
			    sqlite3_close(db) == SQLITE_OK)
				x = 'y';
			if (write(ack[1], &x, 1) != 1)
				_exit(2);
		}
		_exit(0);
	}
	l.cmd = cmd[1];
	l.ack = ack[0];
	return l;
}

static void locker_do(const locker *l, char c)
{
	char x;
	cr_assert_eq(write(l->cmd, &c, 1), 1);
	cr_assert_eq(read(l->ack, &x, 1), 1);
	cr_assert_eq(x, 'y', "the other process did '%c'", c);
}

static int64_t stored_games(const char *dir)
{
	char path[600], err[256];
	snprintf(path, sizeof(path), "%s/sente.db", dir);
	store *db = store_open(path, err, sizeof(err));
	cr_assert(db, "%s", err);
	int64_t games, positions;
	cr_assert_eq(store_count(db, &games, &positions), 0);
	store_close(db);
	return games;
}

Test(loop, a_locked_database_keeps_games_and_the_deadline, .timeout = 240)
{
	char dir[] = "/tmp/sente-loop-XXXXXX", err[1024];
	cr_assert(mkdtemp(dir));
	locker lk = locker_start(dir);
	loop_options o = loop_test_options(dir);
	loop *r = loop_open(&o, err, sizeof(err));
	cr_assert(r, "%s", err);
	locker_do(&lk, 'L');
	loop_iteration it;
	double t0 = clock_now();
	cr_assert_eq(loop_selfplay(r, &it, err, sizeof(err)), 0, "%s", err);
	double took = clock_now() - t0;
	int64_t played = it.games;
	cr_assert(played >= o.parallel_games);
	/* Before, each game waited a minute for the lock, then the phase
	 * failed after three. */
	cr_assert_lt(took, 30, "self-play took %.0f s behind the lock", took);
	cr_assert_eq(stored_games(dir), 0, "nothing could be written");
	cr_assert_eq(loop_positions(r), it.new_positions, "the games are in the window already");
	locker_do(&lk, 'U');
	cr_assert_eq(loop_selfplay(r, &it, err, sizeof(err)), 0, "%s", err);
	played += it.games;
	cr_assert_eq(stored_games(dir), played, "the waiting games stored once the lock went");

	/* Locked at the end of the session: kept in a file, stored at the next. */
	locker_do(&lk, 'L');
	cr_assert_eq(loop_selfplay(r, &it, err, sizeof(err)), 0, "%s", err);
	played += it.games;
	loop_close(r);
	cr_assert(exists(dir, "pending-games"));
	locker_do(&lk, 'U');
	cr_assert_eq(write(lk.cmd, "Q", 1), 1);
	waitpid(lk.pid, NULL, 0);
	r = loop_open(&o, err, sizeof(err));
	cr_assert(r, "%s", err);
	cr_assert(!exists(dir, "pending-games"), "taken in");
	cr_assert_eq(stored_games(dir), played, "every finished game is stored");
	loop_close(r);
	loop_test_rmdir(dir);
}

Test(loop, stores_and_reports_its_configuration, .timeout = 120)
{
	char dir[] = "/tmp/sente-loop-XXXXXX", err[1024];
	cr_assert(mkdtemp(dir));
	loop_options o = loop_test_options(dir);
	o.explore.temperature_floor = 0.15;
	o.value_q_weight = 0.25;
	o.value_lambda = 0.75;
	o.value_cut = 1;
	o.explore.fpu_root_noise = 0.125;
	volatile sig_atomic_t stop = 1; /* no closing measurement */
	o.stop = &stop;
	loop *r = loop_open(&o, err, sizeof(err));
	cr_assert(r, "%s", err);
	cr_assert_eq(loop_report(r, err, sizeof(err)), 0, "%s", err);
	loop_close(r);
	char path[512], config[4096];
	snprintf(path, sizeof(path), "%s/sente.db", dir);
	store *db = store_open(path, err, sizeof(err));
	cr_assert(db, "%s", err);
	cr_assert_eq(store_get_meta(db, LOOP_CONFIG_KEY, config, sizeof(config)), 1);
	cr_assert_eq(store_get_meta(db, "no such key", err, sizeof(err)), 0);
	cr_assert_eq(store_set_meta(db, "schema_version", "0"), -1, "the migrations' key is kept");
	store_close(db);
	cr_assert(strstr(config, "temperature-floor 0.15\n"), "%s", config);
	cr_assert(strstr(config, "value-q-weight 0.25\n"), "%s", config);
	cr_assert(strstr(config, "value-lambda 0.75\n"), "%s", config);
	cr_assert(strstr(config, "value-cut 1\n"), "%s", config);
	cr_assert(strstr(config, "fpu-root-noise 0.125\n"), "%s", config);
	cr_assert(strstr(config, "measure-share 1\n"), "%s", config);
	snprintf(path, sizeof(path), "%s/report.html", dir);
	FILE *f = fopen(path, "r");
	cr_assert(f);
	static char html[1 << 22];
	size_t n = fread(html, 1, sizeof(html) - 1, f);
	html[n] = 0;
	fclose(f);
	/* The snapshot embeds the run's data, configuration included, as JSON. */
	cr_assert(strstr(html, "\"config\":\""), "the report carries the configuration");
	cr_assert(strstr(html, "value-q-weight 0.25\\u000a"), "the report's configuration");
	loop_test_rmdir(dir);
}

Test(loop, trainer_knobs_reach_the_learner, .timeout = 240)
{
	char dir[] = "/tmp/sente-loop-XXXXXX", err[1024];
	cr_assert(mkdtemp(dir));
	loop_options o = loop_test_options(dir);
	o.lr_warmup = 100000; /* the first steps train at a small fraction of lr */
	o.lr_schedule = TRAIN_LR_SCHEDULE_STEP;
	o.lr_drops[0] = 5;
	o.lr_drops[1] = 50;
	o.n_lr_drops = 2;
	loop *r = loop_open(&o, err, sizeof(err));
	cr_assert(r, "%s", err);
	loop_iteration it;
	iterate(r, &it);
	cr_assert_gt(it.steps, 0);
	cr_assert(it.lr > 0 && it.lr < o.lr * 0.01, "warm-up: mean lr %g of %g", it.lr, o.lr);
	char config[4096];
	loop_config_text(&o, config, sizeof(config));
	cr_assert(strstr(config, "lr-schedule step\n") && strstr(config, "lr-drops 5,50\n"), "%s",
		  config);
	loop_close(r);
	loop_test_rmdir(dir);
}

Test(loop, growing_window_reuse_cap_and_bn_batches, .timeout = 240)
{
	char dir[] = "/tmp/sente-loop-XXXXXX", err[1024];
	cr_assert(mkdtemp(dir));
	loop_options o = loop_test_options(dir);
	o.window_min = 33;   /* a batch (32) and one */
	o.positions_per_iter = 100;
	o.reuse_cap = 2;     /* below the 6 draws per new position asked */
	o.bn_batches = 2;
	loop *r = loop_open(&o, err, sizeof(err));
	cr_assert(r, "%s", err);
	for (int i = 0; i < 2; i++) {
		loop_iteration it;
		cr_assert_eq(loop_selfplay(r, &it, err, sizeof(err)), 0, "%s", err);
		/* The window of the positions stored so far, within a game (the
		 * cap retires the games of the iteration before: from then on
		 * at most that). */
		char path[4200];
		snprintf(path, sizeof(path), "%s/sente.db", dir);
		int64_t games, seen;
		store *db = store_open(path, err, sizeof(err));
		cr_assert(db, "%s", err);
		store_count(db, &games, &seen);
		store_close(db);
		int64_t w = replay_window_size(seen, 33, o.window_alpha, o.window_beta, o.window);
		cr_assert(w < seen, "the window narrowed");
		cr_assert((i > 0 || it.window >= w) && it.window < w + 43,
			  "window %lld for %lld seen (%lld)", (long long)it.window, (long long)seen,
			  (long long)w);
		cr_assert_eq(loop_train(r, &it, err, sizeof(err)), 0, "%s", err);
		cr_assert(it.used_up, "the cap stopped training");
		int asked = (int)ceil(it.new_positions * o.sample_ratio / o.batch);
		cr_assert_lt(it.steps, asked);
		cr_assert_eq(loop_export(r, &it, err, sizeof(err)), 0, "%s", err);
	}
	char config[4096];
	loop_config_text(&o, config, sizeof(config));
	cr_assert(strstr(config, "window-min 33\n") && strstr(config, "reuse-cap 2\n") &&
		  strstr(config, "bn-batches 2\n") && strstr(config, "window-alpha 0.75\n"),
		  "%s", config);
	loop_close(r);
	loop_test_rmdir(dir);
}

/* One default for the value target's mix, whichever command trains:
 * `sente run` (either learner) and `sente train`; the run records it. */
Test(loop, value_target_mix_has_one_default)
{
	game_params gp = game_params_default(GAME_KIND_CONNECT4);
	loop_options o = loop_options_default(&gp);
	cr_assert_float_eq(o.value_q_weight, 0.5, 1e-9);
	cr_assert_float_eq(learner_options_default().value_q_weight, 0.5f, 1e-9);
	cr_assert_float_eq(train_session_options_default().value_q_weight, 0.5, 1e-9);
	cr_assert_float_eq(o.value_lambda, 1, 1e-9);
	cr_assert_float_eq(learner_options_default().value_lambda, 1, 1e-9);
	cr_assert_float_eq(train_session_options_default().value_lambda, 1, 1e-9);
	char text[4096];
	loop_config_text(&o, text, sizeof(text));
	cr_assert(strstr(text, "value-q-weight 0.5\n"), "%s", text);
	cr_assert(strstr(text, "value-lambda 1\n"), "%s", text);
	cr_assert(strstr(text, "value-cut 0\n"), "%s", text);
	cr_assert(!learner_options_default().value_cut);
}

/* --resign and --no-resign-fraction reach self-play, with selfplay's
 * defaults, and the run's config records them. */
Test(loop, resignation_settings_reach_self_play)
{
	game_params gp = game_params_default(GAME_KIND_GO);
	loop_options o = loop_options_default(&gp);
	selfplay_options sd = selfplay_options_default(&gp);
	cr_assert_float_eq(o.resign_pct, sd.resign_pct, 1e-9);
	cr_assert_float_eq(o.no_resign_fraction, sd.no_resign_fraction, 1e-9);
	o.resign_pct = 0;
	o.no_resign_fraction = 0.25;
	selfplay_options so = loop_selfplay_options(&o);
	cr_assert_float_eq(so.resign_pct, 0, 1e-9);
	cr_assert_float_eq(so.no_resign_fraction, 0.25, 1e-9);
	char text[4096];
	loop_config_text(&o, text, sizeof(text));
	cr_assert(strstr(text, "\nresign 0\nno-resign-fraction 0.25\n"), "%s", text);
}

/* --eval-batch reaches the self-play evaluator: 8 games on two threads,
 * each submitting its 4 games' leaves at once, batch at most 2 when asked
 * and more than 2 without it (the parallel games, at most 64); the run's
 * config records the batch in force. */
Test(loop, eval_batch_caps_the_self_play_batch, .timeout = 240)
{
	double mean[2];
	for (int k = 0; k < 2; k++) {
		char dir[] = "/tmp/sente-loop-XXXXXX", err[1024];
		cr_assert(mkdtemp(dir));
		loop_options o = loop_test_options(dir);
		o.games_per_thread = 4;
		o.eval_batch = k ? 2 : 0;
		cr_assert_eq(loop_selfplay_options(&o).batch, k ? 2 : 8);
		char config[4096];
		loop_config_text(&o, config, sizeof(config));
		cr_assert(strstr(config, k ? "\neval-batch 2\n" : "\neval-batch 8\n"), "%s", config);
		cr_assert(strstr(config, "\ngames-per-thread 4\n"), "%s", config);
		loop *r = loop_open(&o, err, sizeof(err));
		cr_assert(r, "%s", err);
		loop_iteration it;
		cr_assert_eq(loop_selfplay(r, &it, err, sizeof(err)), 0, "%s", err);
		mean[k] = it.mean_batch;
		loop_close(r);
		loop_test_rmdir(dir);
	}
	cr_expect_gt(mean[0], 2.5, "without --eval-batch: mean batch %g", mean[0]);
	cr_expect(mean[1] > 0 && mean[1] <= 2, "--eval-batch 2: mean batch %g", mean[1]);
	game_params g = game_params_default(GAME_KIND_GO);
	loop_options big = loop_options_default(&g);
	big.parallel_games = 256;
	cr_expect_eq(loop_selfplay_options(&big).batch, LOOP_EVAL_BATCH_AUTO_MAX);
}

/* --opp-weight: a new run's network has the opponent-reply head, trains
 * it (its loss a metric beside the others, in the config too), exports it
 * in the model file and keeps it when the run resumes; without the weight
 * the head is absent and so is the metric. */
Test(loop, opponent_reply_head_trains_and_resumes, .timeout = 240)
{
	for (int k = 0; k < 2; k++) {
		char dir[] = "/tmp/sente-loop-XXXXXX", err[1024];
		cr_assert(mkdtemp(dir));
		loop_options o = loop_test_options(dir);
		o.opp_weight = k ? 0.15 : 0;
		o.measure_every = 0;
		char config[4096];
		loop_config_text(&o, config, sizeof(config));
		cr_assert(strstr(config, k ? "\nopp-weight 0.15\n" : "\nopp-weight 0\n"), "%s", config);
		loop *r = loop_open(&o, err, sizeof(err));
		cr_assert(r, "%s", err);
		loop_iteration it;
		iterate(r, &it);
		cr_assert_gt(it.steps, 0);
		if (k) {
			/* Connect Four's 7 actions: a reply loss of a sensible size. */
			cr_assert(it.opp_loss > 0.1 && it.opp_loss < 4, "reply loss %g", it.opp_loss);
			cr_assert_float_eq(last_metric(dir, "opp_loss"), it.opp_loss, 1e-6);
		} else {
			cr_assert(isnan(it.opp_loss));
			cr_assert(isnan(last_metric(dir, "opp_loss")));
		}
		char model[600];
		snprintf(model, sizeof(model), "%s/models/model-%08lld.sente", dir, (long long)it.step);
		nn_net *net = nn_net_load(model, NULL, err, sizeof(err));
		cr_assert(net, "%s", err);
		cr_assert_eq(net->arch.opp_policy, k);
		nn_net_free(net);
		loop_close(r);
		/* Resumed without the weight, the network keeps its head. */
		o.opp_weight = 0;
		r = loop_open(&o, err, sizeof(err));
		cr_assert(r, "%s", err);
		cr_assert(loop_resumed(r));
		iterate(r, &it);
		cr_assert(k ? isfinite(it.opp_loss) : isnan(it.opp_loss), "%g", it.opp_loss);
		loop_close(r);
		loop_test_rmdir(dir);
	}
}

/* --own-weight and --score-weight on 5x5 Go: a new network has the
 * ownership and score heads and trains them (their losses metrics;
 * positions of games played out have targets, so the losses are above 0),
 * the exported model keeps them; the ownership head by default on the
 * CPU, at its weight (in the config); Connect Four refuses them with a
 * message, and by default has none. */
Test(loop, ownership_head_trains_on_go, .timeout = 240)
{
	char dir[] = "/tmp/sente-loop-XXXXXX", err[1024];
	cr_assert(mkdtemp(dir));
	loop_options o = loop_test_options(dir);
	o.own_weight = 1.5;
	o.score_weight = 1;
	loop *r = loop_open(&o, err, sizeof(err));
	cr_assert_null(r, "Connect Four has no ownership");
	cr_assert(strstr(err, "no territory"), "%s", err);
	game_params g = game_params_default(GAME_KIND_GO);
	g.size = 5;
	loop_options d = loop_options_default(&g);
	o.game = g;
	o.window = d.window;
	o.measure_every = 0;
	/* Go on the CPU: the ownership head by default. */
	o.own_weight = LOOP_OWN_WEIGHT_AUTO;
	r = loop_open(&o, err, sizeof(err));
	cr_assert(r, "%s", err);
	loop_iteration it;
	iterate(r, &it);
	cr_assert_gt(it.steps, 0);
	cr_assert(it.own_loss > 0.05 && it.own_loss < 2, "ownership loss %g", it.own_loss);
	cr_assert_float_eq(last_metric(dir, "own_loss"), it.own_loss, 1e-6);
	cr_assert(it.score_loss > 0 && it.score_loss < 4, "score loss %g", it.score_loss);
	cr_assert_float_eq(last_metric(dir, "score_loss"), it.score_loss, 1e-6);
	char model[600];
	snprintf(model, sizeof(model), "%s/models/model-%08lld.sente", dir, (long long)it.step);
	nn_net *net = nn_net_load(model, NULL, err, sizeof(err));
	cr_assert(net, "%s", err);
	cr_assert(net->arch.ownership && net->arch.score && !net->arch.opp_policy);
	nn_net_free(net);
	loop_close(r);
	char path[600];
	snprintf(path, sizeof(path), "%s/sente.db", dir);
	store *db = store_open(path, err, sizeof(err));
	cr_assert(db, "%s", err);
	char config[4096];
	cr_assert_eq(store_get_meta(db, LOOP_CONFIG_KEY, config, sizeof(config)), 1);
	cr_assert(strstr(config, "\nown-weight 1.5\n"), "%s", config);
	store_close(db);
	loop_test_rmdir(dir);
	/* Connect Four's default: no ownership head, weight 0. */
	char dir2[] = "/tmp/sente-loop-XXXXXX";
	cr_assert(mkdtemp(dir2));
	o = loop_test_options(dir2);
	cr_assert(o.own_weight < 0);
	r = loop_open(&o, err, sizeof(err));
	cr_assert(r, "%s", err);
	cr_assert_eq(loop_step(r), 0);
	loop_close(r);
	snprintf(model, sizeof(model), "%s/models/model-00000000.sente", dir2);
	net = nn_net_load(model, NULL, err, sizeof(err));
	cr_assert(net, "%s", err);
	cr_assert(!net->arch.ownership);
	nn_net_free(net);
	loop_test_rmdir(dir2);
}
