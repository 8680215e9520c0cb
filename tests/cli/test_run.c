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

#include "tests/cli/cli_util.h"
#include "data/store.h"

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

Test(run, short_run_then_resume, .timeout = 240)
{
	char dir[] = "/tmp/sente-run-XXXXXX", cmd[2048];
	cr_assert(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "%s run --dir %s --minutes 0.15 " SMALL " 2>%s/log", cli_test_bin(), dir, dir);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
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

	snprintf(cmd, sizeof(cmd), "%s run --dir %s --minutes 0.1 " SMALL " 2>>%s/log", cli_test_bin(), dir, dir);
	cr_assert_eq(system(cmd), 0, "resume after SIGKILL: %s", cmd);
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
}
