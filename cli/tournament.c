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
#include "match/elo.h"

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

#define MAX_PLAYERS 64

typedef struct row {
	int idx;       /* player */
	double elo;    /* rating */
} row;

static int by_elo(const void *x, const void *y)
{
	const row *a = x, *b = y;
	return a->elo < b->elo ? 1 : a->elo > b->elo ? -1 : a->idx - b->idx;
}

static void html_escape(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else
			fputc(*s, f);
	}
}

static int write_html(const char *path, const match_player *pl, int n, const row *rows,
		      const double *se, const double *games, const double *points, int anchor,
		      char *err, size_t errlen)
{
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f) {
		snprintf(err, errlen, "cannot write %.900s", tmp);
		return -1;
	}
	fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>sente tournament</title>\n"
		"<style>body{font-family:sans-serif;max-width:720px;margin:2em auto}"
		"td,th{padding:2px 8px;text-align:right}</style></head><body>\n"
		"<h1>sente tournament</h1>\n<p>Bradley-Terry maximum likelihood, %s at 0 Elo; "
		"intervals are 95%%.</p>\n<table>\n<tr><th>#</th><th style=\"text-align:left\">player</th>"
		"<th>Elo</th><th>&plusmn;</th><th>games</th><th>score</th><th>step</th></tr>\n",
		pl[anchor].name);
	for (int r = 0; r < n; r++) {
		int i = rows[r].idx;
		fprintf(f, "<tr><td>%d</td><td style=\"text-align:left\">", r + 1);
		html_escape(f, pl[i].name);
		fprintf(f, "</td><td>%+.0f</td><td>%.0f</td><td>%.0f</td><td>%.1f%%</td><td>", rows[r].elo,
			1.96 * se[i], games[i], games[i] > 0 ? 100 * points[i] / games[i] : 0.0);
		if (pl[i].train_step >= 0)
			fprintf(f, "%lld", (long long)pl[i].train_step);
		fprintf(f, "</td></tr>\n");
	}
	fprintf(f, "</table>\n");
	/* Elo against training step, with the interval as two thin lines. */
	report_series s[3] = {
		{ .label = "Elo", .color = "#1f77b4" },
		{ .label = "95% interval, upper", .color = "#aec7e8" },
		{ .label = "95% interval, lower", .color = "#aec7e8" },
	};
	int k = 0;
	for (int t = 0; t < 3; t++) {
		s[t].x = calloc((size_t)n, sizeof(double));
		s[t].y = calloc((size_t)n, sizeof(double));
	}
	if (s[0].x && s[0].y && s[1].x && s[1].y && s[2].x && s[2].y) {
		/* By step: insertion order of a sort on train_step. */
		int order[MAX_PLAYERS], m = 0;
		for (int i = 0; i < n; i++)
			if (pl[i].kind == MATCH_PLAYER_MODEL && pl[i].train_step >= 0)
				order[m++] = i;
		for (int a = 1; a < m; a++)
			for (int b = a; b > 0 && pl[order[b]].train_step < pl[order[b - 1]].train_step; b--) {
				int t = order[b];
				order[b] = order[b - 1];
				order[b - 1] = t;
			}
		double rating[MAX_PLAYERS];
		for (int r = 0; r < n; r++)
			rating[rows[r].idx] = rows[r].elo;
		for (k = 0; k < m; k++) {
			int i = order[k];
			for (int t = 0; t < 3; t++)
				s[t].x[k] = (double)pl[i].train_step;
			s[0].y[k] = rating[i];
			s[1].y[k] = rating[i] + 1.96 * se[i];
			s[2].y[k] = rating[i] - 1.96 * se[i];
		}
		if (k >= 2) {
			for (int t = 0; t < 3; t++)
				s[t].n = k;
			report_chart(f, "Elo against training step", "training step", s, 3, false);
		} else {
			fprintf(f, "<p>No plot: fewer than two players are models with a training step.</p>\n");
		}
	}
	for (int t = 0; t < 3; t++) {
		free(s[t].x);
		free(s[t].y);
	}
	fprintf(f, "</body></html>\n");
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		snprintf(err, errlen, "cannot write %s", path);
		remove(tmp);
		return -1;
	}
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
	if (n < 2 || (base && n < 2))
		return cli_usage_error("tournament", "give at least two players (or BASE and one more)");
	if (!cli_match_finish("tournament", &s))
		return 2;
	char err[1024];
	store *db = store_open(s.db, err, sizeof(err));
	if (!db) {
		fprintf(stderr, "sente tournament: %s\n", err);
		return 1;
	}
	rc = 2;
	static match_player pl[MAX_PLAYERS];
	for (int i = 0; i < n; i++)
		if (match_player_parse(names[i], db, &pl[i], err, sizeof(err)) != 0) {
			cli_usage_error("tournament", "%s", err);
			goto out;
		}
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (!strcmp(pl[i].spec, pl[j].spec)) {
				cli_usage_error("tournament", "%s is given twice", pl[i].spec);
				goto out;
			}
	rc = 1;
	static double score[MAX_PLAYERS * MAX_PLAYERS], games[MAX_PLAYERS * MAX_PLAYERS];
	double tot_games[MAX_PLAYERS] = { 0 }, tot_points[MAX_PLAYERS] = { 0 };
	int matches = 0, faults = 0, protocol = 0;
	for (int i = 0; i < n; i++) {
		for (int j = i + 1; j < n; j++) {
			if (base && i != 0)
				continue;
			if (!s.quiet)
				fprintf(stderr, "sente tournament: %s against %s\n", pl[i].spec, pl[j].spec);
			match_summary sum;
			if (match_run(db, &pl[i], &pl[j], &s.o, cli_match_progress, &s.quiet, &sum, err,
				      sizeof(err)) != 0) {
				fprintf(stderr, "sente tournament: %s against %s: %s\n", pl[i].spec, pl[j].spec, err);
				goto out;
			}
			cli_match_print(&pl[i], &pl[j], &sum, &s.o);
			double pts = sum.wins + 0.5 * sum.draws;
			score[i * n + j] += pts;
			score[j * n + i] += sum.games - pts;
			games[i * n + j] += sum.games;
			games[j * n + i] += sum.games;
			tot_games[i] += sum.games;
			tot_games[j] += sum.games;
			tot_points[i] += pts;
			tot_points[j] += sum.games - pts;
			faults += sum.engine_faults;
			protocol += sum.protocol_errors;
			matches++;
			if (strcmp(sum.status, "stopped") == 0) {
				fprintf(stderr, "sente tournament: stopped; run the same command to resume\n");
				goto out;
			}
		}
	}
	/* Model names from the files' learner steps, once the matches loaded them. */
	double rating[MAX_PLAYERS], se[MAX_PLAYERS];
	elo_ratings er;
	if (elo_ratings_fit(n, score, games, 1.0, 0, &er, rating, se) != 0) {
		fprintf(stderr, "sente tournament: the ratings cannot be fitted (a player without games?)\n");
		goto out;
	}
	row rows[MAX_PLAYERS];
	for (int i = 0; i < n; i++)
		rows[i] = (row){ i, rating[i] };
	qsort(rows, (size_t)n, sizeof(row), by_elo);
	fprintf(stderr, "\n%d matches, %d players; Elo relative to %s (Bradley-Terry ML, 95%% intervals)\n",
		matches, n, pl[0].name);
	fprintf(stderr, "%3s  %-40s %6s %6s %6s %7s %8s\n", "#", "player", "Elo", "+-", "games", "score", "step");
	for (int r = 0; r < n; r++) {
		int i = rows[r].idx;
		char step[32] = "";
		if (pl[i].train_step >= 0)
			snprintf(step, sizeof(step), "%lld", (long long)pl[i].train_step);
		fprintf(stderr, "%3d  %-40.40s %+6.0f %6.0f %6.0f %6.1f%% %8s\n", r + 1, pl[i].spec, rows[r].elo,
			1.96 * se[i], tot_games[i], tot_games[i] > 0 ? 100 * tot_points[i] / tot_games[i] : 0.0, step);
		printf("{\"rank\":%d,\"player\":\"", r + 1);
		for (const char *c = pl[i].spec; *c; c++)
			printf(*c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
		printf("\",\"elo\":%.1f,\"interval\":%.1f,\"games\":%.0f,\"score\":%.4f,\"step\":%lld}\n",
		       rows[r].elo, 1.96 * se[i], tot_games[i],
		       tot_games[i] > 0 ? tot_points[i] / tot_games[i] : 0.0, (long long)pl[i].train_step);
	}
	if (faults)
		fprintf(stderr, "engine faults %d (protocol errors %d)\n", faults, protocol);
	if (write_html(html, pl, n, rows, se, tot_games, tot_points, 0, err, sizeof(err)) != 0) {
		fprintf(stderr, "sente tournament: %s\n", err);
		goto out;
	}
	fprintf(stderr, "table and plot in %s\n", html);
	rc = 0;
out:
	store_close(db);
	return rc;
}
