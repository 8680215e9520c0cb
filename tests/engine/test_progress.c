/* The progress line (engine/progress.h): elapsed time, share and ETA by
 * time or by count, and plain lines when not on a terminal. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/progress.h"

Test(progress, eta_against_time_and_count)
{
	static const struct {
		double total;      /* seconds or count */
		bool by_time;
		double done, at;   /* count done, seconds elapsed */
		const char *figures;
		const char *want;
	} cases[] = {
		{ 600, true, 0, 150, "games 12", "2:30   25%  ETA 7:30  | games 12" },
		{ 100, false, 20, 3700, NULL, "1:01:40   20%  ETA 4:06:40" },
		{ 100, false, 0, 5, "", "0:05    0%" },
		{ 0, false, 7, 61, "x", "1:01  | x" },
		/* Past the budget: 100%, not more, and no negative ETA. */
		{ 60, true, 0, 90, NULL, "1:30  100%  ETA 0:00" },
		{ 10, false, 12, 30, NULL, "0:30  100%  ETA 0:00" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		progress p;
		char buf[256];
		progress_init(&p, NULL, cases[i].total, cases[i].by_time);
		progress_format(&p, cases[i].done, p.t0 + cases[i].at, cases[i].figures, buf, sizeof(buf));
		cr_assert_str_eq(buf, cases[i].want, "case %zu", i);
	}
}

Test(progress, plain_lines_when_piped_and_rate_limited)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	progress p;
	progress_init(&p, f, 10, false);
	cr_assert(!p.tty);
	progress_update(&p, 1, false, "games %d", 1);
	progress_update(&p, 2, false, "games %d", 2); /* within the interval: not written */
	progress_update(&p, 3, true, "games %d", 3);
	progress_end(&p);
	fclose(f);
	cr_assert(strstr(out, "| games 1\n"), "%s", out);
	cr_assert_null(strstr(out, "games 2"), "%s", out);
	cr_assert(strstr(out, "30%"), "%s", out);
	cr_assert(strstr(out, "| games 3\n"), "%s", out);
	cr_assert_null(strchr(out, '\r'), "%s", out);
	free(out);
}
