/* cli.h: the `sente` subcommands. Each lives in its own file and has the
 * signature of main(); it returns the process exit code: 0 success, 1 a
 * failure of the work itself, 2 a usage error. */
#ifndef SENTE_CLI_H
#define SENTE_CLI_H

#include <stdbool.h>


#define SENTE_VERSION "0.1.0"

typedef struct cli_command {
	const char *name;            /* as typed after `sente` */
	int (*run)(int argc, char **argv); /* argv[0] is the command name */
	const char *summary;         /* one line for `sente --help` */
} cli_command;

int cli_bench(int argc, char **argv);
int cli_demo(int argc, char **argv);
int cli_gtp(int argc, char **argv);
int cli_analysis(int argc, char **argv);
int cli_selfplay(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_serve(int argc, char **argv);
int cli_match(int argc, char **argv);
int cli_tournament(int argc, char **argv);
int cli_train(int argc, char **argv);
int cli_eval(int argc, char **argv);

/* The helpers below live in cli/opt.c, with the option tables. */
/* Reports a usage error for `cmd` on stderr and returns 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* True when argv holds -h or --help. */
bool cli_wants_help(int argc, char **argv);
/* Parses a whole decimal integer in [lo, hi]; false otherwise. */
bool cli_parse_int(const char *s, long lo, long hi, long *out);
/* Parses a real number; false when s is not one. */
bool cli_parse_double(const char *s, double *out);

#endif
