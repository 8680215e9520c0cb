/* `sente run`: a short Connect Four run produces games, models, a
 * checkpoint and a report; killed with SIGKILL in the middle, it resumes
 * from what was committed. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nn/cuda/cuda.h"
#include "tests/cli/cli_util.h"
#include "data/store.h"
#include "engine/progress.h"
#include "train/trainer.h"
#include <time.h>

/* Small settings so an iteration takes a second or two. */
#define SMALL "--blocks 1 --channels 8 --parallel-games 8 --visits 16 --cheap-visits 4 " \
	      "--positions 60 --window 2000 --batch 32 --eval-visits 8 --eval-positions 3 -q"

static void counts(const char *dir, int64_t *games, int64_t *models)
{
	char path[512], err[256];
	snprintf(path, sizeof(path), "%s/sente.db", dir);
	store *db = store_open(path, err, sizeof(err));
	cr_assert(db, "%s", err);
	int64_t positions;
	cr_assert_eq(store_count(db, games, &positions), 0);
	char msg[256];
	cr_assert_eq(store_integrity_check(db, msg, sizeof(msg)), 0, "%s", msg);
	int64_t id, step;
	*models = store_latest_model(db, &id, NULL, 0, &step) == 1 ? id : 0;
	store_close(db);
}

/* counts() for a store a run is writing: no assertion, -1 while it cannot
 * be read yet (not created, or locked). */
static int peek(const char *dir, int64_t *games, int64_t *models)
{
	char path[512], err[256];
	snprintf(path, sizeof(path), "%s/sente.db", dir);
	if (access(path, F_OK) != 0)
		return -1;
	store *db = store_open(path, err, sizeof(err));
	if (!db)
		return -1;
	int64_t positions, id, step;
	int rc = store_count(db, games, &positions);
	*models = store_latest_model(db, &id, NULL, 0, &step) == 1 ? id : 0;
	store_close(db);
	return rc;
}

/* Runs `sente run` in dir with a budget (5 minutes) far beyond what the
 * test needs, until the store holds more than min_games games and a
 * model of id min_model or later, then stops it with SIGINT and asserts
 * that it stopped cleanly (exit 0). Driven by what was stored, not by a
 * time that a loaded machine might overrun; fails if that takes 4
 * minutes. */
static void run_until(const char *dir, int64_t min_games, int64_t min_model)
{
	char cmd[2048];
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		snprintf(cmd, sizeof(cmd), "exec %s run --dir %s --minutes 5 " SMALL " 2>>%s/log",
			 cli_test_bin(), dir, dir);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	int64_t games = 0, model = 0;
	int ok = 0, status;
	for (int i = 0; i < 960 && !ok; i++) {
		usleep(250 * 1000);
		ok = peek(dir, &games, &model) == 0 && games > min_games && model >= min_model;
		if (!ok && waitpid(pid, &status, WNOHANG) == pid)
			cr_assert_fail("sente run ended early (status %d) with %lld games, model %lld",
				       status, (long long)games, (long long)model);
	}
	kill(pid, SIGINT);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(ok, "after 4 minutes: %lld games (want > %lld), latest model %lld (want >= %lld)",
		  (long long)games, (long long)min_games, (long long)model, (long long)min_model);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "sente run stopped by SIGINT exits 0 (status %d)", status);
}

Test(run, short_run_then_resume, .timeout = 600)
{
	char dir[] = "/tmp/sente-run-XXXXXX", cmd[2048];
	cr_assert(mkdtemp(dir));
	run_until(dir, 0, 2);
	int64_t games1, model1;
	counts(dir, &games1, &model1);
	cr_assert(games1 > 0, "games were stored");
	cr_assert(model1 >= 2, "a trained model was registered (latest id %lld)", (long long)model1);
	char path[512];
	struct stat st;
	snprintf(path, sizeof(path), "%s/report.html", dir);
	cr_assert_eq(stat(path, &st), 0, "report written");
	snprintf(path, sizeof(path), "%s/checkpoints/learner.ckpt", dir);
	cr_assert_eq(stat(path, &st), 0, "checkpoint written");

	/* Kill it at some point of its second session, then resume. */
	pid_t pid = fork();
	if (pid == 0) {
		snprintf(cmd, sizeof(cmd), "exec %s run --dir %s --minutes 5 " SMALL " 2>>%s/log", cli_test_bin(), dir, dir);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	usleep(2500 * 1000);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	int64_t games2, model2;
	counts(dir, &games2, &model2); /* integrity checked inside */
	cr_assert(games2 >= games1, "no finished game lost");

	run_until(dir, games2, model2); /* resumes after the SIGKILL */
	int64_t games3, model3;
	counts(dir, &games3, &model3);
	cr_assert(games3 > games2, "the resumed run adds games");
	cr_assert(model3 >= model2);
	snprintf(cmd, sizeof(cmd), "grep -q resumed %s/log", dir);
	cr_assert_eq(system(cmd), 0, "the later sessions say they resumed");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	system(cmd);
}

Test(run, bad_options_exit_2)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "%s run --game chess 2>/dev/null", cli_test_bin());
	int st = system(cmd);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2);
	snprintf(cmd, sizeof(cmd), "%s run --minutes -3 2>/dev/null", cli_test_bin());
	st = system(cmd);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2);
	snprintf(cmd, sizeof(cmd), "%s run --train-precision int8 2>/dev/null", cli_test_bin());
	st = system(cmd);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "int8 is not a learner's arithmetic");
}

/* --train-precision bf16: the CPU learner trains in bf16 (its line in the
 * banner says so, and the run trains and saves networks) where the CPU has
 * AVX-512 BF16, and the run stops with the reason where it has not. */
Test(run, bf16_training, .timeout = 120)
{
	char dir[] = "/tmp/sente-run-XXXXXX", cmd[2048], out[256];
	cr_assert(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd),
		 "%s run --dir %s --minutes 0.15 --blocks 1 --channels 16 --parallel-games 8 "
		 "--visits 16 --cheap-visits 4 --positions 60 --window 2000 --batch 32 "
		 "--measure-every 0 --train-precision bf16 2>%s/log",
		 cli_test_bin(), dir, dir);
	int st = system(cmd);
	cr_assert(WIFEXITED(st));
	snprintf(cmd, sizeof(cmd), "cat %s/log", dir);
	char log[8192];
	cli_test_shell(cmd, log, sizeof(log));
	if (!__builtin_cpu_supports("avx512bf16")) {
		cr_assert_neq(WEXITSTATUS(st), 0, "%s", log);
		cr_assert(strstr(log, "bf16 training needs a CPU with AVX-512 BF16"), "%s", log);
	} else {
		cr_assert_eq(WEXITSTATUS(st), 0, "%s", log);
		cr_assert(strstr(log, "training cpu bf16"), "%s", log);
		snprintf(cmd, sizeof(cmd), "ls %s/models | wc -l", dir);
		cli_test_shell(cmd, out, sizeof(out));
		cr_assert_geq(atoi(out), 2, "a bf16 run saves its trained networks: %s", log);
	}
	/* Without --train-precision the CPU learner trains bf16 where AMX
	 * makes it fast (trainer_bf16_fast), else fp32; --precision fp32
	 * (self-play's) keeps the learner at fp32 too. */
	const char *def = trainer_bf16_fast() ? "training cpu bf16" : "training cpu fp32";
	const char *asks[2][2] = { { "", def }, { "--precision fp32", "training cpu fp32" } };
	for (int k = 0; k < 2; k++) {
		snprintf(cmd, sizeof(cmd),
			 "%s run --dir %s/def%d --minutes 0.05 --blocks 1 --channels 8 "
			 "--backend cpu --measure-every 0 %s 2>%s/logd",
			 cli_test_bin(), dir, k, asks[k][0], dir);
		st = system(cmd);
		snprintf(cmd, sizeof(cmd), "cat %s/logd", dir);
		cli_test_shell(cmd, log, sizeof(log));
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", log);
		cr_assert(strstr(log, asks[k][1]), "want '%s': %s", asks[k][1], log);
	}
	/* fp16 is the GPU learner's: where the run trains on the CPU it
	 * stops with the reason instead of training in fp32. */
	if (nn_cuda_device_count() == 0) {
		snprintf(cmd, sizeof(cmd),
			 "%s run --dir %s/fp16 --minutes 0.05 --blocks 1 --channels 8 "
			 "--train-precision fp16 2>%s/log16",
			 cli_test_bin(), dir, dir);
		st = system(cmd);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %d", st);
		snprintf(cmd, sizeof(cmd), "cat %s/log16", dir);
		cli_test_shell(cmd, log, sizeof(log));
		cr_assert(strstr(log, "fp16 is for the GPU learner"), "%s", log);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	system(cmd);
}

/* --minutes is the session's wall time, measurements and the closing work
 * included: a run of 0.3 minutes (18 s) ends within a few seconds of it,
 * and, piped, its progress line comes as a few plain lines with an ETA
 * (at most one per PROGRESS_PIPE_INTERVAL seconds), not a flood. */
Test(run, minutes_are_honoured, .timeout = 300)
{
	char dir[] = "/tmp/sente-run-XXXXXX", cmd[2048], out[256];
	cr_assert(mkdtemp(dir));
	const double minutes = 0.3, slack = 12;
	snprintf(cmd, sizeof(cmd),
		 "%s run --dir %s --minutes %g --blocks 1 --channels 8 --parallel-games 8 "
		 "--visits 16 --cheap-visits 4 --positions 60 --window 2000 --batch 32 "
		 "--eval-visits 8 --eval-positions 3 2>%s/log",
		 cli_test_bin(), dir, minutes, dir);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int st = system(cmd);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double took = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "sente run failed (status %d)", st);
	cr_assert(took <= minutes * 60 + slack, "--minutes %g took %.1f s", minutes, took);
	cr_assert(took >= minutes * 60 - 8, "--minutes %g ended early, after %.1f s", minutes, took);
	snprintf(cmd, sizeof(cmd), "grep -c '^[0-9]*:[0-9][0-9] .*ETA .*|' %s/log", dir);
	cr_assert_eq(cli_test_shell(cmd, out, sizeof(out)), 0, "no progress line in %s/log", dir);
	int lines = atoi(out);
	cr_assert(lines >= 1 && lines <= (int)(took / PROGRESS_PIPE_INTERVAL) + 2,
		  "%d progress lines in %.0f s", lines, took);
	snprintf(cmd, sizeof(cmd), "grep -c \"$(printf '\\r')\" %s/log", dir);
	cli_test_shell(cmd, out, sizeof(out));
	cr_assert_eq(atoi(out), 0, "no carriage returns when piped");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	system(cmd);
}

/* The run's config after a short session in dir ("" when none). */
static void run_config(const char *dir, char *config, size_t len)
{
	char path[512], err[256];
	snprintf(path, sizeof(path), "%s/sente.db", dir);
	config[0] = 0;
	store *db = store_open(path, err, sizeof(err));
	cr_assert(db, "%s", err);
	store_get_meta(db, STORE_META_RUN_CONFIG, config, len);
	store_close(db);
}

/* The config of a short run with the small network and args, in a
 * folder of its own that is removed after. */
static void short_run_config(const char *args, char *config, size_t len)
{
	char dir[] = "/tmp/sente-run-XXXXXX", cmd[2048];
	cr_assert(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd),
		 "%s run --dir %s --minutes 0.05 " SMALL " --measure-every 0 %s 2>/dev/null",
		 cli_test_bin(), dir, args);
	int st = system(cmd);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %d", args, st);
	run_config(dir, config, len);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	system(cmd);
}

/* A short run's flags and a line its config must hold. */
typedef struct {
	const char *args, *want;
} run_case;

/* A short run with args records `want` in its config. */
static void run_config_has(const char *args, const char *want)
{
	char config[4096];
	short_run_config(args, config, sizeof(config));
	cr_assert(strstr(config, want), "%s: want %s in %s", args, want, config);
}

/* The learning rate is constant unless asked otherwise; --lr-drops alone
 * asks for the step schedule (the constant one would ignore the drops),
 * and --lr-schedule given beside it wins. */
Test(run, lr_drops_alone_select_the_step_schedule, .timeout = 160)
{
	const struct {
		const char *args, *want[2];
	} cases[] = {
		{ "", { "\nlr-schedule constant\n", "\nlr-drops none\n" } },
		{ "--game go --size 5 --lr-drops 900", { "\nlr-schedule step\n", "\nlr-drops 900\n" } },
		{ "--lr-drops 7,9 --lr-gamma 0.5", { "\nlr-schedule step\n", "\nlr-gamma 0.5\n" } },
		{ "--lr-drops 7 --lr-schedule constant", { "\nlr-schedule constant\n", "\nlr-drops 7\n" } },
		{ "--lr-schedule cosine", { "\nlr-schedule cosine\n", "\nlr-drops none\n" } },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char config[4096];
		short_run_config(cases[i].args, config, sizeof(config));
		for (int k = 0; k < 2; k++)
			cr_assert(strstr(config, cases[i].want[k]), "%s: want %s in %s", cases[i].args,
				  cases[i].want[k], config);
	}
}

/* The temperature schedule is the game's unless given: Connect Four falls
 * from 1 after ply 20 to 0.3 at ply 30, Go steps to the most visited move
 * after as many plies as the board's size; a flag given overrides only
 * its own part. */
Test(run, temperature_schedule_default_depends_on_the_game, .timeout = 160)
{
	const run_case cases[] = {
		{ "", "\ntemperature-moves 20\ntemperature-end 30\ntemperature-floor 0.3\n" },
		{ "--game go --size 5", "\ntemperature-moves 5\ntemperature-end 5\ntemperature-floor 0\n" },
		{ "--temperature-floor 0", "\ntemperature-moves 20\ntemperature-end 30\ntemperature-floor 0\n" },
		{ "--temperature-moves 12 --temperature-end 12",
		  "\ntemperature-moves 12\ntemperature-end 12\ntemperature-floor 0.3\n" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_config_has(cases[i].args, cases[i].want);
}

/* Self-play's cpuct is the game's unless given: Connect Four 2, Go the
 * search's 1.1. */
Test(run, cpuct_default_depends_on_the_game, .timeout = 120)
{
	const run_case cases[] = {
		{ "", "\ncpuct 2\n" },
		{ "--game go --size 5", "\ncpuct 1.1\n" },
		{ "--cpuct 1.5", "\ncpuct 1.5\n" },
		{ "--game go --size 5 --cpuct 3", "\ncpuct 3\n" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_config_has(cases[i].args, cases[i].want);
}

/* Carrying games is Go's default and not Connect Four's; either flag
 * overrides it, and the run's config records what was in force. */
Test(run, carry_games_default_depends_on_the_game, .timeout = 120)
{
	const run_case cases[] = {
		{ "--game go --size 5", "\ncarry-games 1\n" },
		{ "--game go --size 5 --no-carry-games", "\ncarry-games 0\n" },
		{ "", "\ncarry-games 0\n" },
		{ "--carry-games", "\ncarry-games 1\n" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_config_has(cases[i].args, cases[i].want);
}
