/* match.h (cli): the options `sente match` and `sente tournament` share,
 * and their progress lines. */
#ifndef SENTE_CLI_MATCH_H
#define SENTE_CLI_MATCH_H

#include <stdbool.h>

#include "cli/opt.h"
#include "match/match.h"

typedef struct cli_match_settings {
	match_options o;        /* filled by cli_match_finish */
	game_kind kind;         /* --game */
	bool game_given;        /* --game was given (else the models' game) */
	long size;              /* --size, -1 when not given */
	double komi;            /* --komi, NAN when not given */
	long games, parallel, visits; /* --games, --parallel, --visits */
	long visits_b;          /* --visits-b, 0 when not given */
	long openings, max_moves; /* -1 when not given: they depend on the game */
	const char *db;         /* --db */
	bool quiet;             /* -q */
	progress prog;          /* the progress line on stderr (none when quiet), set up by
				 * cli_match_finish and updated by the match */
} cli_match_settings;

void cli_match_settings_init(cli_match_settings *s);
/* The most entries cli_match_opts writes. */
#define CLI_MATCH_OPTS 24
/* Writes the option table both commands share, pointing into s, into opts
 * (room for CLI_MATCH_OPTS); --visits-b only when with_visits_b. Returns
 * the number of entries. Call after cli_match_settings_init and any change
 * to the defaults, so that help shows them. */
int cli_match_opts(cli_match_settings *s, bool with_visits_b, cli_opt *opts);
/* Takes the game and board from the model players pl[0..n-1] unless --game
 * and --size say them (models of different games are a usage error), then
 * applies the defaults that depend on the game. false on a usage error. */
bool cli_match_finish(const char *cmd, cli_match_settings *s, const match_player *pl, int n);
/* The per-game progress callback (ctx: the cli_match_settings): a line per
 * game unless quiet, the progress line cleared first. */
void cli_match_progress(void *ctx, const match_summary *s, const store_match_game *g);
/* Prints the summary of a finished match (human lines on stderr). */
void cli_match_print(const match_player *a, const match_player *b, const match_summary *s,
		     const match_options *o);

#endif
