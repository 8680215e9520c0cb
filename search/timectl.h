/* timectl.h: how long to think for one move under a time control.
 *
 * Covers absolute time, Japanese byo-yomi (periods), Canadian byo-yomi
 * (stones per period) and Fischer increments, as set by GTP time_settings /
 * kgs-time_settings and updated by time_left. The lag buffer is kept in
 * reserve so that network and GUI delays never lose a game on time.
 */
#ifndef SENTE_SEARCH_TIMECTL_H
#define SENTE_SEARCH_TIMECTL_H

#include <stdbool.h>

typedef enum timectl_kind {
	TIMECTL_NONE = 0,     /* no time limit */
	TIMECTL_ABSOLUTE,     /* main time only */
	TIMECTL_JAPANESE,     /* main time, then periods of byo_time each */
	TIMECTL_CANADIAN,     /* main time, then byo_stones moves per byo_time */
	TIMECTL_FISCHER,      /* main time plus increment per move */
} timectl_kind;

typedef struct timectl {
	timectl_kind kind;    /* the system */
	double main_time;     /* seconds, as set */
	double byo_time;      /* seconds per period (Japanese, Canadian) */
	int byo_stones;       /* Canadian: moves per period */
	int byo_periods;      /* Japanese: periods */
	double increment;     /* Fischer: seconds added per move */
	double lag;           /* seconds kept in reserve per move */
	/* What is left, per colour (time_left updates it): */
	double left[2];       /* seconds on the clock (main, or the current period) */
	int stones[2];        /* 0 in main time; else stones (Canadian) or periods (Japanese) left */
} timectl;

/* No time limit, lag buffer 1 s. */
void timectl_init(timectl *t);
/* GTP time_settings: main, byo-yomi time, stones (Canadian; stones 0 with
 * byo time 0 is absolute; byo time > 0 with stones 0 means no limit). */
void timectl_set_canadian(timectl *t, double main_time, double byo_time, int stones);
void timectl_set_japanese(timectl *t, double main_time, double byo_time, int periods);
void timectl_set_fischer(timectl *t, double main_time, double increment);
void timectl_set_absolute(timectl *t, double main_time);
/* GTP time_left for colour c: seconds and stones (0 = main time). */
void timectl_time_left(timectl *t, int c, double seconds, int stones);
/* Charges `used` seconds to colour c's clock after its move (keeps the
 * clock sensible between time_left commands). */
void timectl_charge(timectl *t, int c, double used);
/* Seconds to think for colour c's next move, given the number of board
 * points and moves already played; 0 when there is no limit. Always at
 * least a few milliseconds and never more than the clock minus the lag. */
double timectl_budget(const timectl *t, int c, int board_points, int moves_played);

#endif
