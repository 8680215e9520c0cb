/* Parity with Leela Zero itself: a random LZ v1 network (written by
 * scripts/lz_random_weights.py) evaluated by `leelaz` (GTP `heatmap N`) and
 * by `sente gtp -w` (GTP `kata-raw-nn N`) on the same positions must give
 * the same policy and winrate under every symmetry. Skips itself when
 * leelaz, python3 or $SENTE_BIN is missing.
 *
 * What leelaz prints, and so what can be compared:
 *  - `heatmap N` writes to stderr 19 rows (row 19 first) of
 *    int(1000 * p), p its softmax over all 362 outputs, 0 on occupied
 *    points; then "pass: int(1000 * p)" and "winrate: %f", the side to
 *    move's (1 + tanh v) / 2.
 *  - sente normalises over legal moves only, so its p_i = q_i / S, q_i
 *    LZ's softmax and S LZ's mass on the moves sente finds legal (1 on the
 *    empty board, less once there are stones or a ko). S is fitted per
 *    symmetry; then every legal point must satisfy
 *    |1000 p_i S - (lz_i + 0.5)| <= 1, i.e. it lies within half a per
 *    mille of LZ's truncation interval [lz_i, lz_i + 1).
 *  - Symmetries have the same numbers in both (engine/game.c): the
 *    comparison asks both for symmetry s. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PN 19
#define PA (PN * PN)
#define NSYM 8
#define NPOS 3
#define WINRATE_TOL 1e-4 /* leelaz prints 6 decimals; seen: 1e-6 */

/* Positions as GTP moves; each exercises something different. */
static const char *const positions[NPOS] = {
	"", /* empty board: Black to move, S = 1 */
	/* Black captures K11: White to move, K11 is suicide for White. */
	"b D4,w Q16,b D16,w Q4,b K10,w K11,b J11,w Q10,b L11,w C3,b K12",
	/* White takes a ko at L10: Black to move, L10 is ko-illegal. */
	"b D4,w Q16,b J10,w L11,b K11,w L9,b K9,w M10,b L10,w K10",
};

typedef struct nn_out {
	double p[PA + 1]; /* point y * 19 + x (y = 0 the bottom row), pass last;
			   * sente: NAN where illegal; LZ: per mille */
	double winrate;   /* side to move's */
} nn_out;

static nn_out lz_out[NPOS][NSYM], se_out[NPOS][NSYM];

/* The temporary folder and its files, removed by cleanup() pass or fail. */
static char dir[] = "/tmp/sente-lzparity-XXXXXX";
static char net[256], lz_cmds[256], se_cmds[256];

static void cleanup(void)
{
	if (!net[0])
		return;
	unlink(net);
	unlink(lz_cmds);
	unlink(se_cmds);
	rmdir(dir);
}

/* The leelaz binary: on PATH, or where Debian puts it (/usr/games, which
 * is not always on PATH). NULL when absent. */
static const char *find_leelaz(void)
{
	if (system("command -v leelaz >/dev/null 2>&1") == 0)
		return "leelaz";
	if (access("/usr/games/leelaz", X_OK) == 0)
		return "/usr/games/leelaz";
	return NULL;
}

static int n_moves(const char *pos)
{
	int n = 0;
	for (const char *s = pos; *s; s++)
		n += *s == ',';
	return *pos ? n + 1 : 0;
}

/* Writes, for every position: clear_board, its moves, then `query` for
 * each symmetry; quit at the end. */
static void write_commands(const char *path, const char *query)
{
	FILE *f = fopen(path, "w");
	cr_assert(f, "cannot write %s", path);
	for (int i = 0; i < NPOS; i++) {
		fprintf(f, "clear_board\n");
		char buf[512];
		snprintf(buf, sizeof(buf), "%s", positions[i]);
		for (char *m = strtok(buf, ","); m; m = strtok(NULL, ","))
			fprintf(f, "play %s\n", m);
		for (int s = 0; s < NSYM; s++)
			fprintf(f, "%s %d\n", query, s);
	}
	fprintf(f, "quit\n");
	fclose(f);
}

/* Reads leelaz's heatmaps (its stderr) in command order. */
static void read_lz(FILE *f)
{
	char line[1024];
	int pos = 0, sym = 0, row = 0;
	while (fgets(line, sizeof(line), f) && pos < NPOS) {
		nn_out *o = &lz_out[pos][sym];
		int v[PN], n = 0, k;
		char *s = line;
		while (n < PN && sscanf(s, "%d%n", &v[n], &k) == 1) {
			s += k;
			n++;
		}
		if (n == PN && row < PN) {
			for (int x = 0; x < PN; x++)
				o->p[(PN - 1 - row) * PN + x] = v[x];
			row++;
		} else if (row == PN && sscanf(line, "pass: %d", &v[0]) == 1) {
			o->p[PA] = v[0];
		} else if (row == PN && sscanf(line, "winrate: %lf", &o->winrate) == 1) {
			row = 0;
			if (++sym == NSYM) {
				sym = 0;
				pos++;
			}
		}
	}
	cr_assert_eq(pos, NPOS, "leelaz printed %d of %d positions' heatmaps", pos, NPOS);
}

/* Reads sente's kata-raw-nn answers (its stdout) in command order. */
static void read_sente(FILE *f)
{
	char line[8192];
	int pos = 0, sym = 0, row = -1;
	double white_win = 0;
	while (fgets(line, sizeof(line), f) && pos < NPOS) {
		nn_out *o = &se_out[pos][sym];
		if (!strncmp(line, "= symmetry", 10)) {
			row = -1;
		} else if (sscanf(line, "whiteWin %lf", &white_win) == 1) {
			o->winrate = n_moves(positions[pos]) % 2 ? white_win : 1 - white_win;
		} else if (!strncmp(line, "policy\n", 7)) {
			row = 0;
		} else if (row >= 0 && row < PN) {
			char *s = line, *end;
			for (int x = 0; x < PN; x++) {
				double v = strtod(s, &end);
				cr_assert(end != s, "sente policy row %d: %s", row, line);
				o->p[(PN - 1 - row) * PN + x] = v;
				s = end;
			}
			row++;
		} else if (sscanf(line, "policyPass %lf", &o->p[PA]) == 1) {
			row = -1;
			if (++sym == NSYM) {
				sym = 0;
				pos++;
			}
		}
	}
	cr_assert_eq(pos, NPOS, "sente printed %d of %d positions' outputs", pos, NPOS);
}

/* Largest |1000 p S - (lz + 0.5)| over sente's legal moves. */
static double worst_diff(const nn_out *se, const nn_out *lz, double S)
{
	double worst = 0;
	for (int i = 0; i <= PA; i++) {
		if (isnan(se->p[i]))
			continue;
		double d = fabs(1000 * se->p[i] * S - (lz->p[i] + 0.5));
		if (d > worst)
			worst = d;
	}
	return worst;
}

/* The S that best explains LZ's numbers: worst_diff is convex in S (a max
 * of convex functions), so a ternary search finds its minimum. */
static double fit_mass(const nn_out *se, const nn_out *lz)
{
	double a = 0.05, b = 1.5;
	for (int it = 0; it < 100; it++) {
		double m1 = a + (b - a) / 3, m2 = b - (b - a) / 3;
		if (worst_diff(se, lz, m1) <= worst_diff(se, lz, m2))
			b = m2;
		else
			a = m1;
	}
	return (a + b) / 2;
}

Test(nn_lz_parity, sente_matches_leelaz_on_a_random_2x16_net, .timeout = 60, .fini = cleanup)
{
	const char *bin = getenv("SENTE_BIN");
	if (!bin)
		cr_skip_test("SENTE_BIN is not set (run through make test)");
	const char *leelaz = find_leelaz();
	if (!leelaz)
		cr_skip_test("leelaz not installed (apt-get install leela-zero)");
	if (system("command -v python3 >/dev/null 2>&1") != 0)
		cr_skip_test("python3 not installed (needed by scripts/lz_random_weights.py)");

	cr_assert(mkdtemp(dir), "mkdtemp");
	char cmd[1024];
	snprintf(net, sizeof(net), "%s/net.txt", dir);
	snprintf(lz_cmds, sizeof(lz_cmds), "%s/lz.gtp", dir);
	snprintf(se_cmds, sizeof(se_cmds), "%s/sente.gtp", dir);
	snprintf(cmd, sizeof(cmd), "python3 scripts/lz_random_weights.py 2 16 7 %s", net);
	cr_assert_eq(system(cmd), 0, "%s failed", cmd);
	write_commands(lz_cmds, "heatmap");
	write_commands(se_cmds, "kata-raw-nn");

	/* leelaz answers GTP on stdout and prints heatmaps on stderr. */
	snprintf(cmd, sizeof(cmd), "%s --cpu-only -g -w %s --noponder -t 1 < %s 2>&1 >/dev/null",
		 leelaz, net, lz_cmds);
	FILE *f = popen(cmd, "r");
	cr_assert(f, "popen %s", cmd);
	read_lz(f);
	pclose(f);
	snprintf(cmd, sizeof(cmd), "%s gtp -w %s < %s 2>/dev/null", bin, net, se_cmds);
	f = popen(cmd, "r");
	cr_assert(f, "popen %s", cmd);
	read_sente(f);
	pclose(f);

	double worst = 0, worst_wr = 0;
	for (int pos = 0; pos < NPOS; pos++)
		for (int s = 0; s < NSYM; s++) {
			const nn_out *se = &se_out[pos][s], *lz = &lz_out[pos][s];
			double S = fit_mass(se, lz), d = worst_diff(se, lz, S);
			double dw = fabs(se->winrate - lz->winrate);
			/* Every point is legal on the empty board: no mass to fit. */
			if (pos == 0)
				cr_assert(fabs(S - 1) < 0.01, "empty board, sym %d: LZ's mass on "
					  "legal moves %.4f, expected 1", s, S);
			cr_assert(d <= 1.0, "position %d, sym %d: policy differs by %.3f per mille "
				  "(mass %.4f)", pos, s, d, S);
			cr_assert(dw <= WINRATE_TOL, "position %d, sym %d: winrate sente %.6f, "
				  "leelaz %.6f", pos, s, se->winrate, lz->winrate);
			if (d > worst)
				worst = d;
			if (dw > worst_wr)
				worst_wr = dw;
		}
	cr_log_info("lz parity: worst policy %.3f per mille from LZ's centre, winrate %.1e",
		    worst, worst_wr);
}
