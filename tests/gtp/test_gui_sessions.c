/* GUI sessions against the real binary: the start-up and analysis commands
 * of Sabaki (src/modules/enginesyncer.js, sabaki.js), Lizzie (Leelaz.java),
 * GoGui (gogui-analyze_commands) and KataGo-speaking tools, each a script
 * tests/data/gtp/gui/NAME.in run through `$SENTE_BIN gtp` as a subprocess
 * and its output held against NAME.out.
 *
 * Script lines are sent as they are, except "#sleep S", which waits S
 * seconds (an analysis runs meanwhile, as it does while a GUI shows it).
 * Expected lines are matched one by one: a plain line byte for byte; "~ RE"
 * a line matching the extended regular expression RE whole; "* RE" any
 * number of such lines, "+ RE" one or more (analysis output, whose count
 * depends on timing). RE "@lz" or "@kata N" stands for an analysis line
 * of that format on a board of N points, checked field by field (the
 * numbers' syntax, the fields' order, order counting up from 0, N floats
 * in every ownership list) rather than by a regular expression, which
 * would be too large for lines of thousands of characters.
 *
 * No test here starts a thread before it runs the binary (popen). */
#include <criterion/criterion.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/game_desc.h"
#include "nn/encode.h"
#include "nn/net.h"
#include "tests/cli/cli_util.h"

static char net_dir[] = "/tmp/sente_gui_XXXXXX";

/* Writes a small random network for params p (lz: Leela Zero's shape;
 * heads: the NN_HEAD_* it has) as net_dir/NAME. */
static void write_net(const char *name, game_params p, bool lz, int heads)
{
	nn_arch a = lz ? nn_arch_lz(p.size, 1, 8) : nn_arch_default(&p, 1, 8);
	nn_arch_set_heads(&a, heads);
	char err[256], path[256];
	nn_net *n = nn_net_new(&a, err, sizeof(err));
	cr_assert(n, "%s", err);
	nn_net_init_random(n, 7);
	snprintf(path, sizeof(path), "%s/%s", net_dir, name);
	cr_assert(nn_net_save(n, path, err, sizeof(err)) == 0, "%s", err);
	nn_net_free(n);
}

static void make_nets(void)
{
	cr_assert(mkdtemp(net_dir));
	write_net("go9.sente", game_params_sized(GAME_KIND_GO, 9, NAN), false, 0);
	write_net("go9h.sente", game_params_sized(GAME_KIND_GO, 9, NAN), false,
		  NN_HEAD_OWN | NN_HEAD_SCORE);
	write_net("lz19.sente", game_params_sized(GAME_KIND_GO, 19, NAN), true, 0);
	{ /* one network for boards 7 and 9 */
		game_params p = game_params_sized(GAME_KIND_GO, 9, NAN);
		nn_arch a = nn_arch_default(&p, 1, 8);
		a.sizes = 1u << 7 | 1u << 9;
		char err[256], path[256];
		nn_net *n = nn_net_new(&a, err, sizeof(err));
		cr_assert(n, "%s", err);
		nn_net_init_random(n, 7);
		snprintf(path, sizeof(path), "%s/go79.sente", net_dir);
		cr_assert(nn_net_save(n, path, err, sizeof(err)) == 0, "%s", err);
		nn_net_free(n);
	}
	write_net("c4.sente", game_params_default(GAME_KIND_CONNECT4), false, 0);
}

static void remove_nets(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", net_dir);
	cr_assert(system(cmd) == 0);
}

TestSuite(gtp_gui, .init = make_nets, .fini = remove_nets, .timeout = 60);

/* Reads a whole file into buf (cap bytes, NUL-terminated); buffers the
 * caller keeps static, so a failed assertion leaks nothing. */
static char *slurp(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	cr_assert(f, "cannot open %s (tests run from the repository root)", path);
	size_t n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	cr_assert(feof(f), "%s is larger than %zu bytes", path, cap - 1);
	fclose(f);
	return buf;
}

/* The shell command that feeds script (lines, "#sleep S" pauses) to
 * `$SENTE_BIN gtp ARGS`. */
static void session_cmd(const char *script, const char *args, char *cmd, size_t len)
{
	size_t n = (size_t)snprintf(cmd, len, "(");
	static char copy[8192];
	snprintf(copy, sizeof(copy), "%s", script);
	for (char *save = NULL, *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		double s;
		if (sscanf(l, "#sleep %lf", &s) == 1)
			n += (size_t)snprintf(cmd + n, len - n, "sleep %g; ", s);
		else
			n += (size_t)snprintf(cmd + n, len - n, "printf '%%s\\n' '%s'; ", l);
		cr_assert(n < len, "script too long");
	}
	snprintf(cmd + n, len - n, ") | timeout -k 1 50 %s gtp -q %s 2>/dev/null", cli_test_bin(),
		 args);
}

static bool is_int(const char *t)
{
	char *end;
	if (!*t)
		return false;
	(void)strtol(t, &end, 10);
	return *end == '\0';
}

/* A KataGo float: optional sign, digits, a point, six digits. */
static bool is_f6(const char *t)
{
	const char *dot = strchr(t, '.');
	return dot && strlen(dot + 1) == 6 && (t[0] == '-' || (t[0] >= '0' && t[0] <= '9')) &&
	       strspn(t + (t[0] == '-'), "0123456789.") == strlen(t + (t[0] == '-'));
}

static bool is_vertex(const char *t)
{
	if (!strcmp(t, "pass"))
		return true;
	int row;
	char col, rest;
	return sscanf(t, "%c%d%c", &col, &row, &rest) == 2 && col >= 'A' && col <= 'T' &&
	       col != 'I' && row >= 1 && row <= 19;
}

/* One analysis line in Leela Zero's (points == 0) or KataGo's format on
 * a board of `points` points; false with the reason in why. */
static bool analysis_line(const char *line, int points, char *why, size_t len)
{
	char *copy = strdup(line), *save = NULL;
	char *t[8192];
	int n = 0;
	for (char *w = strtok_r(copy, " ", &save); w && n < 8192; w = strtok_r(NULL, " ", &save))
		t[n++] = w;
	bool kata = points > 0, ok = false;
	int i = 0, order = 0;
#define NEED(cond, ...)                                   \
	do {                                              \
		if (!(cond)) {                            \
			snprintf(why, len, __VA_ARGS__);  \
			goto out;                         \
		}                                         \
	} while (0)
	static const char *const lz_keys[] = { "visits", "winrate", "prior", "lcb", "order", NULL };
	static const char *const kata_keys[] = { "visits", "utility", "winrate", "prior", "lcb",
						 "utilityLcb", "order", NULL };
	while (i < n && !strcmp(t[i], "info")) {
		NEED(i + 2 < n && !strcmp(t[i + 1], "move") && is_vertex(t[i + 2]), "token %d: info move V", i);
		i += 3;
		for (const char *const *k = kata ? kata_keys : lz_keys; *k; k++, i += 2) {
			bool integer = !kata || !strcmp(*k, "visits") || !strcmp(*k, "order");
			if (kata && !strcmp(*k, "prior") && i + 3 < n && !strcmp(t[i], "scoreMean")) {
				/* A network with a score head: scoreMean S scoreLead S. */
				NEED(is_f6(t[i + 1]) && !strcmp(t[i + 2], "scoreLead") && is_f6(t[i + 3]),
				     "token %d: scoreMean S scoreLead S", i);
				i += 4;
			}
			NEED(i + 1 < n && !strcmp(t[i], *k) && (integer ? is_int(t[i + 1]) : is_f6(t[i + 1])),
			     "token %d: %s and its value expected", i, *k);
		}
		NEED(atoi(t[i - 1]) == order++, "order %s out of turn", t[i - 1]);
		NEED(i < n && !strcmp(t[i], "pv"), "token %d: pv expected", i);
		int pv = 0;
		for (i++; i < n && is_vertex(t[i]); i++)
			pv++;
		NEED(pv >= 1, "an empty pv");
		for (int list = 0; kata && list < 2; list++) /* pvVisits, pvEdgeVisits */
			if (i < n && !strcmp(t[i], list ? "pvEdgeVisits" : "pvVisits")) {
				int k = 0;
				for (i++; i < n && is_int(t[i]); i++)
					k++;
				NEED(k == pv, "%d pv moves but %d visit counts", pv, k);
			}
		if (kata && i < n && !strcmp(t[i], "movesOwnership")) {
			int k = 0;
			for (i++; i < n && is_f6(t[i]); i++)
				k++;
			NEED(k == points, "movesOwnership: %d values, not %d", k, points);
		}
	}
	if (kata && i < n && !strcmp(t[i], "rootInfo")) {
		NEED(i + 6 < n && !strcmp(t[i + 1], "visits") && is_int(t[i + 2]) &&
		     !strcmp(t[i + 3], "utility") && is_f6(t[i + 4]) && !strcmp(t[i + 5], "winrate") &&
		     is_f6(t[i + 6]), "token %d: rootInfo visits N utility U winrate W", i);
		i += 7;
		if (i + 1 < n && !strcmp(t[i], "scoreLead")) {
			NEED(is_f6(t[i + 1]), "token %d: scoreLead S", i);
			i += 2;
		}
	}
	for (int list = 0; kata && list < 2; list++)
		if (i < n && !strcmp(t[i], list ? "ownershipStdev" : "ownership")) {
			int k = 0;
			for (i++; i < n && is_f6(t[i]); i++)
				k++;
			NEED(k == points, "%s: %d values, not %d", list ? "ownershipStdev" : "ownership", k, points);
		}
	NEED(i == n && n > 0, "token %d ('%s') unexpected", i, i < n ? t[i] : "");
	ok = true;
#undef NEED
out:
	free(copy);
	return ok;
}

/* True when line matches the whole extended regular expression re (or the
 * analysis format "@lz" / "@kata N"). */
static bool matches(const char *re, const char *line)
{
	char why[256];
	if (!strcmp(re, "@lz"))
		return analysis_line(line, 0, why, sizeof(why));
	int points;
	if (sscanf(re, "@kata %d", &points) == 1)
		return analysis_line(line, points, why, sizeof(why));
	char anchored[4096];
	snprintf(anchored, sizeof(anchored), "^(%s)$", re);
	regex_t rx;
	cr_assert(regcomp(&rx, anchored, REG_EXTENDED | REG_NOSUB) == 0, "bad pattern %s", re);
	bool ok = regexec(&rx, line, 0, NULL, 0) == 0;
	regfree(&rx);
	return ok;
}

/* Splits s into lines in place (the final newline ends the last one). */
static int split_lines(char *s, char **lines, int max)
{
	int n = 0;
	while (*s && n < max) {
		lines[n++] = s;
		char *nl = strchr(s, '\n');
		if (!nl)
			break;
		*nl = '\0';
		s = nl + 1;
	}
	return n;
}

/* Matches output against the expected lines (see the top of the file). */
static void check_output(const char *name, char *got, char *want)
{
	enum { MAX = 4096 };
	static char *g[MAX], *w[MAX];
	int ng = split_lines(got, g, MAX), nw = split_lines(want, w, MAX), i = 0;
	for (int k = 0; k < nw; k++) {
		if (!strncmp(w[k], "* ", 2) || !strncmp(w[k], "+ ", 2)) {
			int from = i;
			while (i < ng && matches(w[k] + 2, g[i]))
				i++;
			cr_assert(w[k][0] == '*' || i > from, "%s: line %d is\n  '%.300s'\nexpected "
				  "one or more lines\n  '%.300s'", name, i + 1, i < ng ? g[i] : "", w[k]);
			continue;
		}
		cr_assert(i < ng, "%s: output ends at line %d, expected '%s'", name, i + 1, w[k]);
		bool ok = !strncmp(w[k], "~ ", 2) ? matches(w[k] + 2, g[i]) : !strcmp(w[k], g[i]);
		cr_assert(ok, "%s: line %d is\n  '%.300s'\nexpected\n  '%.300s'", name, i + 1, g[i], w[k]);
		i++;
	}
	cr_assert_eq(i, ng, "%s: %d lines more than expected, from '%.200s'", name, ng - i,
		     i < ng ? g[i] : "");
}

/* Runs tests/data/gtp/gui/NAME.in with `gtp ARGS` (a %s in args is the
 * test's network folder) and checks NAME.out. */
static void session(const char *name, const char *args_fmt)
{
	char path[256], args[512], cmd[16384];
	static char out[1 << 20];
	if (strstr(args_fmt, "%s"))
		snprintf(args, sizeof(args), args_fmt, net_dir);
	else
		snprintf(args, sizeof(args), "%s", args_fmt);
	snprintf(path, sizeof(path), "tests/data/gtp/gui/%s.in", name);
	static char script_buf[8192], want_buf[1 << 16];
	char *script = slurp(path, script_buf, sizeof(script_buf));
	snprintf(path, sizeof(path), "tests/data/gtp/gui/%s.out", name);
	char *want = slurp(path, want_buf, sizeof(want_buf));
	session_cmd(script, args, cmd, sizeof(cmd));
	int rc = cli_test_shell(cmd, out, sizeof(out));
	cr_assert_eq(rc, 0, "%s: exit %d:\n%.2000s", name, rc, out);
	check_output(name, out, want);
}

Test(gtp_gui, sabaki) { session("sabaki", "--noponder -v 40 --size 9"); }
Test(gtp_gui, lizzie) { session("lizzie", "-v 40 -w %s/lz19.sente"); }
Test(gtp_gui, gogui) { session("gogui", "--noponder -v 40 -w %s/go9.sente"); }
Test(gtp_gui, katago) { session("katago", "--noponder -v 40 -w %s/go9.sente"); }
Test(gtp_gui, connect4_from_model) { session("connect4", "--noponder -v 40 -w %s/c4.sente"); }
Test(gtp_gui, no_network) { session("nonet", "--noponder -v 100"); }

/* Lizzie's avoid: no avoided move is ever analysed or played. */
Test(gtp_gui, avoided_moves_never_show)
{
	static char out[1 << 20];
	char cmd[4096];
	const char *script = "boardsize 9\nlz-analyze 5 avoid b E5,D4,F4,D6,F6 30 minmoves 8\n"
			     "#sleep 0.6\nlz-genmove_analyze b 5 avoid b E5,D4,F4,D6,F6 1 minmoves 8\nquit\n";
	session_cmd(script, "--noponder -v 300", cmd, sizeof(cmd));
	cr_assert_eq(cli_test_shell(cmd, out, sizeof(out)), 0);
	int infos = 0;
	for (const char *p = out; (p = strstr(p, "info move ")); p += 10) {
		char mv[8];
		cr_assert(sscanf(p + 10, "%7s", mv) == 1);
		cr_assert(strcmp(mv, "E5") && strcmp(mv, "D4") && strcmp(mv, "F4") && strcmp(mv, "D6") &&
			  strcmp(mv, "F6"), "avoided move %s analysed", mv);
		infos++;
	}
	cr_assert(infos >= 8, "minmoves 8: only %d entries in\n%.1000s", infos, out);
	const char *play = strstr(out, "play ");
	cr_assert(play, "no play line in\n%.1000s", out);
	cr_assert(strncmp(play, "play E5", 7) && strncmp(play, "play D4", 7), "played %.8s", play);
}

/* Lizzie's allow: only the allowed moves are analysed, for the plies
 * given. */
Test(gtp_gui, allowed_moves_alone_show)
{
	static char out[1 << 20];
	char cmd[4096];
	const char *script = "boardsize 9\nlz-analyze b 5 allow b C3,G7 1\n#sleep 1.5\nquit\n";
	session_cmd(script, "--noponder -v 300", cmd, sizeof(cmd));
	cr_assert_eq(cli_test_shell(cmd, out, sizeof(out)), 0);
	int infos = 0, seen[2] = { 0, 0 };
	for (const char *p = out; (p = strstr(p, "info move ")); p += 10) {
		char mv[8];
		cr_assert(sscanf(p + 10, "%7s", mv) == 1);
		cr_assert(!strcmp(mv, "C3") || !strcmp(mv, "G7"), "move %s analysed", mv);
		seen[mv[0] == 'G']++;
		infos++;
	}
	cr_assert(infos >= 2 && seen[0] && seen[1], "%d entries in\n%.1000s", infos, out);
}

/* A size the network cannot play is refused, never silently changed. */
Test(gtp_gui, size_the_network_cannot_play_is_refused)
{
	char cmd[1024], out[4096];
	snprintf(cmd, sizeof(cmd), "echo quit | %s gtp -q --size 9 -w %s/lz19.sente 2>&1", cli_test_bin(),
		 net_dir);
	cr_assert_eq(cli_test_shell(cmd, out, sizeof(out)), 1, "%s", out);
	cr_assert(strstr(out, "19x19 only") && strstr(out, "--size 9"), "%s", out);
	/* Asking for the other game than the model's is refused too. */
	snprintf(cmd, sizeof(cmd), "echo quit | %s gtp -q --game go -w %s/c4.sente 2>&1", cli_test_bin(),
		 net_dir);
	cr_assert_eq(cli_test_shell(cmd, out, sizeof(out)), 1, "%s", out);
}

/* loadsgf takes setup after the first move (a GUI's edited game), answers
 * empty as GTP says, and printsgf keeps the record's names and rules. */
Test(gtp_gui, loadsgf_edited_game)
{
	char path[256], cmd[1024], out[8192];
	snprintf(path, sizeof(path), "%s/edited.sgf", net_dir);
	FILE *f = fopen(path, "w");
	cr_assert(f);
	fputs("(;GM[1]FF[4]SZ[9]KM[6.5]RU[Chinese]PB[Alice]PW[Bob];B[ee];W[cc];AB[gg]AE[ee];B[dd])",
	      f);
	cr_assert(fclose(f) == 0);
	snprintf(cmd, sizeof(cmd),
		 "printf 'loadsgf %s\\nprintsgf\\nloadsgf %s 3\\nprintsgf\\nquit\\n' | "
		 "%s gtp -q --noponder 2>&1", path, path, cli_test_bin());
	cr_assert_eq(cli_test_shell(cmd, out, sizeof(out)), 0);
	const char *want = "=\n\n= (;FF[4]GM[1]CA[UTF-8]AP[sente]SZ[9]KM[6.5]RU[Chinese]PB[Alice]PW[Bob]\n"
			   "AB[gg]\nAW[cc]\n;B[dd])\n\n"
			   "=\n\n= (;FF[4]GM[1]CA[UTF-8]AP[sente]SZ[9]KM[6.5]RU[Chinese]PB[Alice]PW[Bob]\n"
			   "AB[gg]\nAW[cc])\n\n=\n\n";
	cr_assert_str_eq(out, want);
}

/* kata-search_cancellable: the next line (here `name`) cancels a search
 * that would run for hours: the answer is `cancelled` and the line runs
 * next; kata-search_analyze_cancellable ends with `play cancelled`
 * (here cancelled by a blank line); a search that reaches its limit
 * (before the next line comes) answers its move; the board never
 * changes. The 10-visit search gets 8 s: it needs well under a second of
 * CPU, but on a loaded machine its wall time ran past 2 s. */
Test(gtp_gui, kata_search_cancellable)
{
	/* Half a second of analysis of the empty 9x9 board at 10 lines a
	 * second lists every move with visits: 60-70 KB on a quiet machine,
	 * which a 64 KB buffer cut short (sente then died of SIGPIPE). */
	char cmd[1024];
	static char out[1 << 21];
	snprintf(cmd, sizeof(cmd),
		 "(printf 'kata-search_cancellable b\\n'; sleep 0.5; printf 'name\\n'; "
		 "printf 'kata-search_analyze_cancellable b 10\\n'; sleep 0.5; printf '\\n'; "
		 "printf 'kata-set-param maxVisits 10\\nkata-search_cancellable b\\n'; sleep 8; "
		 "printf 'showboard\\n') | "
		 "timeout -k 1 50 %s gtp -q --noponder -v 100000000 -w %s/go9.sente 2>/dev/null",
		 cli_test_bin(), net_dir);
	cr_assert_eq(cli_test_shell(cmd, out, sizeof(out)), 0, "%s", out);
	cr_assert(!strncmp(out, "= cancelled\n\n= sente\n\n=\n", 24), "%.300s", out);
	char *pc = strstr(out, "play cancelled\n\n=\n\n= ");
	cr_assert(pc, "%.2000s", out);
	pc += strlen("play cancelled\n\n=\n\n= ");
	cr_assert(is_vertex(strtok(pc, "\n")), "a move after the limit: %s", pc);
	char *board = pc + strlen(pc) + 1;
	cr_assert(!strstr(board, " X ") && !strstr(board, " O "), "the board is empty: %s", board);
}

/* The n floats after the first `key` in s (whitespace between), into v;
 * the count read. */
static int floats_after(const char *s, const char *key, float *v, int n)
{
	const char *p = strstr(s, key);
	if (!p)
		return 0;
	p += strlen(key);
	int k = 0;
	for (char *end; k < n; p = end) {
		v[k] = strtof(p, &end);
		if (end == p)
			break;
		k++;
	}
	return k;
}

/* A network with the ownership and score heads: kata-raw-nn prints them
 * as the reference computes them, kata-search_analyze's ownership is the
 * same answer from the mover's side, and its scores are the search's. */
Test(gtp_gui, heads_of_the_network_reach_kata_raw_nn_and_kata_analyze)
{
	static char out[1 << 20];
	char cmd[4096], err[256], path[256];
	const char *script = "boardsize 9\nkomi 7.5\nkata-raw-nn 0\n"
			     "kata-search_analyze b 10 ownership true rootInfo true\nquit\n";
	snprintf(path, sizeof(path), "-w %s/go9h.sente", net_dir);
	char args[512];
	snprintf(args, sizeof(args), "--noponder -v 40 %s", path);
	session_cmd(script, args, cmd, sizeof(cmd));
	cr_assert_eq(cli_test_shell(cmd, out, sizeof(out)), 0);
	/* The reference on the empty board, Black to move. */
	snprintf(path, sizeof(path), "%s/go9h.sente", net_dir);
	nn_net *net = nn_net_load(path, NULL, err, sizeof(err));
	cr_assert(net, "%s", err);
	game g;
	game_params gp = game_params_sized(GAME_KIND_GO, 9, 7.5);
	game_init(&g, &gp);
	float planes[32 * 81], pol[82], v, own[81], score;
	cr_assert_gt(nn_encode(&g, net->arch.encoding, planes), 0);
	nn_reference_forward_heads(net, 1, planes, pol, &v, NULL, own, &score);
	nn_net_free(net);

	float lead, wown[81], kown[81], root_lead, info[2];
	cr_assert_eq(floats_after(out, "whiteLead ", &lead, 1), 1, "no whiteLead in\n%.2000s", out);
	cr_assert_float_eq(lead, -81 * score, 1e-4, "whiteLead %g, the head says %g", lead, -81 * score);
	cr_assert_eq(floats_after(out, "whiteOwnership\n", wown, 81), 81, "%.3000s", out);
	for (int row = 0; row < 9; row++) /* printed top row first */
		for (int x = 0; x < 9; x++)
			cr_assert_float_eq(wown[row * 9 + x], -own[(8 - row) * 9 + x], 2e-6, "row %d x %d", row,
					   x);
	const char *line = strstr(out, "info move ");
	cr_assert(line, "no analysis in\n%.2000s", out);
	cr_assert_eq(floats_after(line, " ownership ", kown, 81), 81, "%.3000s", line);
	for (int i = 0; i < 81; i++)
		cr_assert_float_eq(kown[i], -wown[i], 2e-6, "point %d: mover's %g, White's %g", i, kown[i],
				   wown[i]);
	/* Scores are the search's means: each move's, and the root's, which
	 * averages the root's own answer (-whiteLead: Black is to move) and
	 * the moves' (every visited move is listed), so it lies between them. */
	cr_assert_eq(floats_after(strstr(line, " rootInfo "), "scoreLead ", &root_lead, 1), 1, "%.2000s",
		     line);
	double lo = -lead, hi = -lead;
	int moves = 0;
	size_t info_len = strstr(line, " rootInfo ") - line;
	for (const char *p = line; (p = strstr(p, "scoreMean ")) && (size_t)(p - line) < info_len; p++) {
		cr_assert_eq(floats_after(p, "scoreMean ", &info[0], 1), 1);
		cr_assert_eq(floats_after(p, "scoreLead ", &info[1], 1), 1);
		cr_assert_float_eq(info[0], info[1], 1e-9);
		lo = fmin(lo, info[0]);
		hi = fmax(hi, info[0]);
		moves++;
	}
	cr_assert_gt(moves, 1, "%.2000s", line);
	cr_assert(root_lead >= lo - 1e-4 && root_lead <= hi + 1e-4, "root %g outside [%g, %g]",
		  root_lead, lo, hi);
	char why[256];
	char first[1 << 16];
	snprintf(first, sizeof(first), "%.*s", (int)strcspn(line, "\n"), line);
	cr_assert(analysis_line(first, 81, why, sizeof(why)), "%s: %.500s", why, first);
}

/* A network of boards 7 and 9 plays both (boardsize, genmove, loadsgf)
 * and refuses 8, at start and by boardsize, naming what it plays. */
Test(gtp_gui, a_network_of_two_sizes_plays_both)
{
	char cmd[4096], out[8192], args[512];
	const char *script = "boardsize 7\ngenmove b\nboardsize 9\ngenmove b\nboardsize 8\n"
			     "genmove w\nquit\n";
	snprintf(args, sizeof(args), "--noponder -v 20 -w %s/go79.sente", net_dir);
	session_cmd(script, args, cmd, sizeof(cmd));
	cr_assert_eq(cli_test_shell(cmd, out, sizeof(out)), 0);
	char *all[64], *lines[32];
	int n = 0, k = split_lines(out, all, 64);
	for (int i = 0; i < k && n < 32; i++)
		if (all[i][0]) /* answers, without the blank lines that end them */
			lines[n++] = all[i];
	cr_assert_geq(n, 6, "%s", out);
	cr_assert_str_eq(lines[0], "=");
	cr_assert(matches("= [A-G][1-7]|= pass", lines[1]), "a 7x7 move: %s", lines[1]);
	cr_assert_str_eq(lines[2], "=");
	cr_assert(matches("= [A-J][1-9]|= pass", lines[3]), "a 9x9 move: %s", lines[3]);
	cr_assert_str_eq(lines[4], "? unacceptable size");
	cr_assert(matches("= [A-J][1-9]|= pass", lines[5]), "still 9x9: %s", lines[5]);
	snprintf(cmd, sizeof(cmd), "echo quit | %s gtp -q --size 8 -w %s/go79.sente 2>&1", cli_test_bin(),
		 net_dir);
	cr_assert_eq(cli_test_shell(cmd, out, sizeof(out)), 1, "%s", out);
	cr_assert(strstr(out, "7x7, 9x9 only") && strstr(out, "--size 8"), "%s", out);
}
