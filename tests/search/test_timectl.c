/* Time budgets: never past the clock minus the lag, sensible shares. */
#include <criterion/criterion.h>

#include "search/timectl.h"

Test(timectl, no_limit)
{
	timectl t;
	timectl_init(&t);
	cr_assert_eq(timectl_budget(&t, 0, 361, 0), 0);
	timectl_set_canadian(&t, 0, 10, 0);
	cr_assert_eq(t.kind, TIMECTL_NONE, "byo-yomi time without stones means no limit (GTP)");
}

Test(timectl, absolute_shares_main_time)
{
	timectl t;
	timectl_init(&t);
	timectl_set_absolute(&t, 600);
	double b = timectl_budget(&t, 0, 361, 0);
	cr_assert(b > 2 && b < 10, "600 s over a 19x19 game: %g s per move", b);
	timectl_time_left(&t, 0, 5, 0);
	b = timectl_budget(&t, 0, 361, 300);
	cr_assert(b <= 5 - t.lag && b > 0, "5 s left: %g", b);
	timectl_time_left(&t, 0, 0.5, 0);
	b = timectl_budget(&t, 0, 361, 300);
	cr_assert(b <= 0.05, "less than the lag left: think minimally (%g)", b);
}

Test(timectl, canadian_byoyomi_never_overruns)
{
	timectl t;
	timectl_init(&t);
	timectl_set_canadian(&t, 0, 60, 10);
	cr_assert_eq(t.stones[1], 10, "no main time: starts in byo-yomi");
	double b = timectl_budget(&t, 1, 361, 50);
	cr_assert_float_eq(b, 60.0 / 10 - t.lag, 1e-9);
	timectl_time_left(&t, 1, 3, 1);
	b = timectl_budget(&t, 1, 361, 50);
	cr_assert(b <= 3 - t.lag + 1e-9, "last stone of the period: %g", b);
	/* Charging every stone of a period starts a new one. */
	timectl_time_left(&t, 1, 60, 2);
	timectl_charge(&t, 1, 5);
	cr_assert_eq(t.stones[1], 1);
	timectl_charge(&t, 1, 5);
	cr_assert_eq(t.stones[1], 10);
	cr_assert_float_eq(t.left[1], 60, 1e-9);
}

Test(timectl, japanese_uses_the_period)
{
	timectl t;
	timectl_init(&t);
	timectl_set_japanese(&t, 60, 30, 5);
	double main_b = timectl_budget(&t, 0, 81, 0);
	cr_assert(main_b > 0 && main_b <= 60 - t.lag);
	timectl_charge(&t, 0, 61);
	cr_assert_eq(t.stones[0], 5, "main time out: byo-yomi periods");
	cr_assert_float_eq(timectl_budget(&t, 0, 81, 40), 30 - t.lag, 1e-9);
}

Test(timectl, fischer_adds_increment)
{
	timectl t;
	timectl_init(&t);
	timectl_set_fischer(&t, 60, 5);
	double b = timectl_budget(&t, 0, 81, 0);
	cr_assert(b > 4 && b <= 60 - t.lag, "%g", b);
	timectl_charge(&t, 0, 2);
	cr_assert_float_eq(t.left[0], 63, 1e-9);
}
