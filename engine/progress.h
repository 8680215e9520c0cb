/* progress.h: the progress line of a long command (run, selfplay, train,
 * match, tournament): elapsed time, the share done and an ETA against a
 * time budget (--minutes), a count (--games, --steps) or whichever of the
 * two ends first, a label saying what is under way, and the command's
 * current figures. On a terminal one line is rewritten in place (\r);
 * piped, a plain line is written at most every `interval` seconds.
 *
 * A module that logs other lines on the same stream calls progress_clear
 * first (on a terminal it blanks the line; the next update redraws it).
 * A progress is used from one thread at a time. */
#ifndef SENTE_ENGINE_PROGRESS_H
#define SENTE_ENGINE_PROGRESS_H

#include <stdbool.h>
#include <stdio.h>

typedef struct progress {
	FILE *f;          /* where the line goes; NULL: nowhere */
	bool tty;         /* f is a terminal: rewrite in place */
	double seconds;   /* time budget in seconds; <= 0: none */
	double count;     /* count to reach; <= 0: none */
	double t0;        /* clock_now() at progress_init */
	double last;      /* when the line was last written; 0: never */
	double interval;  /* seconds between lines when not a terminal */
	int width;        /* characters of the line on screen (terminal); 0: none */
	char label[96];   /* what is under way ("iteration 3 self-play"); "" none */
} progress;

/* Seconds between plain lines when piped. */
#define PROGRESS_PIPE_INTERVAL 15.0
/* Seconds between redraws on a terminal. */
#define PROGRESS_TTY_INTERVAL 0.5

/* Starts the clock. seconds: the time budget, count: the count to reach
 * (either <= 0: none; both: the ETA is that of whichever ends first). */
void progress_init(progress *p, FILE *f, double seconds, double count);
/* Sets the label shown before the figures (printf-style; "" clears it). */
void progress_label(progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A new phase: sets the label (as progress_label) and, on a terminal,
 * redraws the line at once without figures; piped, nothing is written
 * (the next update is due at its interval). NULL is fine. */
void progress_phase(progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Formats the line "ELAPSED [PCT% ETA ...]  [label:] figures" into buf (len
 * bytes) for `done` (of the count) at time `now`; returns buf. */
const char *progress_format(const progress *p, double done, double now, const char *figures,
			    char *buf, size_t len);
/* Writes the line when due (always when force): figures is printf-style. */
void progress_update(progress *p, double done, bool force, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* On a terminal, blanks the line in place so that another line can be
 * logged; the next update draws it again. NULL is fine. */
void progress_clear(progress *p);
/* Ends an in-place line with a newline, so later output starts clean. */
void progress_end(progress *p);

#endif
