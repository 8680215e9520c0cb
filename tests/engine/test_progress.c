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
		double seconds;    /* time budget */
		double count;      /* count to reach */
		double done, at;   /* count done, seconds elapsed */
		const char *figures;
		const char *want;
	} cases[] = {
		{ 600, 0, 0, 150, "games 12", "2:30   25%  ETA 7:30  | games 12" },
		{ 0, 100, 20, 3700, NULL, "1:01:40   20%  ETA 4:06:40" },
		{ 0, 100, 0, 5, "", "0:05    0%" },
		{ 0, 0, 7, 61, "x", "1:01  | x" },
		/* Past the budget: 100%, not more, and no negative ETA. */
		{ 60, 0, 0, 90, NULL, "1:30  100%  ETA 0:00" },
		{ 0, 10, 12, 30, NULL, "0:30  100%  ETA 0:00" },
		/* Both: the count ends first (half done in 1:00 of a 10:00
		 * budget), then the time (a tenth of the count in 1:00). */
		{ 600, 10, 5, 60, NULL, "1:00   50%  ETA 1:00" },
		{ 600, 100, 10, 60, NULL, "1:00   10%  ETA 9:00" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		progress p;
		char buf[256];
		progress_init(&p, NULL, cases[i].seconds, cases[i].count);
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
	progress_init(&p, f, 0, 10);
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

Test(progress, label_and_figures)
{
	progress p;
	char buf[256];
	progress_init(&p, NULL, 0, 0);
	progress_label(&p, "iteration %d self-play", 3);
	cr_assert_str_eq(progress_format(&p, 0, p.t0 + 2, "games 4", buf, sizeof(buf)),
			 "0:02  | iteration 3 self-play: games 4");
	cr_assert_str_eq(progress_format(&p, 0, p.t0 + 2, NULL, buf, sizeof(buf)),
			 "0:02  | iteration 3 self-play");
	progress_label(&p, "%s", "");
	cr_assert_str_eq(progress_format(&p, 0, p.t0 + 2, "x", buf, sizeof(buf)), "0:02  | x");
}

/* On a terminal the line is rewritten in place, and cleared (blanked, then
 * the cursor back at the start) before another line is logged. */
Test(progress, in_place_and_cleared)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	progress p;
	progress_init(&p, f, 60, 0);
	p.tty = true; /* as isatty would say on a terminal */
	progress_update(&p, 0, true, "games %d", 10);
	progress_update(&p, 0, true, "g %d", 1);
	int w = p.width;
	cr_assert_gt(w, 0);
	progress_clear(&p);
	cr_assert_eq(p.width, 0);
	fputs("a log line\n", f);
	progress_update(&p, 0, false, "g %d", 2); /* redrawn at once after a clear */
	progress_end(&p);
	fclose(f);
	char *logged = strstr(out, "a log line");
	cr_assert(logged && strchr(out, '\n') > logged, "no newline before the log line: %s", out);
	cr_assert(strstr(out, "| g 1"), "%s", out);
	/* The shorter second line blanks what the first left. */
	cr_assert(strstr(out, "| g 1   "), "%s", out);
	cr_assert(strstr(out, "\r a log line") == NULL && strstr(out, "\ra log line"), "%s", out);
	cr_assert(strstr(out, "| g 2\n"), "%s", out);
	free(out);
}
