/* main.c: `sente <command> [options]`, dispatching through a table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/db.h"

static const cli_command commands[] = {
	{ "bench", cli_bench, "measure speed, one JSON line per figure (board, ...)" },
	{ "gtp", cli_gtp, "speak GTP v2 on stdin/stdout (for GUIs and match tools)" },
	{ "analysis", cli_analysis, "KataGo's JSON analysis engine on stdin/stdout (for KaTrain)" },
	{ "run", cli_run, "the whole loop: self-play, training, strength, report" },
	{ "selfplay", cli_selfplay, "play self-play games into a run's database" },
	{ "match", cli_match, "play two models or GTP engines: Elo, LOS, SPRT; stored, resumable" },
	{ "tournament", cli_tournament, "round-robin or gauntlet of matches, rated together, with a plot" },
	{ "eval", cli_eval, "measure a run's saved models afterwards against its compute; compare runs" },
	{ "train", cli_train, "train a run's network on its database (under mpirun: data parallel)" },
	{ "serve", cli_serve, "a run's live dashboard over HTTP, with JSON endpoints" },
	{ "db", cli_db, "look into a run's database: stats, games, models, export-sgf, vacuum" },
	{ "demo", cli_demo, "play a short demonstration game (random legal moves)" },
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void print_help(FILE *f)
{
	fprintf(f, "sente %s: an AlphaZero-style engine for Go and Connect Four\n\n", SENTE_VERSION);
	fprintf(f, "usage: sente <command> [options]\n       sente <command> --help\n\ncommands:\n");
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\noptions:\n  -h, --help     this help\n  --version      print the version\n");
}

/* The network's compute threads (oneDNN on libgomp) spin after each batch
 * by default, on the same two cores the search threads need: measured here,
 * 9x9 self-play ran at 1,800 evaluations/s spinning and 2,900 passive, a
 * 19x19 search at 630-770 playouts/s and 1,050-1,080. libgomp reads
 * OMP_WAIT_POLICY once, when it is loaded, before main; so when the user
 * has not set it, sente sets PASSIVE and starts itself again. */
static void omp_passive(char **argv)
{
	if (getenv("OMP_WAIT_POLICY"))
		return;
	/* The binary's own path, so that the process keeps its name (ps,
	 * pkill) rather than becoming "exe". */
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0 || n >= (ssize_t)sizeof(self) - 1)
		return; /* no /proc: carry on with the default policy */
	self[n] = 0;
	if (setenv("OMP_WAIT_POLICY", "PASSIVE", 1) != 0)
		return;
	execv(self, argv);
}

int main(int argc, char **argv)
{
	omp_passive(argv);
	if (argc < 2) {
		print_help(stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		print_help(stdout);
		return 0;
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("sente %s\n", SENTE_VERSION);
		return 0;
	}
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (!strcmp(cmd, commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	if (cmd[0] == '-')
		fprintf(stderr, "sente: unknown option '%s' (see 'sente --help')\n", cmd);
	else
		fprintf(stderr, "sente: unknown command '%s' (see 'sente --help')\n", cmd);
	return 2;
}
