/* report.h: a run's report as one self-contained HTML page with SVG
 * charts (loss, positions, strength over time), from the store's metrics. */
#ifndef SENTE_LOOP_REPORT_H
#define SENTE_LOOP_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "data/store.h"
#include "engine/game.h"

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
 * through a temporary file and a rename. 0, or -1 with a message. */
int report_write(store *db, const char *path, const char *game_name, char *err, size_t errlen);

#endif
