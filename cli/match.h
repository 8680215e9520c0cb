/* match.h (cli): the options `sente match` and `sente tournament` share,
 * and their progress lines. */
#ifndef SENTE_CLI_MATCH_H
#define SENTE_CLI_MATCH_H

#include <stdbool.h>

#include "match/match.h"

typedef struct cli_match_settings {
	match_options o;        /* filled by cli_match_finish */
	game_kind kind;         /* --game */
	long size;              /* --size, -1 when not given */
	double komi;            /* --komi, NAN when not given */
	long games, parallel, visits, visits_b, openings, max_moves; /* -1 when not given */
	const char *db;         /* --db */
	bool quiet;             /* -q */
} cli_match_settings;

void cli_match_settings_init(cli_match_settings *s);
/* Parses the shared option at argv[*i] (advancing *i past its value):
 * 1 taken, 0 not one of them, -1 a usage error (already reported). */
int cli_match_option(const char *cmd, int argc, char **argv, int *i, cli_match_settings *s);
/* Applies the defaults that depend on the game. false on a usage error. */
bool cli_match_finish(const char *cmd, cli_match_settings *s);
/* The per-game progress callback (ctx: a bool *, quiet). */
void cli_match_progress(void *ctx, const match_summary *s, const store_match_game *g);
/* Prints the summary of a finished match (human lines on stderr). */
void cli_match_print(const match_player *a, const match_player *b, const match_summary *s,
		     const match_options *o);

#endif
