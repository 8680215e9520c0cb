/* A tournament's page (loop/report.h): the standings best first with
 * names escaped, the plot only where two models have a step, and a page
 * that cannot be written leaves the old one. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loop/report.h"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	cr_assert(f, "%s", path);
	static char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

Test(report, tournament_page)
{
	char dir[] = "/tmp/sente-report-XXXXXX", path[128], err[512];
	cr_assert(mkdtemp(dir));
	static match_player pl[3];
	static tournament_result r;
	const char *names[3] = { "base<1>", "model 7", "gnugo & co" };
	for (int i = 0; i < 3; i++) {
		snprintf(pl[i].name, sizeof(pl[i].name), "%s", names[i]);
		pl[i].kind = i == 2 ? MATCH_PLAYER_GTP : MATCH_PLAYER_MODEL;
		pl[i].train_step = i == 2 ? -1 : 1000 * (i + 1);
	}
	r.players = 3;
	r.matches = 3;
	r.standings[0] = (tournament_standing){ .player = 1, .elo = 120, .se = 30, .games = 40, .points = 30 };
	r.standings[1] = (tournament_standing){ .player = 0, .elo = 0, .se = 0, .games = 40, .points = 20 };
	r.standings[2] = (tournament_standing){ .player = 2, .elo = -90, .se = 40, .games = 40, .points = 10 };
	snprintf(path, sizeof(path), "%s/t.html", dir);
	cr_assert_eq(report_tournament(path, pl, &r, err, sizeof(err)), 0, "%s", err);
	const char *page = slurp(path);
	const char *first = strstr(page, "model 7"), *second = strstr(page, "base&lt;1&gt;");
	cr_assert(first && second && first < second, "best first, escaped: %s", page);
	cr_assert(strstr(page, "gnugo &amp; co"), "%s", page);
	cr_assert(strstr(page, "+120") && strstr(page, "<svg"), "%s", page);
	cr_assert(strstr(page, "</body></html>"), "%s", page);
	/* One model with a step: no plot, and the page says why. */
	pl[0].train_step = -1;
	cr_assert_eq(report_tournament(path, pl, &r, err, sizeof(err)), 0, "%s", err);
	page = slurp(path);
	cr_assert(strstr(page, "No plot") && !strstr(page, "<svg"), "%s", page);
	/* A folder in the way: an error, and the folder stays a folder. */
	snprintf(path, sizeof(path), "%s/in-the-way", dir);
	cr_assert_eq(mkdir(path, 0777), 0);
	cr_assert_eq(report_tournament(path, pl, &r, err, sizeof(err)), -1);
	cr_assert(strstr(err, "in-the-way"), "%s", err);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}
