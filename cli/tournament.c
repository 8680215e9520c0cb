/* tournament.c: `sente tournament`, a round-robin or a gauntlet of matches,
 * rated together by maximum likelihood, with a table and a plot. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/match.h"
#include "loop/report.h"
#include "data/store.h"
#include "match/tournament.h"

static const char tournament_about[] =
	"Plays a match between every pair of players (round-robin), or between\n"
	"BASE and each of the others (--gauntlet), then rates everyone together\n"
	"by maximum likelihood (Bradley-Terry, as BayesElo and Ordo do, with one\n"
	"virtual draw per pair as a prior), the first player (or BASE) at 0 Elo.\n"
	"Prints a table with 95% intervals and writes an HTML page with the table\n"
	"and a plot of Elo against training step for the models that have one\n"
	"(the checkpoints of a run). Players are given as for `sente match`:\n"
	"model files, model ids of --db, or gtp:\"COMMAND\". Every match is stored\n"
	"and resumed like a `sente match`; the options are those of `sente match`\n"
	"except --visits-b, and --gauntlet and --html.\n";

#define MAX_PLAYERS TOURNAMENT_MAX_PLAYERS

/* The table on stderr and one JSON line per player on stdout, best first. */
static void print_standings(const match_player *pl, const tournament_result *r)
{
	fprintf(stderr, "\n%d matches, %d players; Elo relative to %s (Bradley-Terry ML, 95%% intervals)\n",
		r->matches, r->players, pl[0].name);
	fprintf(stderr, "%3s  %-40s %6s %6s %6s %7s %8s\n", "#", "player", "Elo", "+-", "games", "score", "step");
	for (int k = 0; k < r->players; k++) {
		const tournament_standing *t = &r->standings[k];
		const match_player *p = &pl[t->player];
		double score = t->games > 0 ? t->points / t->games : 0.0;
		char step[32] = "";
		if (p->train_step >= 0)
			snprintf(step, sizeof(step), "%lld", (long long)p->train_step);
		fprintf(stderr, "%3d  %-40.40s %+6.0f %6.0f %6.0f %6.1f%% %8s\n", k + 1, p->spec, t->elo,
			1.96 * t->se, t->games, 100 * score, step);
		printf("{\"rank\":%d,\"player\":\"", k + 1);
		for (const char *c = p->spec; *c; c++)
			printf(*c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
		printf("\",\"elo\":%.1f,\"interval\":%.1f,\"games\":%.0f,\"score\":%.4f,\"step\":%lld}\n",
		       t->elo, 1.96 * t->se, t->games, score, (long long)p->train_step);
	}
	if (r->engine_faults)
		fprintf(stderr, "engine faults %d (protocol errors %d)\n", r->engine_faults,
			r->protocol_errors);
}

/* tournament_match_fn: a line before each match, the summary after it
 * (ctx: the settings). */
static void on_match(void *ctx, const match_player *a, const match_player *b, const match_summary *s)
{
	cli_match_settings *m = ctx;
	progress_clear(&m->prog);
	if (!s && !m->quiet)
		fprintf(stderr, "sente tournament: %s against %s\n", a->spec, b->spec);
	if (s)
		cli_match_print(a, b, s, &m->o);
}

/* The players from their names: 0, or 2 (a usage error, reported). */
static int parse_players(const char *const *names, int n, store *db, match_player *pl)
{
	char err[1024];
	for (int i = 0; i < n; i++)
		if (match_player_parse(names[i], db, &pl[i], err, sizeof(err)) != 0)
			return cli_usage_error("tournament", "%s", err);
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (!strcmp(pl[i].spec, pl[j].spec))
				return cli_usage_error("tournament", "%s is given twice", pl[i].spec);
	return 0;
}

int cli_tournament(int argc, char **argv)
{
	cli_match_settings s;
	cli_match_settings_init(&s);
	s.games = 20;
	const char *names[MAX_PLAYERS], *base = NULL, *html = "tournament.html";
	int n = 0;
	cli_opt opts[2 + CLI_MATCH_OPTS] = {
		CLI_OPT_STRING("--gauntlet", NULL, &base, "BASE",
			       "BASE against each player instead of round-robin"),
		CLI_OPT_STRING("--html", NULL, &html, "FILE", "the page with table and plot"),
	};
	char too_many[64];
	snprintf(too_many, sizeof(too_many), "at most %d players; '%%s' is one more", MAX_PLAYERS - 1);
	const cli_spec spec = {
		.cmd = "tournament", .usage = "PLAYER PLAYER... [--gauntlet BASE] [options]",
		.about = tournament_about, .opts = opts, .n_opts = 2 + cli_match_opts(&s, false, opts + 2),
		.after = "One JSON line per player on stdout, best first.\n",
		.pos = names, .pos_max = MAX_PLAYERS - 1, .pos_n = &n, .pos_extra = too_many,
	};
	int rc;
	if (!cli_opt_parse(&spec, argc, argv, &rc))
		return rc;
	if (base) {
		/* The base is player 0. */
		memmove(names + 1, names, sizeof(names[0]) * (size_t)n);
		names[0] = base;
		n++;
	}
	if (n < 2)
		return cli_usage_error("tournament", "give at least two players (or BASE and one more)");
	char err[1024];
	store *db = store_open(s.db, err, sizeof(err));
	if (!db) {
		fprintf(stderr, "sente tournament: %s\n", err);
		return 1;
	}
	static match_player pl[MAX_PLAYERS];
	static tournament_result res;
	rc = parse_players(names, n, db, pl);
	if (rc == 0 && !cli_match_finish("tournament", &s, pl, n))
		rc = 2;
	tournament_options to = { .match = s.o, .gauntlet = base != NULL,
				  .progress = cli_match_progress, .progress_ctx = &s,
				  .on_match = on_match, .match_ctx = &s };
	int st = rc == 0 ? tournament_run(db, pl, n, &to, &res, err, sizeof(err)) : TOURNAMENT_DONE;
	progress_clear(&s.prog);
	store_close(db);
	if (rc != 0)
		return rc;
	if (st == TOURNAMENT_STOPPED)
		fprintf(stderr, "sente tournament: stopped; run the same command to resume\n");
	if (st == TOURNAMENT_FAILED)
		fprintf(stderr, "sente tournament: %s\n", err);
	if (st != TOURNAMENT_DONE)
		return 1;
	print_standings(pl, &res);
	if (report_tournament(html, pl, &res, err, sizeof(err)) != 0) {
		fprintf(stderr, "sente tournament: %s\n", err);
		return 1;
	}
	fprintf(stderr, "table and plot in %s\n", html);
	return 0;
}
