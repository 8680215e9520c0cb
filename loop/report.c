/* report.c: the run report (see report.h). */
#include "loop/report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "loop/loop.h"

typedef report_series series;

typedef struct collect_ctx {
	series *s;     /* filled */
	bool by_time;  /* x = minutes since t0 instead of step */
	double t0;     /* first metric time */
} collect_ctx;

static int on_metric(void *ctx, int64_t step, double t, double value)
{
	collect_ctx *c = ctx;
	series *s = c->s;
	if (s->n == s->cap) {
		int cap = s->cap ? s->cap * 2 : 256;
		double *x = realloc(s->x, sizeof(double) * (size_t)cap);
		if (!x)
			return 1;
		s->x = x;
		double *y = realloc(s->y, sizeof(double) * (size_t)cap);
		if (!y)
			return 1;
		s->y = y;
		s->cap = cap;
	}
	s->x[s->n] = c->by_time ? (t - c->t0) / 60 : (double)step;
	s->y[s->n] = value;
	s->n++;
	return 0;
}

static int first_time(void *ctx, int64_t step, double t, double value)
{
	double *t0 = ctx;
	if (*t0 == 0 || t < *t0)
		*t0 = t;
	return 0;
}

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

static void load(store *db, series *s, int n, bool by_time, double t0)
{
	for (int i = 0; i < n; i++) {
		collect_ctx c = { .s = &s[i], .by_time = by_time, .t0 = t0 };
		store_metrics(db, s[i].name, on_metric, &c);
	}
}

static void release(series *s, int n)
{
	for (int i = 0; i < n; i++) {
		free(s[i].x);
		free(s[i].y);
	}
}

/* True when metric `name` has a value. */
static int any_value(void *ctx, int64_t step, double t, double value)
{
	*(bool *)ctx = true;
	return 1;
}

static bool has_metric(store *db, const char *name)
{
	bool any = false;
	store_metrics(db, name, any_value, &any);
	return any;
}

/* The run's configuration (loop.h's LOOP_CONFIG_KEY lines) as a table. */
static void config_table(FILE *f, store *db)
{
	char config[4096];
	if (store_get_meta(db, LOOP_CONFIG_KEY, config, sizeof(config)) != 1)
		return;
	fprintf(f, "<h2>Configuration</h2>\n<table>\n");
	for (char *line = strtok(config, "\n"); line; line = strtok(NULL, "\n")) {
		char *sp = strchr(line, ' ');
		if (!sp)
			continue;
		*sp = 0;
		fprintf(f, "<tr><td>--%s</td><td>%s</td></tr>\n", line, sp + 1);
	}
	fprintf(f, "</table>\n");
}

int report_write(store *db, const char *path, const char *game_name, char *err, size_t errlen)
{
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f) {
		snprintf(err, errlen, "cannot write %s", tmp);
		return -1;
	}
	double t0 = 0;
	store_metrics(db, "loss", first_time, &t0);
	store_metrics(db, "c4_error_net", first_time, &t0);
	int64_t games = 0, positions = 0;
	store_count(db, &games, &positions);
	time_t now = time(NULL);
	fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>sente run report</title>\n"
		"<style>body{font-family:sans-serif;max-width:720px;margin:2em auto}</style></head><body>\n"
		"<h1>sente run: %s</h1>\n<p>%lld games, %lld recorded positions. Written %s</p>\n",
		game_name, (long long)games, (long long)positions, ctime(&now));
	config_table(f, db);
	series loss[] = {
		{ .name = "loss", .label = "total", .color = "#000" }, { .name = "policy_loss", .label = "policy", .color = "#1f77b4" },
		{ .name = "value_loss", .label = "value", .color = "#d62728" },
	};
	load(db, loss, 3, false, t0);
	report_chart(f, "Training loss", "training step", loss, 3, false);
	release(loss, 3);
	series pos[] = { { .name = "positions", .label = "positions stored", .color = "#2ca02c" }, { .name = "games", .label = "games stored", .color = "#9467bd" } };
	load(db, pos, 2, true, t0);
	report_chart(f, "Self-play data", "minutes", pos, 2, false);
	release(pos, 2);
	/* Strength as the run measured it: error rates against a perfect
	 * solver where the game has labelled positions, else the win rate
	 * against the first network. */
	char winrate[96];
	snprintf(winrate, sizeof(winrate), "%s_winrate_vs_first", game_name);
	if (has_metric(db, "c4_error_net")) {
		series err_s[] = {
			{ .name = "c4_error_net", .label = "network alone, all positions", .color = "#ff7f0e" },
			{ .name = "c4_error_search", .label = "search, sample", .color = "#1f77b4" },
		};
		load(db, err_s, 2, true, t0);
		report_chart(f, "Error rate against perfect play (lower is better)", "minutes", err_s, 2, true);
		release(err_s, 2);
		series sets[] = {
			{ .name = "c4_error_net/begin-easy", .label = "begin-easy", .color = "#1f77b4" },
			{ .name = "c4_error_net/begin-medium", .label = "begin-medium", .color = "#ff7f0e" },
			{ .name = "c4_error_net/begin-hard", .label = "begin-hard", .color = "#2ca02c" },
			{ .name = "c4_error_net/middle-easy", .label = "middle-easy", .color = "#d62728" },
			{ .name = "c4_error_net/middle-medium", .label = "middle-medium", .color = "#9467bd" },
			{ .name = "c4_error_net/end-easy", .label = "end-easy", .color = "#8c564b" },
		};
		load(db, sets, 6, true, t0);
		report_chart(f, "Network error rate per position set", "minutes", sets, 6, true);
		release(sets, 6);
	} else {
		series wr[] = { { .name = winrate, .label = "win rate against the first network", .color = "#1f77b4" } };
		load(db, wr, 1, true, t0);
		report_chart(f, "Strength", "minutes", wr, 1, true);
		release(wr, 1);
	}
	fprintf(f, "</body></html>\n");
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		snprintf(err, errlen, "cannot write %s", path);
		remove(tmp);
		return -1;
	}
	return 0;
}
