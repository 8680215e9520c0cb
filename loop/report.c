/* report.c: the run report (see report.h). */
#include "loop/report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/fileio.h"
#include "serve/serve.h"

void report_chart(FILE *f, const char *title, const char *xlabel, const report_series *s, int n,
		  bool percent)
{
	double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
	int points = 0;
	for (int i = 0; i < n; i++)
		for (int k = 0; k < s[i].n; k++) {
			x0 = fmin(x0, s[i].x[k]);
			x1 = fmax(x1, s[i].x[k]);
			y0 = fmin(y0, s[i].y[k]);
			y1 = fmax(y1, s[i].y[k]);
			points++;
		}
	fprintf(f, "<h2>%s</h2>\n", title);
	if (points == 0) {
		fprintf(f, "<p>No data yet.</p>\n");
		return;
	}
	if (percent)
		y0 = 0;
	if (x1 <= x0)
		x1 = x0 + 1;
	if (y1 <= y0)
		y1 = y0 + 1e-9 + fabs(y0) * 0.1;
	const double W = 640, H = 280, L = 60, R = 20, T = 10, B = 40;
	fprintf(f, "<svg width=\"%.0f\" height=\"%.0f\" xmlns=\"http://www.w3.org/2000/svg\">\n", W, H);
	fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#999\"/>\n",
		L, T, W - L - R, H - T - B);
	for (int k = 0; k <= 4; k++) {
		double yv = y0 + (y1 - y0) * k / 4, py = H - B - (H - T - B) * k / 4;
		fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"end\">%.3g%s</text>\n",
			L - 4, py + 4, percent ? yv * 100 : yv, percent ? "%" : "");
		double xv = x0 + (x1 - x0) * k / 4, px = L + (W - L - R) * k / 4;
		fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"middle\">%.4g</text>\n",
			px, H - B + 16, xv);
	}
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"12\" text-anchor=\"middle\">%s</text>\n",
		(L + W - R) / 2, H - 6, xlabel);
	for (int i = 0; i < n; i++) {
		if (s[i].n == 0)
			continue;
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", s[i].color);
		for (int k = 0; k < s[i].n; k++)
			fprintf(f, "%.1f,%.1f ", L + (W - L - R) * (s[i].x[k] - x0) / (x1 - x0),
				H - B - (H - T - B) * (s[i].y[k] - y0) / (y1 - y0));
		fprintf(f, "\"/>\n");
	}
	fprintf(f, "</svg>\n<p>");
	for (int i = 0; i < n; i++)
		if (s[i].n)
			fprintf(f, "<span style=\"color:%s\">&#9632;</span> %s (last %.4g%s) &nbsp; ",
				s[i].color, s[i].label, percent ? s[i].y[s[i].n - 1] * 100 : s[i].y[s[i].n - 1],
				percent ? "%" : "");
	fprintf(f, "</p>\n");
}

int report_write(store *db, const char *path, const char *game_name, char *err, size_t errlen)
{
	/* The dashboard of `sente serve`, its data embedded: one page. */
	(void)game_name;
	return serve_page_save(db, path, err, errlen);
}

/* ---- a tournament's page ------------------------------------------------- */

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

/* The page's head and table, best first. */
static void html_table(FILE *f, const match_player *pl, const tournament_result *r)
{
	fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>sente tournament</title>\n"
		"<style>body{font-family:sans-serif;max-width:720px;margin:2em auto}"
		"td,th{padding:2px 8px;text-align:right}</style></head><body>\n"
		"<h1>sente tournament</h1>\n<p>Bradley-Terry maximum likelihood, %s at 0 Elo; "
		"intervals are 95%%.</p>\n<table>\n<tr><th>#</th><th style=\"text-align:left\">player</th>"
		"<th>Elo</th><th>&plusmn;</th><th>games</th><th>score</th><th>step</th></tr>\n",
		pl[0].name);
	for (int k = 0; k < r->players; k++) {
		const tournament_standing *t = &r->standings[k];
		const match_player *p = &pl[t->player];
		fprintf(f, "<tr><td>%d</td><td style=\"text-align:left\">", k + 1);
		html_escape(f, p->name);
		fprintf(f, "</td><td>%+.0f</td><td>%.0f</td><td>%.0f</td><td>%.1f%%</td><td>", t->elo,
			1.96 * t->se, t->games, t->games > 0 ? 100 * t->points / t->games : 0.0);
		if (p->train_step >= 0)
			fprintf(f, "%lld", (long long)p->train_step);
		fprintf(f, "</td></tr>\n");
	}
	fprintf(f, "</table>\n");
}

/* Elo against training step for the models that have one, with the
 * interval as two thin lines. */
static void html_plot(FILE *f, const match_player *pl, const tournament_result *r)
{
	const tournament_standing *of[TOURNAMENT_MAX_PLAYERS]; /* by player */
	int order[TOURNAMENT_MAX_PLAYERS], m = 0;
	for (int k = 0; k < r->players; k++)
		of[r->standings[k].player] = &r->standings[k];
	/* The models with a step, in the players' order, then sorted by step
	 * (insertion: equal steps keep that order). */
	for (int i = 0; i < r->players; i++)
		if (pl[i].kind == MATCH_PLAYER_MODEL && pl[i].train_step >= 0)
			order[m++] = i;
	for (int a = 1; a < m; a++)
		for (int b = a; b > 0 && pl[order[b]].train_step < pl[order[b - 1]].train_step; b--) {
			int t = order[b];
			order[b] = order[b - 1];
			order[b - 1] = t;
		}
	if (m < 2) {
		fprintf(f, "<p>No plot: fewer than two players are models with a training step.</p>\n");
		return;
	}
	double x[TOURNAMENT_MAX_PLAYERS], y[3][TOURNAMENT_MAX_PLAYERS];
	for (int k = 0; k < m; k++) {
		const tournament_standing *t = of[order[k]];
		x[k] = (double)pl[order[k]].train_step;
		y[0][k] = t->elo;
		y[1][k] = t->elo + 1.96 * t->se;
		y[2][k] = t->elo - 1.96 * t->se;
	}
	report_series s[3] = {
		{ .label = "Elo", .color = "#1f77b4", .x = x, .y = y[0], .n = m },
		{ .label = "95% interval, upper", .color = "#aec7e8", .x = x, .y = y[1], .n = m },
		{ .label = "95% interval, lower", .color = "#aec7e8", .x = x, .y = y[2], .n = m },
	};
	report_chart(f, "Elo against training step", "training step", s, 3, false);
}

int report_tournament(const char *path, const match_player *pl, const tournament_result *r,
		      char *err, size_t errlen)
{
	char *page = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&page, &len);
	if (!f) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	html_table(f, pl, r);
	html_plot(f, pl, r);
	fprintf(f, "</body></html>\n");
	if (fclose(f) != 0 || !page) {
		free(page);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int rc = fileio_write_text(path, page, err, errlen);
	free(page);
	return rc;
}
