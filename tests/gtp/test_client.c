/* The GTP client: answers, refusals, a hung and a dead engine, and a whole
 * 9x9 game between sente and GNU Go that ends with a result and a valid
 * SGF. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/clock.h"
#include "engine/game.h"
#include "engine/sgf.h"
#include "gtp/client.h"

static const char *sente_bin(void)
{
	const char *bin = getenv("SENTE_BIN");
	if (!bin)
		cr_skip_test("SENTE_BIN is not set (run through make test)");
	return bin;
}

Test(gtp_client, talks_to_sente)
{
	char cmd[1024], ans[4096], err[256];
	snprintf(cmd, sizeof(cmd), "%s gtp -q -v 20 -t 1 --noponder --size 9", sente_bin());
	gtp_client *c = gtp_client_start(cmd, NULL, err, sizeof(err));
	cr_assert(c, "%s", err);
	cr_assert_eq(gtp_client_send(c, "protocol_version", 10, ans, sizeof(ans)), GTP_CLIENT_OK);
	cr_assert_str_eq(ans, "2");
	cr_assert_eq(gtp_client_send(c, "7 name", 10, ans, sizeof(ans)), GTP_CLIENT_OK);
	cr_assert_str_eq(ans, "sente", "the id is stripped");
	cr_assert_eq(gtp_client_send(c, "play b Z99", 10, ans, sizeof(ans)), GTP_CLIENT_FAIL);
	cr_assert(strstr(ans, "syntax error"), "%s", ans);
	cr_assert_eq(gtp_client_send(c, "showboard", 10, ans, sizeof(ans)), GTP_CLIENT_OK);
	cr_assert(strstr(ans, "A B C"), "a multi-line answer arrives whole: %s", ans);
	cr_assert_eq(gtp_client_send(c, "genmove b", 30, ans, sizeof(ans)), GTP_CLIENT_OK);
	/* A legal move on the empty 9x9 board the engine has. */
	static game g;
	game_params gp = { .kind = GAME_KIND_GO, .size = 9, .komi = 7.5 };
	cr_assert_eq(game_init(&g, &gp), GAME_OK);
	int mv;
	cr_assert_eq(game_move_from_text(&g, ans, &mv), GAME_OK, "genmove answered '%s'", ans);
	cr_assert(game_is_legal(&g, mv), "genmove answered '%s'", ans);
	cr_assert(gtp_client_usable(c));
	gtp_client_free(c);
}

Test(gtp_client, hung_engine_times_out)
{
	char err[256];
	gtp_client *c = gtp_client_start("sleep 30", NULL, err, sizeof(err));
	cr_assert(c, "%s", err);
	double t0 = clock_now();
	cr_assert_eq(gtp_client_send(c, "name", 0.3, NULL, 0), GTP_CLIENT_TIMEOUT);
	double waited = clock_now() - t0;
	/* The timeout is kept: not cut short, and not overrun by more than a
	 * loaded machine's scheduling delay. */
	cr_assert_geq(waited, 0.3, "gave up after %.3f s", waited);
	cr_assert_lt(waited, 0.3 + 1.5, "gave up after %.3f s", waited);
	cr_assert(!gtp_client_usable(c));
	t0 = clock_now();
	gtp_client_free(c); /* kills it: must not wait 30 s */
	cr_assert_lt(clock_now() - t0, 3.0, "freeing took %.3f s", clock_now() - t0);
}

/* Process pid's state letter and process group from /proc/PID/stat; false
 * when there is no such process. */
static bool proc_stat(long pid, char *state, long *pgrp)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *p = strrchr(buf, ')'); /* the name may hold spaces */
	long ppid;
	return p && sscanf(p + 1, " %c %ld %ld", state, &ppid, pgrp) == 3;
}

/* Whether a process that is not a zombie is in process group pgrp. */
static bool group_has_live_process(long pgrp)
{
	DIR *d = opendir("/proc");
	cr_assert(d);
	bool found = false;
	for (struct dirent *de; !found && (de = readdir(d));) {
		char *end, state;
		long pid = strtol(de->d_name, &end, 10), g;
		if (*end == '\0' && pid > 0 && proc_stat(pid, &state, &g) && g == pgrp && state != 'Z')
			found = true;
	}
	closedir(d);
	return found;
}

/* An engine that is a shell which started a child that hangs: on the
 * timeout, freeing the client kills the child too, not only the shell. */
Test(gtp_client, hung_engine_is_killed_with_its_children, .timeout = 20)
{
	char dir[] = "/tmp/sente-gtpc-XXXXXX", cmd[512], err[256];
	cr_assert(mkdtemp(dir));
	char pids[128];
	snprintf(pids, sizeof(pids), "%s/pids", dir);
	snprintf(cmd, sizeof(cmd), "sleep 30 & echo $$ $! > %s.tmp; mv %s.tmp %s; wait", pids, pids, pids);
	gtp_client *c = gtp_client_start(cmd, NULL, err, sizeof(err));
	cr_assert(c, "%s", err);
	cr_assert_eq(gtp_client_send(c, "name", 0.3, NULL, 0), GTP_CLIENT_TIMEOUT);
	long shell = 0, child = 0;
	for (int i = 0; i < 500 && !shell; i++) {
		FILE *f = fopen(pids, "r");
		if (f) {
			cr_assert_eq(fscanf(f, "%ld %ld", &shell, &child), 2);
			fclose(f);
		} else {
			usleep(10000);
		}
	}
	cr_assert(shell > 0 && child > 0, "the engine never wrote %s", pids);
	char state;
	long pgrp;
	cr_assert(proc_stat(child, &state, &pgrp), "the hung child is running");
	cr_assert_eq(pgrp, shell, "the engine runs in a process group of its own");
	double t0 = clock_now();
	gtp_client_free(c);
	cr_assert_lt(clock_now() - t0, 3.0, "freeing a hung engine does not wait for it");
	/* SIGKILL lands within moments; then at most a zombie is left until
	 * init reaps it, and nothing else of the group. */
	for (int i = 0; i < 100 && group_has_live_process(shell); i++)
		usleep(10000);
	cr_assert(!proc_stat(child, &state, &pgrp) || state == 'Z', "the engine's child survived");
	cr_assert(!group_has_live_process(shell), "a process of the engine's group survived");
	unlink(pids);
	rmdir(dir);
}

Test(gtp_client, dead_engine_is_reported, .timeout = 10)
{
	char err[256];
	gtp_client *c = gtp_client_start("exit 3", NULL, err, sizeof(err));
	cr_assert(c, "%s", err);
	cr_assert_eq(gtp_client_send(c, "name", 5, NULL, 0), GTP_CLIENT_DEAD);
	cr_assert_eq(gtp_client_send(c, "name", 5, NULL, 0), GTP_CLIENT_DEAD, "and stays dead");
	gtp_client_free(c);
	c = gtp_client_start("/nonexistent/engine", NULL, err, sizeof(err));
	cr_assert(c, "the shell starts; the engine is missing");
	cr_assert_eq(gtp_client_send(c, "name", 5, NULL, 0), GTP_CLIENT_DEAD);
	gtp_client_free(c);
}

/* Starts `engine`, sends "name" with the timeout, and checks the status,
 * after which the client is not usable. */
static void expect_broken(const char *engine, double timeout_s, gtp_client_status want)
{
	char err[256];
	gtp_client *c = gtp_client_start(engine, NULL, err, sizeof(err));
	cr_assert(c, "%s", err);
	gtp_client_status s = gtp_client_send(c, "name", timeout_s, NULL, 0);
	cr_assert_eq(s, want, "%s: %s", engine, gtp_client_status_name(s));
	cr_assert(!gtp_client_usable(c));
	gtp_client_free(c);
}

/* Lines that are not GTP are chatter, skipped while waiting for an answer:
 * an engine that prints only those never answers, and times out. */
Test(gtp_client, endless_chatter_times_out, .timeout = 10)
{
	expect_broken("yes garbage", 0.5, GTP_CLIENT_TIMEOUT);
}

/* An answer that never ends (more than the client keeps, no blank line) is
 * a protocol error as soon as the buffer is full, well before the timeout. */
Test(gtp_client, endless_answer_is_a_protocol_error, .timeout = 30)
{
	expect_broken("printf '= '; yes x | tr -d '\\n'", 20, GTP_CLIENT_PROTOCOL);
}

Test(gtp_client, final_score_answers)
{
	int r;
	double sc;
	cr_assert(gtp_client_parse_score("B+3.5", &r, &sc));
	cr_assert(r == 1 && sc == 3.5);
	cr_assert(gtp_client_parse_score("w+12", &r, &sc));
	cr_assert(r == -1 && sc == -12);
	cr_assert(gtp_client_parse_score("W+R", &r, &sc));
	cr_assert(r == -1 && sc == 0);
	cr_assert(gtp_client_parse_score("0", &r, &sc));
	cr_assert(r == 0 && sc == 0);
	cr_assert(gtp_client_parse_score("B+Resign", &r, &sc));
	cr_assert(r == 1 && sc == 0);
	cr_assert(gtp_client_parse_score("W+.5 (area)", &r, &sc));
	cr_assert(r == -1 && sc == -0.5);
	/* A sign would set the winner and the score against each other
	 * ("B+-3.5": Black won, with White 3.5 ahead); found by fuzz_gtp_reply. */
	const char *bad[] = { "B+nan", "W+inf", "B+-INFINITY", "B+1e999", "B3", "", "draw",
			      "B+-3.5", "W+-1", "B++2", "b+ 3", "W+0x10", "B+1e3", "B+3.5x", "B+.",
			      "W+garbage" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert(!gtp_client_parse_score(bad[i], &r, &sc), "'%s' is no score", bad[i]);
}

/* Frames one answer from bytes as they arrived: what frame returns is
 * what may be dropped; complete says whether it holds a whole answer. */
static size_t frame(const char *bytes, bool *complete, bool *ok, char *ans, size_t cap)
{
	return gtp_client_frame(bytes, strlen(bytes), complete, ok, ans, cap);
}

Test(gtp_client, frames_answers)
{
	char ans[64];
	bool complete, ok;
	cr_assert_eq(frame("= D4\n\n", &complete, &ok, ans, sizeof(ans)), 6);
	cr_assert(complete && ok);
	cr_assert_str_eq(ans, "D4");
	cr_assert_eq(frame("?12 unknown command\n\n= next", &complete, &ok, ans, sizeof(ans)), 21);
	cr_assert(complete && !ok);
	cr_assert_str_eq(ans, "unknown command", "the id is stripped");
	const char *multi = "chatter\n\n=3 line one\nline two\n\n";
	cr_assert_eq(frame(multi, &complete, &ok, ans, sizeof(ans)), strlen(multi));
	cr_assert(complete && ok);
	cr_assert_str_eq(ans, "line one\nline two", "chatter skipped, lines kept");
	cr_assert_eq(frame("=\n\n", &complete, &ok, ans, sizeof(ans)), 3);
	cr_assert(complete && ok);
	cr_assert_str_eq(ans, "");
	cr_assert_eq(frame("= long answer\n\n", &complete, &ok, ans, 5), 15);
	cr_assert_str_eq(ans, "long", "cut to the room given");
	/* Incomplete: the chatter before it may go, the answer stays. */
	cr_assert_eq(frame("noise\n= D4\n", &complete, &ok, ans, sizeof(ans)), 6);
	cr_assert(!complete);
	cr_assert_eq(frame("partial chatter", &complete, &ok, ans, sizeof(ans)), 0);
	cr_assert(!complete);
	cr_assert_eq(frame("", &complete, &ok, NULL, 0), 0);
	cr_assert(!complete);
	char crlf[] = "= A1\r\n\r\n";
	size_t n = gtp_client_drop_cr(crlf, strlen(crlf));
	cr_assert_eq(gtp_client_frame(crlf, n, &complete, &ok, ans, sizeof(ans)), 6);
	cr_assert(complete && ok);
	cr_assert_str_eq(ans, "A1");
}

Test(gtp_client, genmove_answers)
{
	static game g;
	game_params gp = { .kind = GAME_KIND_GO, .size = 9, .komi = 7.5 };
	cr_assert_eq(game_init(&g, &gp), GAME_OK);
	int mv, want;
	bool resign;
	cr_assert_eq(game_move_from_text(&g, "e5", &want), GAME_OK);
	cr_assert(gtp_client_parse_move(&g, "  E5 trailing", &mv, &resign));
	cr_assert(!resign && mv == want);
	cr_assert(gtp_client_parse_move(&g, "\tPASS\n", &mv, &resign));
	cr_assert(!resign && mv == game_pass_move(&g));
	cr_assert(gtp_client_parse_move(&g, "Resign", &mv, &resign));
	cr_assert(resign);
	const char *bad[] = { "", "Z99", "resignation", "e5e5", "J10",
			      "a-very-long-answer-that-is-no-vertex-at-all" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert(!gtp_client_parse_move(&g, bad[i], &mv, &resign), "'%s' is no move", bad[i]);
}

/* A full 9x9 game: sente (uniform policy, few visits) against GNU Go level 1,
 * moves relayed through two clients; the result and an SGF that replays to
 * the same final position. */
Test(gtp_client, full_game_against_gnugo, .timeout = 120)
{
	/* Debian installs it in /usr/games, which is not always on PATH. */
	const char *gnugo = NULL;
	if (access("/usr/games/gnugo", X_OK) == 0)
		gnugo = "/usr/games/gnugo";
	else if (system("command -v gnugo >/dev/null 2>&1") == 0)
		gnugo = "gnugo";
	if (!gnugo)
		cr_skip_test("gnugo is not installed (apt-get install gnugo)");
	char cmd[8192], ans[4096], err[256];
	snprintf(cmd, sizeof(cmd), "%s gtp -q -v 30 -t 1 --noponder -r 0", sente_bin());
	gtp_client *players[2];
	players[0] = gtp_client_start(cmd, NULL, err, sizeof(err)); /* Black */
	char gcmd[256];
	snprintf(gcmd, sizeof(gcmd), "%s --mode gtp --level 1 --chinese-rules", gnugo);
	players[1] = gtp_client_start(gcmd, NULL, err, sizeof(err)); /* White */
	cr_assert(players[0] && players[1], "%s", err);
	for (int p = 0; p < 2; p++) {
		cr_assert_eq(gtp_client_send(players[p], "boardsize 9", 10, ans, sizeof(ans)), GTP_CLIENT_OK);
		cr_assert_eq(gtp_client_send(players[p], "clear_board", 10, ans, sizeof(ans)), GTP_CLIENT_OK);
		cr_assert_eq(gtp_client_send(players[p], "komi 7", 10, ans, sizeof(ans)), GTP_CLIENT_OK);
	}
	static game g;
	game_params gp = { .kind = GAME_KIND_GO, .size = 9, .komi = 7 };
	cr_assert_eq(game_init(&g, &gp), GAME_OK);
	int resigned = -1;
	while (!game_is_over(&g) && game_move_count(&g) < 200) {
		int who = game_to_move(&g);
		snprintf(cmd, sizeof(cmd), "genmove %s", who == GAME_BLACK ? "b" : "w");
		cr_assert_eq(gtp_client_send(players[who], cmd, 60, ans, sizeof(ans)), GTP_CLIENT_OK,
			     "%s: %s", cmd, ans);
		for (char *s = ans; *s; s++)
			*s = (char)(*s >= 'a' && *s <= 'z' ? *s - 32 : *s);
		if (!strcmp(ans, "RESIGN")) {
			resigned = who;
			game_resign(&g, who);
			break;
		}
		int mv;
		cr_assert_eq(game_move_from_text(&g, ans, &mv), GAME_OK, "engine %d said '%s'", who, ans);
		cr_assert_eq(game_play(&g, mv), GAME_OK, "engine %d played illegal '%s'", who, ans);
		snprintf(cmd, sizeof(cmd), "play %s %s", who == GAME_BLACK ? "b" : "w", ans);
		cr_assert_eq(gtp_client_send(players[1 - who], cmd, 10, ans, sizeof(ans)), GTP_CLIENT_OK,
			     "%s refused: %s", cmd, ans);
	}
	cr_assert(game_is_over(&g) || game_move_count(&g) == 200);
	cr_log_info("game over after %d moves%s", game_move_count(&g), resigned >= 0 ? " by resignation" : "");
	/* Both engines score the same final position: GNU Go's board is ours
	 * point by point, sente's score is our area score of it, and GNU Go's
	 * (which removes the stones it thinks dead) is a score. */
	char score_b[256], score_w[256];
	if (resigned < 0) {
		for (int y = 0; y < 9; y++)
			for (int x = 0; x < 9; x++) {
				char vertex[8];
				snprintf(vertex, sizeof(vertex), "%c%d", "ABCDEFGHJ"[x], y + 1);
				snprintf(cmd, sizeof(cmd), "color %s", vertex);
				cr_assert_eq(gtp_client_send(players[1], cmd, 10, ans, sizeof(ans)), GTP_CLIENT_OK);
				int col = go_color_at(&g.u.go, x, y);
				cr_assert_str_eq(ans, col == GO_BLACK ? "black" : col == GO_WHITE ? "white" : "empty",
						 "GNU Go's %s", vertex);
			}
		cr_assert_eq(gtp_client_send(players[0], "final_score", 10, score_b, sizeof(score_b)), GTP_CLIENT_OK);
		cr_assert_eq(gtp_client_send(players[1], "final_score", 30, score_w, sizeof(score_w)), GTP_CLIENT_OK);
		int rb, rw;
		double sb, sw;
		cr_assert(gtp_client_parse_score(score_b, &rb, &sb), "sente: '%s'", score_b);
		cr_assert(gtp_client_parse_score(score_w, &rw, &sw), "gnugo: '%s'", score_w);
		cr_assert_float_eq(sb, go_score(&g.u.go), 1e-9, "sente: '%s'", score_b);
		cr_assert_eq(rb, sb > 0 ? 1 : sb < 0 ? -1 : 0, "sente: '%s'", score_b);
		cr_log_info("final_score: sente %s, gnugo %s", score_b, score_w);
	}
	/* The record as SGF, read back and replayed, gives the same board. */
	sgf_record rec;
	cr_assert_eq(sgf_record_from_go(&g.u.go, &rec), 0);
	char *text = sgf_write(&rec);
	cr_assert(text);
	sgf_record back;
	cr_assert_eq(sgf_read(text, strlen(text), &back, err, sizeof(err)), 0, "%s", err);
	static go_board replay;
	cr_assert_eq(sgf_replay(&back, &replay, -1, err, sizeof(err)), 0, "%s", err);
	for (int y = 0; y < 9; y++)
		for (int x = 0; x < 9; x++)
			cr_assert_eq(go_color_at(&replay, x, y), go_color_at(&g.u.go, x, y));
	cr_assert_eq(back.n_moves, game_move_count(&g));
	free(text);
	sgf_record_free(&rec);
	sgf_record_free(&back);
	gtp_client_free(players[0]);
	gtp_client_free(players[1]);
}
