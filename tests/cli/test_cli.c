/* The `sente` command line: help, unknown commands and options, exit codes.
 * Runs the binary named by $SENTE_BIN (the Makefile sets it). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cli/cli_util.h"

static char out[1 << 16];

Test(cli, help_lists_commands)
{
	cr_assert_eq(cli_test_run("--help", out, sizeof(out)), 0);
	cr_assert(strstr(out, "usage: sente"), "%s", out);
	cr_assert(strstr(out, "bench"));
	cr_assert(strstr(out, "demo"));
}

Test(cli, unknown_command_exits_2)
{
	cr_assert_eq(cli_test_run("frobnicate", out, sizeof(out)), 2);
	cr_assert(strstr(out, "unknown command 'frobnicate'"), "%s", out);
	cr_assert_eq(cli_test_run("--frobnicate", out, sizeof(out)), 2);
	cr_assert(strstr(out, "unknown option"), "%s", out);
	cr_assert_eq(cli_test_run("", out, sizeof(out)), 2, "no command is a usage error");
}

Test(cli, unknown_flag_exits_2)
{
	cr_assert_eq(cli_test_run("bench board --bogus", out, sizeof(out)), 2);
	cr_assert(strstr(out, "--bogus"), "%s", out);
	cr_assert_eq(cli_test_run("bench board --sizes 4", out, sizeof(out)), 2);
	cr_assert_eq(cli_test_run("bench nosuch", out, sizeof(out)), 2);
	cr_assert_eq(cli_test_run("demo --game chess", out, sizeof(out)), 2);
	cr_assert(strstr(out, "chess"), "%s", out);
	cr_assert_eq(cli_test_run("demo --size", out, sizeof(out)), 2, "a flag missing its value");
}

Test(cli, gtp_komi_that_is_not_a_number_exits_2)
{
	const char *bad[] = { "nan", "inf", "-inf" };
	for (int i = 0; i < 3; i++) {
		char args[64];
		snprintf(args, sizeof(args), "gtp -q --komi %s </dev/null", bad[i]);
		cr_assert_eq(cli_test_run(args, out, sizeof(out)), 2, "%s: %s", args, out);
		cr_assert(strstr(out, "--komi"), "%s", out);
	}
}

/* Weights that are not a regular file (a FIFO nobody writes, a folder) are
 * refused at once, not waited on. */
Test(cli, gtp_weights_must_be_a_regular_file, .timeout = 30)
{
	char dir[] = "/tmp/sente-cli-XXXXXX", fifo[64], args[256];
	cr_assert(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/weights", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	const char *paths[] = { fifo, dir };
	for (int i = 0; i < 2; i++) {
		snprintf(args, sizeof(args), "gtp -q -w %s </dev/null", paths[i]);
		int rc = cli_test_run_within(10, args, out, sizeof(out));
		cr_assert_eq(rc, 1, "%s: exit %d: %s", args, rc, out);
		cr_assert(strstr(out, "not a regular file"), "%s: %s", args, out);
	}
	unlink(fifo);
	rmdir(dir);
}

/* A genmove whose tree fills says so, with the remedy; one that fits
 * does not. */
Test(cli, gtp_says_when_the_tree_is_full, .timeout = 60)
{
	char cmds[] = "/tmp/sente-cli-tree-XXXXXX", args[256];
	int fd = mkstemp(cmds);
	cr_assert(fd >= 0);
	const char text[] = "genmove b\nquit\n";
	cr_assert_eq(write(fd, text, sizeof(text) - 1), (ssize_t)(sizeof(text) - 1));
	close(fd);
	snprintf(args, sizeof(args), "gtp --memory 16 -v 100000 --size 9 < %s", cmds);
	int rc = cli_test_run_within(30, args, out, sizeof(out));
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert(strstr(out, "search tree is full (--memory 16 MB)"), "%s", out);
	snprintf(args, sizeof(args), "gtp --memory 16 -v 200 --size 9 < %s", cmds);
	rc = cli_test_run_within(30, args, out, sizeof(out));
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert_null(strstr(out, "search tree is full"), "%s", out);
	unlink(cmds);
}

Test(cli, command_help)
{
	cr_assert_eq(cli_test_run("bench --help", out, sizeof(out)), 0);
	cr_assert(strstr(out, "board"));
	cr_assert_eq(cli_test_run("demo --help", out, sizeof(out)), 0);
	cr_assert(strstr(out, "--game"));
}

Test(cli, bench_board_prints_json)
{
	cr_assert_eq(cli_test_run("bench board --sizes 9 --seconds 0.05", out, sizeof(out)), 0);
	cr_assert(strstr(out, "{\"bench\":\"board\",\"game\":\"go\",\"size\":9,\"games_per_s\":"), "%s", out);
	cr_assert(strstr(out, "\"game\":\"connect4\""), "%s", out);
}

Test(cli, demo_plays_to_a_result)
{
	cr_assert_eq(cli_test_run("demo --game connect4 --quiet --seed 3", out, sizeof(out)), 0);
	cr_assert(strstr(out, "result: "), "%s", out);
	cr_assert_eq(cli_test_run("demo --game go --size 7 --quiet", out, sizeof(out)), 0);
	cr_assert(strstr(out, "result: "), "%s", out);
}

Test(cli, selfplay_games_per_thread, .timeout = 120)
{
	char dir[] = "/tmp/sente-cli-gpt-XXXXXX", args[512], cmd[600];
	cr_assert(mkdtemp(dir));
	cr_assert_eq(cli_test_run("selfplay --db x --games-per-thread 0", out, sizeof(out)), 2, "%s", out);
	/* 6 games, 4 at once on one worker thread (uniform policy). */
	snprintf(args, sizeof(args),
		 "selfplay --db %s/sp.db --game connect4 --games 6 --parallel-games 4 "
		 "--games-per-thread 4 --visits 8 --cheap-visits 0 --seed 3 -q",
		 dir);
	cr_assert_eq(cli_test_run_within(100, args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "\"games\":6"), "%s", out);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(cli_test_shell(cmd, out, sizeof(out)), 0);
}
