/* report.h: a run's report (report.html): the dashboard of `sente serve`
 * (serve/serve.h) as a static snapshot with its data embedded; a
 * tournament's page; and a small SVG line chart for pages written without
 * a browser library. */
#ifndef SENTE_LOOP_REPORT_H
#define SENTE_LOOP_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "data/store.h"
#include "engine/game.h"
#include "match/tournament.h"

/* One line of a chart: points (x, y), drawn as a polyline. */
typedef struct report_series {
	const char *name;  /* metric name (for report_write's loading) */
	const char *label; /* legend text */
	const char *color; /* stroke colour */
	int n, cap;        /* points used, allocated */
	double *x, *y;     /* the points */
} report_series;

/* Writes one SVG line chart of the series (empty ones skipped) with a
 * title, axis labels and a legend; percent shows y as percentages from 0. */
void report_chart(FILE *f, const char *title, const char *xlabel, const report_series *s, int n,
		  bool percent);

/* Writes the report of a run of `game_name` (its descriptor's name) to path,
 * through a temporary file and a rename: serve_page_save. 0, or -1 with a
 * message. */
int report_write(store *db, const char *path, const char *game_name, char *err, size_t errlen);

/* Writes a tournament's page to path (whole, fileio_write_text): the
 * standings best first with 95% intervals, and Elo against training step
 * for the players that are models with a step. 0, or -1 with a message. */
int report_tournament(const char *path, const match_player *pl, const tournament_result *r,
		      char *err, size_t errlen);

#endif
