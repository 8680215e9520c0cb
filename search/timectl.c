/* timectl.c: time budgets per move (see timectl.h). */
#include "search/timectl.h"

#include <string.h>

#define TIMECTL_MIN 0.02 /* seconds: never think less than this */

void timectl_init(timectl *t)
{
	memset(t, 0, sizeof(*t));
	t->kind = TIMECTL_NONE;
	t->lag = 1.0;
}

static void reset_clocks(timectl *t)
{
	for (int c = 0; c < 2; c++) {
		t->left[c] = t->main_time;
		t->stones[c] = 0;
		if (t->main_time <= 0) {
			/* No main time: the game starts in byo-yomi. */
			t->left[c] = t->byo_time;
			t->stones[c] = t->kind == TIMECTL_CANADIAN ? t->byo_stones : t->byo_periods;
		}
	}
}

void timectl_set_canadian(timectl *t, double main_time, double byo_time, int stones)
{
	t->main_time = main_time;
	t->byo_time = byo_time;
	t->byo_stones = stones;
	t->byo_periods = 0;
	t->increment = 0;
	if (byo_time > 0 && stones == 0)
		t->kind = TIMECTL_NONE; /* GTP: byo-yomi time without stones is no limit */
	else if (byo_time <= 0)
		t->kind = main_time > 0 ? TIMECTL_ABSOLUTE : TIMECTL_NONE;
	else
		t->kind = TIMECTL_CANADIAN;
	reset_clocks(t);
}

void timectl_set_japanese(timectl *t, double main_time, double byo_time, int periods)
{
	t->main_time = main_time;
	t->byo_time = byo_time;
	t->byo_periods = periods;
	t->byo_stones = 0;
	t->increment = 0;
	t->kind = byo_time > 0 && periods > 0 ? TIMECTL_JAPANESE
		  : main_time > 0 ? TIMECTL_ABSOLUTE : TIMECTL_NONE;
	reset_clocks(t);
}

void timectl_set_fischer(timectl *t, double main_time, double increment)
{
	t->main_time = main_time;
	t->increment = increment;
	t->byo_time = 0;
	t->byo_stones = t->byo_periods = 0;
	t->kind = main_time > 0 || increment > 0 ? TIMECTL_FISCHER : TIMECTL_NONE;
	reset_clocks(t);
}

void timectl_set_absolute(timectl *t, double main_time)
{
	timectl_set_canadian(t, main_time, 0, 0);
}

void timectl_time_left(timectl *t, int c, double seconds, int stones)
{
	t->left[c] = seconds > 0 ? seconds : 0;
	t->stones[c] = stones > 0 ? stones : 0;
}

void timectl_charge(timectl *t, int c, double used)
{
	if (t->kind == TIMECTL_NONE)
		return;
	if (t->stones[c] == 0) {
		t->left[c] -= used;
		if (t->kind == TIMECTL_FISCHER)
			t->left[c] += t->increment;
		if (t->left[c] < 0 && (t->kind == TIMECTL_CANADIAN || t->kind == TIMECTL_JAPANESE)) {
			/* Main time ran out: byo-yomi starts. */
			t->left[c] = t->byo_time;
			t->stones[c] = t->kind == TIMECTL_CANADIAN ? t->byo_stones : t->byo_periods;
		}
		return;
	}
	if (t->kind == TIMECTL_CANADIAN) {
		t->left[c] -= used;
		if (--t->stones[c] == 0) { /* period done: a fresh one */
			t->left[c] = t->byo_time;
			t->stones[c] = t->byo_stones;
		}
	} else if (t->kind == TIMECTL_JAPANESE && used > t->byo_time && t->stones[c] > 1) {
		t->stones[c]--; /* a period was spent */
	}
}

double timectl_budget(const timectl *t, int c, int board_points, int moves_played)
{
	if (t->kind == TIMECTL_NONE)
		return 0;
	double left = t->left[c], budget;
	/* Moves this player still expects to make: games last about 0.7 of
	 * the board's points in total; never plan for fewer than 10. */
	double remaining = (0.7 * board_points - moves_played) / 2;
	if (remaining < 10)
		remaining = 10;
	if (t->stones[c] > 0 && t->kind == TIMECTL_CANADIAN) {
		budget = left / t->stones[c] - t->lag;
		if (budget > left - t->lag)
			budget = left - t->lag;
	} else if (t->stones[c] > 0 && t->kind == TIMECTL_JAPANESE) {
		budget = t->byo_time - t->lag; /* each period may be used whole */
	} else {
		budget = left / remaining;
		/* Byo-yomi or an increment will follow: the main time can be
		 * spent a little faster. */
		if (t->kind == TIMECTL_CANADIAN && t->byo_stones > 0)
			budget += 0.5 * t->byo_time / t->byo_stones;
		else if (t->kind == TIMECTL_JAPANESE)
			budget += 0.5 * t->byo_time;
		else if (t->kind == TIMECTL_FISCHER)
			budget += 0.8 * t->increment;
		double cap = left - t->lag;
		if (t->kind == TIMECTL_JAPANESE || t->kind == TIMECTL_CANADIAN) {
			/* Running main time to zero only enters byo-yomi. */
			double byo = t->kind == TIMECTL_JAPANESE ? t->byo_time
								  : t->byo_time / (t->byo_stones ? t->byo_stones : 1);
			if (cap < byo - t->lag)
				cap = byo - t->lag;
		}
		if (budget > cap)
			budget = cap;
	}
	if (budget < TIMECTL_MIN)
		budget = TIMECTL_MIN;
	return budget;
}
