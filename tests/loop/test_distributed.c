/* Self-play ranks feeding rank 0's loop (loop/distributed.h), with the
 * ranks as threads of this process (train/comm.h thread ranks), so that
 * the sanitizers see the protocol; the same through mpirun, with a worker
 * killed, is tests/cli/test_run_mpi.c. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loop/distributed.h"
#include "nn/cuda/cuda.h"
#include "tests/loop/loop_util.h"

typedef struct rank_arg {
	loop_options o;  /* the run's options */
	comm *c;         /* this rank */
	comm *learners;  /* its comm among the learner ranks, or NULL */
	int rc;          /* loop_run_ranks' outcome */
	char err[1024];  /* its message */
} rank_arg;

static void *run_rank(void *p)
{
	rank_arg *a = p;
	a->rc = loop_run_ranks(&a->o, a->c, a->learners, a->err, sizeof(a->err));
	return NULL;
}

/* One integer from a query. */
static long long query_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s", sql);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
	long long v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* RANKS thread ranks of `sente run`, the first `learners` of them training
 * (a comm group of their own when more than one), the rest playing,
 * stopped once three models are exported; then the store is checked:
 * games from every worker rank and none from a learner rank, models the
 * workers played, the workers' rates. */
static void run_thread_ranks(int ranks, int learners)
{
	enum { MAX_RANKS = 4 };
	char dir[] = "/tmp/sente-dist-XXXXXX";
	cr_assert(mkdtemp(dir));
	cr_assert(ranks <= MAX_RANKS && learners < ranks);
	comm_group *g = comm_group_new(ranks);
	comm_group *lg = learners > 1 ? comm_group_new(learners) : NULL;
	cr_assert(g && (learners < 2 || lg));
	rank_arg a[MAX_RANKS];
	pthread_t th[MAX_RANKS];
	/* Ctrl-C, as every rank sees it: set once the run has exported three
	 * models (a slow machine, or the sanitizers, take longer to get there
	 * than a fixed time would allow). */
	static volatile sig_atomic_t stop;
	stop = 0;
	for (int r = 0; r < ranks; r++) {
		a[r].o = loop_test_options(dir);
		a[r].o.minutes = 10; /* a bound: the test stops it */
		a[r].o.parallel_games = 3;
		a[r].o.nn.threads = 1;
		a[r].o.stop = &stop;
		a[r].o.learner_ranks = learners;
		a[r].c = comm_group_rank(g, r);
		a[r].learners = lg && r < learners ? comm_group_rank(lg, r) : NULL;
		a[r].err[0] = '\0';
		cr_assert_eq(pthread_create(&th[r], NULL, run_rank, &a[r]), 0);
	}
	char path[256];
	snprintf(path, sizeof(path), "%s/sente.db", dir);
	for (int i = 0; i < 1100 && !stop; i++) {
		sqlite3 *db;
		usleep(100000);
		if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
			sqlite3_stmt *st = NULL;
			if (sqlite3_prepare_v2(db, "SELECT count(*) FROM models", -1, &st, NULL) == SQLITE_OK &&
			    sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) >= 3)
				stop = 1;
			sqlite3_finalize(st);
		}
		sqlite3_close(db);
	}
	stop = 1;
	for (int r = 0; r < ranks; r++)
		pthread_join(th[r], NULL);
	for (int r = 0; r < ranks; r++)
		cr_assert_eq(a[r].rc, 0, "rank %d: %s", r, a[r].err);
	comm_group_free(lg);
	comm_group_free(g);

	sqlite3 *db;
	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	/* Games from every worker, tagged with its rank; none from a learner. */
	long long sum = 0, all = query_int(db, "SELECT count(*) FROM games");
	for (int r = 0; r < ranks; r++) {
		char q[128];
		snprintf(q, sizeof(q), "SELECT count(*) FROM games WHERE worker LIKE 'rank%d@%%'", r);
		long long n = query_int(db, q);
		if (r < (learners > 1 ? learners : 1))
			cr_assert_eq(n, 0, "learner rank %d played %lld games", r, n);
		else
			cr_assert_gt(n, 0, "worker rank %d played no game", r);
		sum += n;
	}
	cr_assert_eq(sum, all, "games from ranks %lld, all %lld", sum, all);
	/* The learner trained on them and exported models the workers played. */
	long long models = query_int(db, "SELECT count(*) FROM models");
	cr_assert(models >= 3, "%lld models", models);
	cr_assert(query_int(db, "SELECT count(DISTINCT model_id) FROM games") >= 2);
	cr_assert(query_int(db, "SELECT count(*) FROM metrics WHERE name = 'selfplay_games_per_s' "
				"AND value > 0") >= 1);
	char q[128];
	snprintf(q, sizeof(q), "SELECT count(*) FROM metrics WHERE name = 'selfplay_games_per_s/rank%d'",
		 ranks - 1);
	cr_assert(query_int(db, q) >= 1);
	sqlite3_close(db);
	loop_test_rmdir(dir);
}

Test(distributed, two_thread_workers_feed_the_loop, .timeout = 120)
{
	run_thread_ranks(3, 1);
}

/* --learner-ranks 2: rank 1 trains beside rank 0 (learner_follow), ranks 2
 * and 3 play. */
Test(distributed, two_learner_ranks_and_two_workers, .timeout = 180)
{
	run_thread_ranks(4, 2);
}

typedef struct sp_rank_arg {
	selfplay_worker_options o; /* the command's options */
	comm *c;                   /* this rank */
	const char *db;            /* the database */
	int rc;                    /* loop_selfplay_ranks' outcome */
	selfplay_worker_result res; /* rank 0's totals */
} sp_rank_arg;

static void *selfplay_rank(void *p)
{
	sp_rank_arg *a = p;
	a->rc = loop_selfplay_ranks(a->c, a->db, &a->o, &a->res);
	return NULL;
}

/* Three selfplay ranks as threads storing `games` games into
 * DIR/sente.db: 3 games at once per worker, 8 visits, a random 1x8
 * Connect Four model, the backend `kind`, messages to `log` (may be
 * NULL). Rank 0's totals in *res. */
static void run_selfplay_ranks(const char *dir, int games, nn_backend_kind kind, FILE *log,
			       selfplay_worker_result *res)
{
	char db[256], model[256], err[256];
	snprintf(db, sizeof(db), "%s/sente.db", dir);
	snprintf(model, sizeof(model), "%s/model.sente", dir);
	game_params gp = game_params_default(GAME_KIND_CONNECT4);
	nn_arch arch = nn_arch_default(&gp, 1, 8);
	nn_net *net = nn_net_new(&arch, err, sizeof(err));
	cr_assert(net, "%s", err);
	nn_net_init_random(net, 7);
	cr_assert_eq(nn_net_save(net, model, err, sizeof(err)), 0, "%s", err);
	nn_net_free(net);
	enum { RANKS = 3 };
	comm_group *g = comm_group_new(RANKS);
	cr_assert(g);
	sp_rank_arg a[RANKS];
	pthread_t th[RANKS];
	for (int r = 0; r < RANKS; r++) {
		memset(&a[r], 0, sizeof(a[r]));
		a[r].o = selfplay_worker_options_default();
		a[r].o.play.parallel_games = 3;
		a[r].o.play.visits = 8;
		a[r].o.play.cheap_visits = 0;
		a[r].o.play.nn.kind = kind;
		a[r].o.play.nn.threads = 1;
		a[r].o.play.quiet = true;
		a[r].o.weights = model;
		a[r].o.games = games;
		a[r].o.poll_seconds = 0.5;
		a[r].o.log = log;
		a[r].c = comm_group_rank(g, r);
		a[r].db = db;
		cr_assert_eq(pthread_create(&th[r], NULL, selfplay_rank, &a[r]), 0);
	}
	for (int r = 0; r < RANKS; r++)
		pthread_join(th[r], NULL);
	for (int r = 0; r < RANKS; r++)
		cr_assert_eq(a[r].rc, SELFPLAY_WORKER_OK, "rank %d: %d", r, a[r].rc);
	comm_group_free(g);
	*res = a[0].res;
}

/* `mpirun -np 3 sente selfplay --games 9`, the ranks as threads: exactly 9
 * games stored though the workers (3 games at once each) have games under
 * way when the ninth comes, each game with its worker's name, and rank 0's
 * totals carry the workers' network evaluations. */
Test(distributed, selfplay_ranks_store_exactly_the_games_asked_for, .timeout = 120)
{
	char dir[] = "/tmp/sente-dist-sp-XXXXXX", db[256];
	cr_assert(mkdtemp(dir));
	snprintf(db, sizeof(db), "%s/sente.db", dir);
	selfplay_worker_result res;
	run_selfplay_ranks(dir, 9, NN_BACKEND_CPU, NULL, &res);
	cr_assert_eq(res.stats.games, 9);
	cr_assert_gt(res.stats.evals, 0, "the workers' evaluations reach rank 0");
	cr_assert_gt(res.stats.batches, 0);
	cr_assert_leq(res.stats.batches, res.stats.evals);
	sqlite3 *s;
	cr_assert_eq(sqlite3_open(db, &s), SQLITE_OK);
	cr_assert_eq(query_int(s, "SELECT count(*) FROM games"), 9);
	/* Every game names the worker that played it. Which workers' games
	 * come in first is the scheduler's: on a loaded machine one worker
	 * can play all nine while the other still builds its network, so
	 * "games from both" is not asserted. */
	cr_assert_eq(query_int(s, "SELECT count(*) FROM games WHERE worker IS NULL OR worker = ''"), 0);
	int workers = query_int(s, "SELECT count(DISTINCT worker) FROM games");
	cr_assert(workers >= 1 && workers <= 2, "games from %d workers (2 play)", workers);
	sqlite3_close(s);
	loop_test_rmdir(dir);
}

/* Workers asked for CUDA on a machine without a device say so and play on
 * the CPU (on a machine with one, they play on it: nothing to say). */
Test(distributed, selfplay_ranks_without_a_device_play_on_the_cpu, .timeout = 120)
{
	if (nn_cuda_device_count() > 0)
		cr_skip_test("a CUDA device is present: the workers use it");
	char dir[] = "/tmp/sente-dist-cpu-XXXXXX", text[4096];
	cr_assert(mkdtemp(dir));
	FILE *log = tmpfile();
	cr_assert(log);
	selfplay_worker_result res;
	run_selfplay_ranks(dir, 3, NN_BACKEND_CUDA, log, &res);
	cr_assert_eq(res.stats.games, 3);
	cr_assert_gt(res.stats.evals, 0);
	rewind(log);
	size_t n = fread(text, 1, sizeof(text) - 1, log);
	text[n] = '\0';
	fclose(log);
	cr_assert(strstr(text, "rank1@") && strstr(text, "no CUDA device here: self-play on the CPU"),
		  "%s", text);
	cr_assert(strstr(strstr(text, "no CUDA device here") + 1, "no CUDA device here"),
		  "both workers say so: %s", text);
	loop_test_rmdir(dir);
}
