/* `mpirun -np 3 sente run`: rank 0 trains and stores, ranks 1 and 2 play.
 * A short Connect Four run is killed by SIGKILL on one worker (mpirun then
 * ends the job), and the same command resumes it until Ctrl-C stops it:
 * the games committed before stay, both workers' games are stored with
 * their rank, each worker played every new model (it took each before the
 * next export), and the database passes PRAGMA integrity_check. Skips itself as
 * tests/cli/test_train_mpi.c does: without mpirun or an MPI build, and
 * under AddressSanitizer (Open MPI's own start-up leaks); the protocol
 * runs under the sanitizers in tests/loop/test_distributed.c. */
#include <criterion/criterion.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "data/store.h"
#include "tests/cli/cli_util.h"
#include "train/comm.h"

/* A tiny run: 1x8 network, 3 games at once per worker, 8 visits. Each
 * session is ended from outside (SIGKILL on a worker, then Ctrl-C), so
 * --minutes is only a bound. */
#define RUN_ARGS "--minutes 10 --backend cpu --blocks 1 --channels 8 --parallel-games 3 " \
	"--visits 8 --cheap-visits 0 --positions 120 --batch 32 --window 2000 --eval-visits 2 " \
	"--eval-positions 3"

static char *slurp(const char *path, char *buf, size_t len)
{
	buf[0] = '\0';
	FILE *f = fopen(path, "r");
	if (!f)
		return buf;
	size_t n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* Starts `run` in the background: its output in DIR/NAME.log, mpirun's
 * pid in DIR/NAME.pid, its exit code in DIR/NAME.rc when it ends. */
static void start_session(const char *run, const char *dir, const char *name)
{
	char cmd[4096];
	snprintf(cmd, sizeof(cmd),
		 "sh -c '%s >%s/%s.log 2>&1 & echo $! >%s/%s.pid; wait $!; echo $? >%s/%s.rc' "
		 ">/dev/null 2>&1 &",
		 run, dir, name, dir, name, dir, name);
	cr_assert_eq(system(cmd), 0);
}

/* Waits up to `seconds` for DIR/NAME.log to hold every needle after the
 * first; the log is left in buf. True when it did. */
static bool wait_log(const char *dir, const char *name, const char *first, const char *then,
		     double seconds, char *buf, size_t len)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s.log", dir, name);
	for (int i = 0; i < seconds * 10; i++) {
		slurp(path, buf, len);
		const char *at = strstr(buf, first);
		if (at && (!then || strstr(at, then)))
			return true;
		usleep(100000);
	}
	return false;
}

/* A number in a file (a pid, an exit code), waiting up to `seconds` for
 * it to be written; -1 when it is not. */
static int read_number(const char *dir, const char *name, const char *ext, double seconds)
{
	char path[1024], buf[32];
	snprintf(path, sizeof(path), "%s/%s.%s", dir, name, ext);
	for (int i = 0; i < seconds * 10; i++) {
		slurp(path, buf, sizeof(buf));
		if (strchr(buf, '\n'))
			return atoi(buf);
		usleep(100000);
	}
	return -1;
}

static long long query_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql,
		     sqlite3_errmsg(db));
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
	long long v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* Games, the sum of their records' lengths, the newest game and model. */
typedef struct snapshot {
	long long games, bytes, max_game, max_model;
} snapshot;

static snapshot take_snapshot(const char *dbpath, long long upto_game)
{
	sqlite3 *db;
	char sql[256];
	snapshot s;
	cr_assert_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM games WHERE id <= %lld", upto_game);
	s.games = query_int(db, sql);
	snprintf(sql, sizeof(sql), "SELECT coalesce(sum(length(record)), 0) FROM games WHERE id <= %lld",
		 upto_game);
	s.bytes = query_int(db, sql);
	s.max_game = query_int(db, "SELECT coalesce(max(id), 0) FROM games");
	s.max_model = query_int(db, "SELECT coalesce(max(id), 0) FROM models");
	sqlite3_close(db);
	return s;
}

Test(run_mpi, two_workers_a_kill_and_a_resume, .timeout = 150)
{
	const char *b = cli_test_bin();
	cli_test_need_mpirun();
	char dir[] = "/tmp/sente-runmpi-XXXXXX", cmd[4096], run[2048], dbpath[1024];
	static char log[65536];
	cr_assert(mkdtemp(dir));
	snprintf(dbpath, sizeof(dbpath), "%s/run/sente.db", dir);
	snprintf(run, sizeof(run), "mpirun --oversubscribe --bind-to none -np 3 %s run --dir %s/run " RUN_ARGS,
		 b, dir);

	/* The first session: once it has exported two models, its rank 2
	 * is killed; mpirun ends the job with a failure. */
	start_session(run, dir, "a");
	cr_assert(wait_log(dir, "a", "rank2@", "iteration 2:", 90, log, sizeof(log)),
		  "no second iteration:\n%s", log);
	const char *p = strstr(strstr(log, "rank2@"), "(pid ");
	cr_assert(p, "%s", log);
	int pid = atoi(p + 5);
	cr_assert(pid > 0);
	cr_assert_eq(kill(pid, SIGKILL), 0);
	int rc = read_number(dir, "a", "rc", 30);
	cr_assert(rc > 0, "mpirun exit %d after a rank was killed", rc);
	snapshot a = take_snapshot(dbpath, 1LL << 60);
	cr_assert(a.games > 0 && a.max_model >= 3, "%lld games, %lld models", a.games, a.max_model);

	/* The same command resumes from the checkpoint and the store; after
	 * three more exports, Ctrl-C stops every rank with a checkpoint.
	 * mpirun passes it on as SIGTERM, then SIGKILL: a second apart by
	 * default, three here so that a machine busy with other tests
	 * still sees the stop's own work (README, Faults). */
	setenv("OMPI_MCA_odls_base_sigkill_timeout", "3", 1);
	start_session(run, dir, "b");
	unsetenv("OMPI_MCA_odls_base_sigkill_timeout");
	cr_assert(wait_log(dir, "b", "resumed at step ", "iteration 3:", 90, log, sizeof(log)),
		  "no third iteration after the resume:\n%s", log);
	const char *res = strstr(log, "resumed at step ");
	cr_assert(atoi(res + 16) > 0, "%s", log);
	int mpirun = read_number(dir, "b", "pid", 5);
	cr_assert(mpirun > 0);
	cr_assert_eq(kill(mpirun, SIGINT), 0);
	read_number(dir, "b", "rc", 40);
	cr_assert(wait_log(dir, "b", "stopped at step ", NULL, 1, log, sizeof(log)), "%s", log);

	/* The first session's games are all there, unchanged; more came. */
	snapshot again = take_snapshot(dbpath, a.max_game);
	cr_assert_eq(again.games, a.games);
	cr_assert_eq(again.bytes, a.bytes);
	cr_assert(again.max_game > a.max_game && again.max_model > a.max_model + 2,
		  "games %lld -> %lld, models %lld -> %lld", a.max_game, again.max_game, a.max_model,
		  again.max_model);

	sqlite3 *db;
	char sql[1024];
	cr_assert_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
	for (int r = 1; r <= 2; r++) {
		snprintf(sql, sizeof(sql), "SELECT count(*) FROM games WHERE worker LIKE 'rank%d@%%' "
			 "AND id > %lld", r, a.max_game);
		cr_assert(query_int(db, sql) > 0, "no games of rank %d in the second session", r);
		/* The worker took new models as they came: it played most of
		 * the second session's models but the last two (made as it
		 * ended). Not every one: a worker picks up the newest model
		 * when it finishes a game, and on a loaded machine (make asan
		 * beside training runs) one slow game can span two exports. */
		snprintf(sql, sizeof(sql),
			 "SELECT count(*) FROM models m WHERE m.id >= %lld AND m.id <= %lld - 2 AND "
			 "NOT EXISTS (SELECT 1 FROM games g WHERE g.model_id = m.id AND g.id > %lld AND "
			 "g.worker LIKE 'rank%d@%%')",
			 a.max_model, again.max_model, a.max_game, r);
		long long skipped = query_int(db, sql), models = again.max_model - 2 - a.max_model + 1;
		cr_assert(skipped * 3 <= models, "rank %d skipped %lld of %lld models:\n%s", r, skipped,
			  models, log);
	}
	cr_assert_eq(query_int(db, "SELECT count(*) FROM games WHERE worker NOT LIKE 'rank_@%'"), 0);
	sqlite3_close(db);

	char err[256], msg[256];
	store *s = store_open(dbpath, err, sizeof(err));
	cr_assert(s, "%s", err);
	cr_assert_eq(store_integrity_check(s, msg, sizeof(msg)), 0, "%s", msg);
	store_close(s);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

/* --learner-ranks 2 under mpirun -np 3: ranks 0 and 1 train, rank 2
 * plays; the run ends on its own and every game is rank 2's. */
Test(run_mpi, two_learner_ranks_train_one_worker_plays, .timeout = 150)
{
	const char *b = cli_test_bin();
	cli_test_need_mpirun();
	char dir[] = "/tmp/sente-runmpi-XXXXXX", cmd[4096], dbpath[1024];
	static char out[1 << 16];
	cr_assert(mkdtemp(dir));
	snprintf(dbpath, sizeof(dbpath), "%s/run/sente.db", dir);
	/* --minutes 0.5 replaces RUN_ARGS' bound: the last option given wins. */
	snprintf(cmd, sizeof(cmd),
		 "timeout -k 5 120 mpirun --oversubscribe --bind-to none -np 3 %s run --dir %s/run "
		 RUN_ARGS " --minutes 0.5 --learner-ranks 2 2>&1",
		 b, dir);
	cr_assert_eq(cli_test_shell(cmd, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "3 ranks: ranks 0-1 train (rank 0 also stores), 1 play"), "%s", out);
	sqlite3 *db;
	cr_assert_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
	long long all = query_int(db, "SELECT count(*) FROM games");
	long long two = query_int(db, "SELECT count(*) FROM games WHERE worker LIKE 'rank2@%'");
	cr_assert(all > 0 && two == all, "%lld games, %lld of rank 2", all, two);
	cr_assert(query_int(db, "SELECT count(*) FROM models") >= 3, "%s", out);
	sqlite3_close(db);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

/* Without mpirun there is no second rank to train: refused, with why. */
Test(run_mpi, learner_ranks_without_mpirun_are_refused)
{
	char dir[] = "/tmp/sente-runmpi-XXXXXX", args[1024];
	static char out[1 << 14];
	cr_assert(mkdtemp(dir));
	snprintf(args, sizeof(args), "run --dir %s/run --learner-ranks 2 --minutes 0.1 2>&1", dir);
	cr_assert_neq(cli_test_run_within(60, args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "--learner-ranks 2 needs mpirun"), "%s", out);
	char cmd[1100];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}
