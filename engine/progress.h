/* progress.h: the progress line of a long command (run, selfplay, train,
 * match, tournament): elapsed time, the share done and an ETA against a
 * time budget (--minutes) or a count (--games), and the command's current
 * figures. On a terminal one line is rewritten in place (\r); piped, a
 * plain line is written at most every `interval` seconds. */
#ifndef SENTE_ENGINE_PROGRESS_H
#define SENTE_ENGINE_PROGRESS_H

#include <stdbool.h>
#include <stdio.h>

typedef struct progress {
	FILE *f;          /* where the line goes; NULL: nowhere */
	bool tty;         /* f is a terminal: rewrite in place */
	bool by_time;     /* total is seconds of wall time, else a count */
	double total;     /* seconds or count to reach; <= 0: unknown */
	double t0;        /* clock_now() at progress_init */
	double last;      /* when the line was last written */
	double interval;  /* seconds between lines when not a terminal */
	int width;        /* characters of the last in-place line */
} progress;

/* Starts the clock. total: seconds when by_time, else a count (<= 0:
 * no ETA). */
void progress_init(progress *p, FILE *f, double total, bool by_time);
/* Formats the line "ELAPSED [PCT% ETA ...] | figures" into buf (len bytes)
 * for `done` (a count; ignored when by_time) at time `now`; returns buf. */
const char *progress_format(const progress *p, double done, double now, const char *figures,
			    char *buf, size_t len);
/* Writes the line when due (always when force): figures is printf-style. */
void progress_update(progress *p, double done, bool force, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Ends an in-place line with a newline, so later output starts clean. */
void progress_end(progress *p);

#endif
