/* The JSON analysis engine (gtp/analysis.h): request/response pairs built
 * from KataGo's docs/Analysis_Engine.md (fields present, their types, move
 * names, turn numbers), KataGo's errors and warnings for bad queries, the
 * actions (terminate, terminate_all, query_version, clear_cache), priority
 * order, reports during the search, malformed input of any length, a whole
 * game's analyzeTurns answered once per turn, and the real binary as
 * KaTrain starts it. The networks are small random ones written at the
 * start of the suite. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/game.h"
#include "engine/game_desc.h"
#include "gtp/analysis.h"
#include "nn/encode.h"
#include "nn/net.h"
#include "tests/cli/cli_util.h"

static char net_dir[] = "/tmp/sente_analysis_XXXXXX";
static char go9[128], go9h[128], c4[128];

/* A small random network for p with the heads given (NN_HEAD_*). */
static void write_net(char *path, size_t len, const char *name, game_params p, int heads)
{
	nn_arch a = nn_arch_default(&p, 1, 8);
	nn_arch_set_heads(&a, heads);
	char err[256];
	nn_net *n = nn_net_new(&a, err, sizeof(err));
	cr_assert(n, "%s", err);
	nn_net_init_random(n, 11);
	snprintf(path, len, "%s/%s", net_dir, name);
	cr_assert(nn_net_save(n, path, err, sizeof(err)) == 0, "%s", err);
	nn_net_free(n);
}

static void make_nets(void)
{
	cr_assert(mkdtemp(net_dir));
	write_net(go9, sizeof(go9), "go9.sente", game_params_sized(GAME_KIND_GO, 9, NAN), 0);
	write_net(go9h, sizeof(go9h), "go9h.sente", game_params_sized(GAME_KIND_GO, 9, NAN),
		  NN_HEAD_OWN | NN_HEAD_SCORE);
	write_net(c4, sizeof(c4), "c4.sente", game_params_default(GAME_KIND_CONNECT4), 0);
}

static void remove_nets(void)
{
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", net_dir);
	cr_assert(system(cmd) == 0);
}

TestSuite(analysis, .init = make_nets, .fini = remove_nets, .timeout = 120);

/* ---- a session: an engine writing into memory ------------------------------- */

enum { MAX_LINES = 4096 };

static analysis_engine *eng;
static FILE *out;
static char *out_buf;
static size_t out_len;
static cJSON *lines[MAX_LINES]; /* the answers so far, parsed */
static int n_lines;

static void start_with(const analysis_options *o)
{
	out = open_memstream(&out_buf, &out_len);
	cr_assert(out);
	char err[256];
	eng = analysis_engine_new(o, out, err, sizeof(err));
	cr_assert(eng, "%s", err);
}

/* The tests' engine: small trees and cache, one network thread, quiet. */
static analysis_options test_options(const char *weights, int threads, int visits)
{
	analysis_options o = analysis_options_default();
	o.weights = weights;
	o.threads = threads;
	o.max_visits = visits;
	o.tree_bytes = 32 << 20;
	o.cache_bytes = 8 << 20;
	o.score_playouts = 16;
	o.nn.threads = 1;
	o.quiet = true;
	return o;
}

static void start(const char *weights, int threads, int visits)
{
	analysis_options o = test_options(weights, threads, visits);
	start_with(&o);
}

static void send(const char *fmt, ...)
{
	char *line;
	va_list ap;
	va_start(ap, fmt);
	cr_assert(vasprintf(&line, fmt, ap) >= 0);
	va_end(ap);
	analysis_engine_handle(eng, line, strlen(line));
	free(line);
}

/* Waits for every turn, then parses every line written so far: each must
 * be one JSON object. */
static void finish(void)
{
	analysis_engine_drain(eng);
	fflush(out);
	for (int i = 0; i < n_lines; i++)
		cJSON_Delete(lines[i]);
	n_lines = 0;
	char *p = out_buf;
	while (p && *p) {
		char *nl = strchr(p, '\n');
		cr_assert(nl, "an answer without its newline: %.200s", p);
		cr_assert(n_lines < MAX_LINES);
		cJSON *o = cJSON_ParseWithLength(p, (size_t)(nl - p));
		cr_assert(cJSON_IsObject(o), "not a JSON object: %.*s", (int)(nl - p > 300 ? 300 : nl - p), p);
		lines[n_lines++] = o;
		p = nl + 1;
	}
}

static void stop(void)
{
	analysis_engine_free(eng);
	fclose(out);
	free(out_buf);
	out_buf = NULL;
	for (int i = 0; i < n_lines; i++)
		cJSON_Delete(lines[i]);
	n_lines = 0;
}

static cJSON *get(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

static const char *str(const cJSON *o, const char *k)
{
	const cJSON *v = get(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = get(o, k);
	cr_assert(cJSON_IsNumber(v), "field %s is not a number", k);
	return v->valuedouble;
}

/* The answers (lines with moveInfos or noResults) for query id, and the
 * error or warning lines. */
static int answers(const char *id, cJSON **found, int max)
{
	int n = 0;
	for (int i = 0; i < n_lines; i++) {
		const char *lid = str(lines[i], "id");
		if (lid && !strcmp(lid, id) && get(lines[i], "turnNumber") && n < max)
			found[n++] = lines[i];
	}
	return n;
}

/* The one error (or warning) line for id and field; its message. */
static const char *message(const char *kind, const char *id, const char *field)
{
	const char *msg = NULL;
	for (int i = 0; i < n_lines; i++) {
		const char *lid = str(lines[i], "id"), *f = str(lines[i], "field");
		if (str(lines[i], kind) && (!id ? !lid : lid && !strcmp(lid, id)) &&
		    (!field || (f && !strcmp(f, field)))) {
			cr_assert(!msg, "two %s lines for %s", kind, id ? id : "(no id)");
			msg = str(lines[i], kind);
		}
	}
	return msg;
}

/* ---- checking an answer ------------------------------------------------------ */

/* A random game of n moves on a Go board of `size` (no passes, no filled
 * eyes), its moves as a JSON list into buf, and every position into
 * pos[0..n]. Deterministic. */
static int random_game(int size, int n, char *buf, size_t len, game *pos)
{
	game_params p = game_params_sized(GAME_KIND_GO, size, 7.5);
	game g;
	cr_assert(game_init(&g, &p) == GAME_OK);
	uint64_t r = 0x9e3779b97f4a7c15ULL;
	size_t k = (size_t)snprintf(buf, len, "[");
	int played = 0;
	for (; played < n; played++) {
		pos[played] = g;
		int legal[GAME_MAX_ACTIONS], cand[GAME_MAX_ACTIONS], c = 0;
		int m = game_legal_moves(&g, legal);
		for (int i = 0; i < m; i++)
			if (legal[i] != game_pass_move(&g) && !game_fills_own_eye(&g, legal[i]))
				cand[c++] = legal[i];
		if (c == 0)
			break;
		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		int mv = cand[r % (uint64_t)c];
		char t[8];
		k += (size_t)snprintf(buf + k, len - k, "%s[\"%s\",\"%s\"]", played ? "," : "",
				      game_to_move(&g) == GAME_BLACK ? "B" : "W", game_move_to_text(&g, mv, t));
		cr_assert(game_play(&g, mv) == GAME_OK);
	}
	pos[played] = g;
	snprintf(buf + k, len - k, "]");
	cr_assert(k + 2 < len);
	return played;
}

static bool is_hex16(const char *s)
{
	return s && strlen(s) == 16 && strspn(s, "0123456789ABCDEF") == 16;
}

/* An answer for position g with `visits` visits: KataGo's fields, their
 * types and ranges; every move and PV move a vertex of g, each move
 * legal; order counting from 0; the children's visits one fewer than the
 * root's (the root's first visit expands it). */
static void check_answer(const cJSON *o, const game *g, int visits, bool scores)
{
	char text[8];
	cr_assert(cJSON_IsFalse(get(o, "isDuringSearch")));
	cr_assert(cJSON_IsNumber(get(o, "turnNumber")));
	const cJSON *mis = get(o, "moveInfos"), *mi;
	cr_assert(cJSON_IsArray(mis));
	int order = 0, sum = 0;
	cJSON_ArrayForEach(mi, mis) {
		int m;
		const char *mv = str(mi, "move");
		cr_assert(mv && game_move_from_text(g, mv, &m) == GAME_OK, "move %s", mv ? mv : "?");
		cr_assert(game_is_legal(g, m), "%s is not legal here", mv);
		cr_assert_str_eq(mv, game_move_to_text(g, m, text), "move names as GTP writes them");
		int v = (int)num(mi, "visits");
		cr_assert(v >= 1 && v == num(mi, "visits"));
		cr_assert_eq(num(mi, "edgeVisits"), v);
		sum += v;
		double wr = num(mi, "winrate"), prior = num(mi, "prior"), u = num(mi, "utility");
		cr_assert(wr >= 0 && wr <= 1 && prior >= 0 && prior <= 1 && u >= -1 && u <= 1);
		(void)num(mi, "lcb");
		(void)num(mi, "utilityLcb");
		cr_assert_eq(num(mi, "order"), order++);
		const cJSON *pv = get(mi, "pv"), *p;
		cr_assert(cJSON_IsArray(pv) && cJSON_GetArraySize(pv) >= 1);
		cr_assert_str_eq(cJSON_GetArrayItem(pv, 0)->valuestring, mv);
		cJSON_ArrayForEach(p, pv) {
			cr_assert(cJSON_IsString(p) && game_move_from_text(g, p->valuestring, &m) == GAME_OK);
		}
		if (scores) {
			cr_assert_eq(num(mi, "scoreLead"), num(mi, "scoreMean"));
			cr_assert(num(mi, "scoreStdev") >= 0);
		}
	}
	const cJSON *ri = get(o, "rootInfo");
	cr_assert(cJSON_IsObject(ri));
	cr_assert_eq(num(ri, "visits"), visits, "maxVisits %d honoured exactly", visits);
	cr_assert_eq(sum, visits - 1);
	double wr = num(ri, "winrate");
	cr_assert(wr >= 0 && wr <= 1);
	cr_assert_str_eq(str(ri, "currentPlayer"), game_to_move(g) == GAME_BLACK ? "B" : "W");
	cr_assert(is_hex16(str(ri, "thisHash")) && is_hex16(str(ri, "symHash")));
	if (scores)
		(void)num(ri, "scoreLead");
}

/* ---- KataGo's documented examples --------------------------------------------- */

/* docs/Analysis_Engine.md's query: a 2-stone handicap game, turns 0..2. */
Test(analysis, documentation_example)
{
	start(NULL, 2, 12);
	send("{\"id\":\"foo\",\"initialStones\":[[\"B\",\"Q4\"],[\"B\",\"C4\"]],\"moves\":[[\"W\",\"P5\"],"
	     "[\"B\",\"P6\"]],\"rules\":\"tromp-taylor\",\"komi\":7.5,\"boardXSize\":19,"
	     "\"boardYSize\":19,\"analyzeTurns\":[0,1,2]}");
	finish();
	cJSON *a[8];
	cr_assert_eq(answers("foo", a, 8), 3, "one answer per turn asked");
	cr_assert_eq(n_lines, 3, "no error or warning for the documented query");
	game_params p = game_params_sized(GAME_KIND_GO, 19, 7.5);
	game pos[3];
	game_init(&pos[0], &p);
	int m;
	game_move_from_text(&pos[0], "Q4", &m);
	go_place_stone(&pos[0].u.go, GAME_BLACK, m);
	game_move_from_text(&pos[0], "C4", &m);
	go_place_stone(&pos[0].u.go, GAME_BLACK, m);
	game_set_to_move(&pos[0], GAME_WHITE); /* the first move is White's */
	pos[1] = pos[0];
	game_move_from_text(&pos[1], "P5", &m);
	game_play(&pos[1], m);
	pos[2] = pos[1];
	game_move_from_text(&pos[2], "P6", &m);
	game_play(&pos[2], m);
	bool seen[3] = { false, false, false };
	for (int i = 0; i < 3; i++) {
		cr_assert_str_eq(str(a[i], "id"), "foo");
		int t = (int)num(a[i], "turnNumber");
		cr_assert(t >= 0 && t <= 2 && !seen[t]);
		seen[t] = true;
		check_answer(a[i], &pos[t], 12, true);
		cr_assert(!get(a[i], "ownership") && !get(a[i], "policy"), "only when asked");
	}
	stop();
}

/* A query asking for everything, on a network: ownership (boardXSize x
 * boardYSize values in [-1, 1]), the policy (one more for the pass, -1 on
 * the occupied points, the rest summing to 1), PV visits, each move's
 * ownership. */
Test(analysis, everything_asked)
{
	start(go9, 1, 20);
	send("{\"id\":\"all\",\"moves\":[[\"B\",\"E5\"],[\"W\",\"C3\"]],\"rules\":\"chinese\",\"komi\":7,"
	     "\"boardXSize\":9,\"boardYSize\":9,\"includeOwnership\":true,\"includeOwnershipStdev\":true,"
	     "\"includeMovesOwnership\":true,\"includePolicy\":true,\"includePVVisits\":true,"
	     "\"analysisPVLen\":2,\"overrideSettings\":{\"reportAnalysisWinratesAs\":\"SIDETOMOVE\"}}");
	finish();
	cJSON *a[2];
	cr_assert_eq(answers("all", a, 2), 1);
	cr_assert_eq(n_lines, 1, "%s", message("warning", "all", NULL));
	game_params p = game_params_sized(GAME_KIND_GO, 9, 7);
	game g;
	game_init(&g, &p);
	int e5, c3;
	game_move_from_text(&g, "E5", &e5);
	game_move_from_text(&g, "C3", &c3);
	game_play(&g, e5);
	game_play(&g, c3);
	check_answer(a[0], &g, 20, true);
	cr_assert_eq(num(a[0], "turnNumber"), 2, "without analyzeTurns: the last turn");
	cr_assert(cJSON_IsNumber(get(get(a[0], "rootInfo"), "rawWinrate")));
	const cJSON *own = get(a[0], "ownership"), *v;
	cr_assert(cJSON_IsArray(own) && cJSON_GetArraySize(own) == 81);
	cJSON_ArrayForEach(v, own) cr_assert(v->valuedouble >= -1 && v->valuedouble <= 1);
	/* Row-major from the top left: E5 (x 4, y 4) is entry 4 * 9 + 4 and
	 * Black's stone, C3 (row 3 from the bottom: row 6 from the top)
	 * White's; Black is to move and answers are the side to move's. The
	 * estimate (16 random playouts, seeded by the position) is rough:
	 * only its sign is sure. */
	cr_assert_gt(cJSON_GetArrayItem(own, 4 * 9 + 4)->valuedouble, 0);
	cr_assert_lt(cJSON_GetArrayItem(own, 6 * 9 + 2)->valuedouble, 0);
	cr_assert_eq(cJSON_GetArraySize(get(a[0], "ownershipStdev")), 81);
	const cJSON *pol = get(a[0], "policy");
	cr_assert(cJSON_IsArray(pol) && cJSON_GetArraySize(pol) == 82);
	double sum = 0;
	int i = 0;
	cJSON_ArrayForEach(v, pol) {
		int y = 8 - i / 9, x = i % 9, m = i == 81 ? 81 : y * 9 + x;
		if (m == e5 || m == c3)
			cr_assert_eq(v->valuedouble, -1, "occupied: -1");
		else {
			cr_assert(v->valuedouble >= 0);
			sum += v->valuedouble;
		}
		i++;
	}
	cr_assert_float_eq(sum, 1, 1e-4);
	const cJSON *mi;
	cJSON_ArrayForEach(mi, get(a[0], "moveInfos")) {
		int np = cJSON_GetArraySize(get(mi, "pv"));
		cr_assert(np <= 3, "analysisPVLen 2: at most 3 moves");
		cr_assert_eq(cJSON_GetArraySize(get(mi, "pvVisits")), np);
		cr_assert_eq(cJSON_GetArraySize(get(mi, "pvEdgeVisits")), np);
		cr_assert_eq(cJSON_GetArrayItem(get(mi, "pvVisits"), 0)->valuedouble, num(mi, "visits"));
		cr_assert_eq(cJSON_GetArraySize(get(mi, "ownership")), 81);
	}
	stop();
}

/* reportAnalysisWinratesAs: Black's view (the default) and White's are
 * each other's complement, and scores change sign. */
Test(analysis, winrates_as_black_or_white)
{
	start(go9, 1, 16);
	const char *q = "\"moves\":[[\"B\",\"E5\"]],\"rules\":\"chinese\",\"boardXSize\":9,\"boardYSize\":9";
	send("{\"id\":\"b\",%s}", q);
	finish();
	send("{\"id\":\"w\",%s,\"overrideSettings\":{\"reportAnalysisWinratesAs\":\"WHITE\"}}", q);
	finish();
	cJSON *b[2], *w[2];
	cr_assert_eq(answers("b", b, 2), 1);
	cr_assert_eq(answers("w", w, 2), 1);
	const cJSON *rb = get(b[0], "rootInfo"), *rw = get(w[0], "rootInfo");
	cr_assert_float_eq(num(rb, "rawWinrate") + num(rw, "rawWinrate"), 1, 1e-6);
	cr_assert_float_eq(num(rb, "scoreLead"), -num(rw, "scoreLead"), 1e-6);
	stop();
}

/* The score head's answers for g under each of its symmetries (the
 * engine's evaluator draws one at random), side to move's view, in points. */
static int head_scores(const nn_net *net, const game *g, float *answers_out)
{
	float planes[32 * 81], pol[82], v, own[81], score;
	int n = game_num_symmetries(g);
	for (int s = 0; s < n; s++) {
		cr_assert_gt(nn_encode_sym(g, net->arch.encoding, s, planes), 0);
		nn_reference_forward_heads(net, 1, planes, pol, &v, NULL, own, &score);
		answers_out[s] = 81 * score;
	}
	return n;
}

static bool among(double x, const float *set, int n, double tol)
{
	for (int i = 0; i < n; i++)
		if (fabs(x - set[i]) <= tol * (1 + fabs(x)))
			return true;
	return false;
}

/* A network with the ownership and score heads: the root's ownership is
 * the ownership head's (the reference's) for the position, in Black's
 * view; scores are the search's, as KataGo's: a move searched once has
 * the score head's answer after it, and the root's mean times its visits
 * is its own answer plus each move's mean times its visits; no
 * scoreStdev (the head has none). */
Test(analysis, ownership_from_the_head_and_scores_from_the_search)
{
	start(go9h, 1, 16);
	send("{\"id\":\"h\",\"moves\":[[\"B\",\"E5\"]],\"rules\":\"chinese\",\"komi\":7.5,"
	     "\"boardXSize\":9,\"boardYSize\":9,\"includeOwnership\":true}");
	finish();
	cJSON *h[2];
	cr_assert_eq(answers("h", h, 2), 1);
	char err[256];
	nn_net *net = nn_net_load(go9h, NULL, err, sizeof(err));
	cr_assert(net, "%s", err);
	game g;
	game_params gp = game_params_sized(GAME_KIND_GO, 9, 7.5);
	game_init(&g, &gp);
	cr_assert_eq(game_play(&g, 4 * 9 + 4), GAME_OK); /* E5 */
	float planes[32 * 81], pol[82], v, own[81], score;
	cr_assert_gt(nn_encode(&g, net->arch.encoding, planes), 0);
	nn_reference_forward_heads(net, 1, planes, pol, &v, NULL, own, &score);
	/* White to move: Black's view is the heads' negated. */
	const cJSON *ri = get(h[0], "rootInfo"), *ow = get(h[0], "ownership");
	cr_assert(cJSON_IsArray(ow) && cJSON_GetArraySize(ow) == 81);
	for (int row = 0; row < 9; row++) /* KataGo's rows: the top one first */
		for (int x = 0; x < 9; x++) {
			double got = cJSON_GetArrayItem(ow, row * 9 + x)->valuedouble;
			cr_assert_float_eq(got, -own[(8 - row) * 9 + x], 1e-5, "row %d x %d", row, x);
		}
	cr_assert_null(cJSON_GetObjectItemCaseSensitive(ri, "scoreStdev"));
	/* Everything in White's view (the player to move), from Black's. */
	double root = -num(ri, "scoreLead"), sum = 0;
	int visits = (int)num(ri, "visits"), ones = 0;
	const cJSON *mi;
	cJSON_ArrayForEach(mi, get(h[0], "moveInfos")) {
		double sc = -num(mi, "scoreLead");
		int n = (int)num(mi, "visits");
		cr_assert_null(cJSON_GetObjectItemCaseSensitive(mi, "scoreStdev"));
		sum += n * sc;
		if (n != 1)
			continue;
		game after = g;
		int m;
		cr_assert_eq(game_move_from_text(&g, str(mi, "move"), &m), GAME_OK);
		cr_assert_eq(game_play(&after, m), GAME_OK);
		float want[8];
		int ns = head_scores(net, &after, want);
		/* The head answers for Black, to move after it: White's view
		 * is its negation. */
		for (int k = 0; k < ns; k++)
			want[k] = -want[k];
		cr_assert(among(sc, want, ns, 1e-4), "%s searched once: %g, not the head's answer",
			  str(mi, "move"), sc);
		ones++;
	}
	cr_assert_gt(ones, 0, "some move was searched once");
	float want[8];
	int ns = head_scores(net, &g, want);
	cr_assert(among(visits * root - sum, want, ns, 1e-3), "root %g x %d - moves %g is not the "
		  "root's own answer", root, visits, sum);
	nn_net_free(net);
	stop();
}

/* ---- errors and warnings -------------------------------------------------------- */

/* Each bad query gets exactly one error, worded as KataGo words it, on the
 * field at fault; nothing is analysed; the engine goes on. */
Test(analysis, errors_as_katago_words_them)
{
	static const struct {
		const char *query; /* after {"id":"e", */
		const char *field;
		const char *error;
	} cases[] = {
		{ "\"moves\":[],\"rules\":\"chinese\",\"boardYSize\":9}", "boardXSize",
		  "Must provide an integer from 2 to 19" },
		{ "\"moves\":[],\"rules\":\"chinese\",\"boardXSize\":9,\"boardYSize\":40}", "boardYSize",
		  "Must provide an integer from 2 to 19" },
		{ "\"moves\":[],\"rules\":\"chinese\",\"boardXSize\":9,\"boardYSize\":\"9\"}", "boardYSize",
		  "Must provide an integer from 2 to 19" },
		{ "\"moves\":[],\"rules\":\"chinese\",\"boardXSize\":19,\"boardYSize\":19}", "boardXSize",
		  "The network plays Go 9x9 only" },
		{ "\"rules\":\"chinese\",\"boardXSize\":9,\"boardYSize\":9}", "moves",
		  "Must specify an array of [player,location] pairs" },
		{ "\"moves\":[[\"B\"]],\"rules\":\"chinese\",\"boardXSize\":9,\"boardYSize\":9}", "moves",
		  "Must be an array of pairs of the form: [\"b\" or \"w\", GTP board vertex]" },
		{ "\"moves\":[[\"X\",\"D4\"]],\"rules\":\"chinese\",\"boardXSize\":9,\"boardYSize\":9}",
		  "moves", "Could not parse player: X" },
		{ "\"moves\":[[\"B\",\"K4\"]],\"rules\":\"chinese\",\"boardXSize\":9,\"boardYSize\":9}",
		  "moves", "Could not parse board location: K4" },
		{ "\"moves\":[[\"B\",\"D4\"],[\"W\",\"D4\"]],\"rules\":\"chinese\",\"boardXSize\":9,"
		  "\"boardYSize\":9}", "moves", "Illegal move 1: D4" },
		{ "\"initialStones\":[[\"B\",\"pass\"]],\"moves\":[],\"rules\":\"chinese\",\"boardXSize\":9,"
		  "\"boardYSize\":9}", "initialStones", "Could not parse board location: pass" },
		{ "\"moves\":[],\"initialPlayer\":\"red\",\"rules\":\"chinese\",\"boardXSize\":9,"
		  "\"boardYSize\":9}", "initialPlayer", "Must be \"b\" or \"w\"" },
		{ "\"moves\":[],\"analyzeTurns\":[0,1],\"rules\":\"chinese\",\"boardXSize\":9,"
		  "\"boardYSize\":9}", "analyzeTurns", "Invalid turn number: 1" },
		{ "\"moves\":[],\"analyzeTurns\":\"all\",\"rules\":\"chinese\",\"boardXSize\":9,"
		  "\"boardYSize\":9}", "analyzeTurns", "Must specify an array of integers indicating turns to analyze" },
		{ "\"moves\":[],\"priorities\":[1],\"rules\":\"chinese\",\"boardXSize\":9,\"boardYSize\":9}",
		  "priorities", "Can only specify when also specifying analyzeTurns" },
		{ "\"moves\":[],\"boardXSize\":9,\"boardYSize\":9}", "rules",
		  "Must specify rules string, such as \"chinese\" or \"tromp-taylor\", or a JSON object "
		  "with detailed rules parameters." },
		{ "\"moves\":[],\"rules\":\"go\",\"boardXSize\":9,\"boardYSize\":9}", "rules",
		  "Could not parse rules: go" },
		{ "\"moves\":[],\"rules\":\"chinese\",\"komi\":7.3,\"boardXSize\":9,\"boardYSize\":9}",
		  "komi", "Must be a integer or half-integer from -400.0 to 400.0" },
		{ "\"moves\":[],\"rules\":\"chinese\",\"maxVisits\":0,\"boardXSize\":9,\"boardYSize\":9}",
		  "maxVisits", "Must be an integer from 1 to 2^50" },
		{ "\"moves\":[],\"rules\":\"chinese\",\"includeOwnership\":\"yes\",\"boardXSize\":9,"
		  "\"boardYSize\":9}", "includeOwnership", "Must be a boolean" },
		{ "\"moves\":[],\"rules\":\"chinese\",\"overrideSettings\":[],\"boardXSize\":9,"
		  "\"boardYSize\":9}", "overrideSettings", "Must be an object" },
		{ "\"moves\":[],\"rules\":\"chinese\",\"overrideSettings\":{\"maxVisits\":-3},"
		  "\"boardXSize\":9,\"boardYSize\":9}", "overrideSettings", "Could not set settings: maxVisits" },
		{ "\"moves\":[],\"rules\":\"chinese\",\"priority\":1,\"priorities\":[1],\"analyzeTurns\":[0],"
		  "\"boardXSize\":9,\"boardYSize\":9}", "priority", "Cannot specify both priority and priorities" },
		{ "\"moves\":[],\"rules\":\"chinese\",\"avoidMoves\":[],\"allowMoves\":[],\"boardXSize\":9,"
		  "\"boardYSize\":9}", "allowMoves", "Cannot specify both allowMoves and avoidMoves" },
		{ "\"moves\":[],\"rules\":\"chinese\",\"avoidMoves\":[{\"player\":\"B\"}],\"boardXSize\":9,"
		  "\"boardYSize\":9}", "avoidMoves",
		  "Must be a list of dicts with subfields 'player', 'moves', 'untilDepth'" },
		{ "\"moves\":[],\"rules\":\"chinese\",\"reportDuringSearchEvery\":0,\"boardXSize\":9,"
		  "\"boardYSize\":9}", "reportDuringSearchEvery",
		  "Must be number of seconds from 0.001 to 1000000.0" },
		{ "\"action\":\"terminate\"}", "terminateId",
		  "Requests for a terminate action must have a string \"terminateId\" field" },
	};
	start(go9, 1, 4);
	int n = (int)(sizeof(cases) / sizeof(cases[0]));
	for (int i = 0; i < n; i++) {
		send("{\"id\":\"e%d\",%s", i, cases[i].query);
		finish();
		char id[16];
		snprintf(id, sizeof(id), "e%d", i);
		const char *msg = message("error", id, cases[i].field);
		cr_assert(msg, "case %d (%s): no error on %s", i, cases[i].query, cases[i].field);
		cr_assert(!strncmp(msg, cases[i].error, strlen(cases[i].error)),
			  "case %d: error \"%s\", expected \"%s\"", i, msg, cases[i].error);
		cJSON *a[2];
		cr_assert_eq(answers(id, a, 2), 0, "case %d: nothing analysed", i);
	}
	analysis_stats s;
	analysis_engine_get_stats(eng, &s);
	cr_assert_eq(s.errors, (uint64_t)n, "one error line per bad query");
	/* The engine goes on. */
	send("{\"id\":\"ok\",\"moves\":[],\"rules\":\"chinese\",\"boardXSize\":9,\"boardYSize\":9}");
	finish();
	cJSON *a[2];
	cr_assert_eq(answers("ok", a, 2), 1);
	stop();
}

/* Lines that are not queries: KataGo's general errors, without an id. */
Test(analysis, malformed_lines)
{
	start(NULL, 1, 4);
	send("{\"id\":\"x\",");
	send("[1,2,3]");
	send("{\"id\":7,\"moves\":[]}");
	send("{\"id\":\"a\",\"action\":\"fly\"}");
	finish();
	cr_assert_eq(n_lines, 4);
	cr_assert(strstr(str(lines[0], "error"), "could not parse input line as json request: {\"id\":\"x\","));
	cr_assert(strstr(str(lines[1], "error"), "Request line was valid json but was not an object"));
	cr_assert_str_eq(str(lines[2], "error"), "Request must have a string \"id\" field");
	cr_assert_str_eq(str(lines[3], "error"), "'action' field must be 'query_version' or "
			 "'query_models' or 'clear_cache' or 'terminate' or 'terminate_all'");
	for (int i = 0; i < 4; i++)
		cr_assert(!get(lines[i], "id") && !get(lines[i], "field"));
	/* Any bytes, any length: control bytes and NULs, 1 MB of noise, a
	 * deep nest; each is one error, quoted at most 200 bytes long. */
	static char noise[1 << 20];
	for (size_t i = 0; i < sizeof(noise); i++)
		noise[i] = (char)(i * 7919 % 251);
	analysis_engine_handle(eng, noise, sizeof(noise));
	static char nest[20000];
	memset(nest, '[', sizeof(nest));
	analysis_engine_handle(eng, nest, sizeof(nest));
	const char nul[] = "{\"id\":\"n\0\",\"moves\":[]}";
	analysis_engine_handle(eng, nul, sizeof(nul) - 1);
	finish();
	cr_assert_eq(n_lines, 7);
	for (int i = 4; i < 7; i++) {
		const char *e = str(lines[i], "error");
		cr_assert(e && strlen(e) < 400, "line %d: %s", i, e ? e : "(none)");
	}
	send("{\"id\":\"fine\",\"moves\":[],\"rules\":\"chinese\",\"boardXSize\":9,\"boardYSize\":9}");
	finish();
	cJSON *a[2];
	cr_assert_eq(answers("fine", a, 2), 1);
	stop();
}

/* Lines read from a file descriptor: one longer than 16 MiB is refused
 * and skipped whole; the lines around it are answered; a last line
 * without its newline is read. */
Test(analysis, line_longer_than_the_limit)
{
	char path[] = "/tmp/sente_analysis_in_XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fprintf(f, "{\"id\":\"v1\",\"action\":\"query_version\"}\n{\"id\":\"big\",\"pad\":\"");
	for (int i = 0; i < (17 << 20) / 64; i++)
		fputs("0123456789012345678901234567890123456789012345678901234567890123", f);
	fprintf(f, "\"}\n{\"id\":\"v2\",\"action\":\"query_version\"}");
	fclose(f);
	start(NULL, 1, 4);
	int in = open(path, O_RDONLY);
	cr_assert(in >= 0);
	cr_assert_eq(analysis_engine_run(eng, in), 0);
	close(in);
	unlink(path);
	finish();
	cr_assert_eq(n_lines, 3);
	cr_assert_str_eq(str(lines[0], "id"), "v1");
	cr_assert(strstr(str(lines[1], "error"), "longer than"));
	cr_assert_str_eq(str(lines[2], "id"), "v2");
	stop();
}

/* Warnings leave the query going: an unknown field, rules sente plays as
 * area scoring (KaTrain's default "japanese"), KataGo settings sente does
 * not have (KaTrain's wideRootNoise). */
Test(analysis, warnings_then_the_answer)
{
	start(go9, 1, 8);
	send("{\"id\":\"w\",\"moves\":[],\"rules\":\"japanese\",\"boardXSize\":9,\"boardYSize\":9,"
	     "\"colour\":\"B\",\"overrideSettings\":{\"wideRootNoise\":0.04,\"maxTime\":5,"
	     "\"reportAnalysisWinratesAs\":\"BLACK\"}}");
	finish();
	const char *m = message("warning", "w", "colour");
	cr_assert(m && !strncmp(m, "Unexpected or unused field, do you have a typo?", 47), "%s", m);
	m = message("warning", "w", "rules");
	cr_assert(m && strstr(m, "Rules japanese not supported") && strstr(m, "scoreAREA"), "%s", m);
	m = message("warning", "w", "overrideSettings");
	cr_assert(m && !strcmp(m, "Unknown config params: wideRootNoise"), "%s", m);
	cJSON *a[2];
	cr_assert_eq(answers("w", a, 2), 1);
	stop();
}

/* ---- actions -------------------------------------------------------------------- */

Test(analysis, query_version_and_models)
{
	start(go9, 1, 4);
	send("{\"id\":\"v\",\"action\":\"query_version\"}");
	send("{\"id\":\"m\",\"action\":\"query_models\"}");
	finish();
	cr_assert_eq(n_lines, 2);
	cr_assert_str_eq(str(lines[0], "id"), "v");
	cr_assert_str_eq(str(lines[0], "action"), "query_version", "the query echoed");
	cr_assert(str(lines[0], "version") && str(lines[0], "git_hash"));
	const cJSON *ms = get(lines[1], "models");
	cr_assert(cJSON_IsArray(ms) && cJSON_GetArraySize(ms) == 1);
	cr_assert_str_eq(str(cJSON_GetArrayItem(ms, 0), "name"), go9);
	stop();
}

/* clear_cache echoes the query and empties the network cache: the same
 * query again costs network evaluations that the warm cache had saved. */
Test(analysis, clear_cache)
{
	start(go9, 1, 40);
	const char *q = "{\"id\":\"q\",\"moves\":[[\"B\",\"E5\"]],\"rules\":\"chinese\",\"boardXSize\":9,"
			"\"boardYSize\":9}";
	analysis_stats s0, s1, s2;
	send("%s", q);
	finish();
	analysis_engine_get_stats(eng, &s0);
	send("%s", q);
	finish();
	analysis_engine_get_stats(eng, &s1);
	send("{\"id\":\"c\",\"action\":\"clear_cache\"}");
	send("%s", q);
	finish();
	analysis_engine_get_stats(eng, &s2);
	cr_assert_gt(s0.eval.evals, 10);
	cr_assert_lt(s1.eval.evals - s0.eval.evals, (s0.eval.evals) / 2, "a warm cache answers most");
	cr_assert_gt(s2.eval.evals - s1.eval.evals, (s0.eval.evals) / 2, "a cleared one does not");
	bool echoed = false;
	for (int i = 0; i < n_lines; i++)
		echoed |= str(lines[i], "action") && !strcmp(str(lines[i], "action"), "clear_cache") &&
			  !strcmp(str(lines[i], "id"), "c");
	cr_assert(echoed);
	stop();
}

/* terminate: every turn of the query is still answered exactly once
 * (noResults when its analysis had not begun), quickly, and the action is
 * echoed; terminate with turnNumbers ends only those turns;
 * terminate_all ends the rest. */
Test(analysis, terminate)
{
	/* A tree large enough that no turn's search ends by filling it
	 * before the terminate comes: a 32 MB tree filled in about 70 ms on
	 * a fast machine, and three turns had finished by 200 ms. */
	analysis_options o = test_options(go9, 1, 1000000);
	o.tree_bytes = (size_t)512 << 20;
	start_with(&o);
	char moves[4096];
	game *pos = malloc(sizeof(game) * 31);
	int n = random_game(9, 30, moves, sizeof(moves), pos);
	send("{\"id\":\"long\",\"moves\":%s,\"rules\":\"chinese\",\"boardXSize\":9,\"boardYSize\":9,"
	     "\"analyzeTurns\":[0,1,2,3,4,5,6,7,8,9,10]}", moves);
	send("{\"id\":\"other\",\"moves\":%s,\"rules\":\"chinese\",\"boardXSize\":9,\"boardYSize\":9,"
	     "\"analyzeTurns\":[20,21,22],\"priority\":-1}", moves);
	usleep(200 * 1000); /* the first turn is being searched */
	send("{\"id\":\"t1\",\"action\":\"terminate\",\"terminateId\":\"long\"}");
	send("{\"id\":\"t2\",\"action\":\"terminate\",\"terminateId\":\"other\",\"turnNumbers\":[21]}");
	usleep(300 * 1000);
	send("{\"id\":\"t3\",\"action\":\"terminate_all\"}");
	finish();
	cJSON *a[32];
	cr_assert_eq(answers("long", a, 32), 11);
	int seen[31] = { 0 }, partial = 0;
	for (int i = 0; i < 11; i++) {
		int t = (int)num(a[i], "turnNumber");
		cr_assert(t >= 0 && t <= 10 && !seen[t]++, "turn %d answered twice", t);
		cr_assert(cJSON_IsFalse(get(a[i], "isDuringSearch")));
		if (get(a[i], "noResults"))
			cr_assert(cJSON_IsTrue(get(a[i], "noResults")) && !get(a[i], "moveInfos"));
		else {
			partial++;
			cr_assert_lt(num(get(a[i], "rootInfo"), "visits"), 1000000);
		}
	}
	/* Only turns whose search had begun have results: the first one or
	 * two (a fast machine may fill the first one's tree before the
	 * terminate comes); the rest were still queued. */
	cr_assert_leq(partial, 2, "%d turns searched", partial);
	cr_assert_eq(answers("other", a, 32), 3);
	for (int i = 0; i < 3; i++) {
		int t = (int)num(a[i], "turnNumber");
		cr_assert(t >= 20 && t <= 22 && !seen[t]++, "turn %d answered twice", t);
	}
	for (int i = 1; i <= 3; i++) {
		char id[4];
		snprintf(id, sizeof(id), "t%d", i);
		bool echoed = false;
		for (int k = 0; k < n_lines; k++)
			echoed |= str(lines[k], "id") && !strcmp(str(lines[k], "id"), id) &&
				  str(lines[k], "action");
		cr_assert(echoed, "%s echoed", id);
	}
	(void)n;
	free(pos);
	stop();
}

/* Higher priority first: with one analysis thread busy, a query of
 * priority 10 sent after one of priority -5 is answered before it. */
Test(analysis, priority_order)
{
	start(go9, 1, 3000); /* the busy search lasts long enough to queue the others */
	const char *q = "\"moves\":[],\"rules\":\"chinese\",\"boardXSize\":9,\"boardYSize\":9";
	send("{\"id\":\"busy\",%s}", q);
	send("{\"id\":\"low\",%s,\"maxVisits\":2,\"priority\":-5}", q);
	send("{\"id\":\"high\",%s,\"maxVisits\":2,\"priority\":10}", q);
	finish();
	int at_low = -1, at_high = -1;
	for (int i = 0; i < n_lines; i++) {
		const char *id = str(lines[i], "id");
		if (!strcmp(id, "low"))
			at_low = i;
		if (!strcmp(id, "high"))
			at_high = i;
	}
	cr_assert(at_low >= 0 && at_high >= 0 && at_high < at_low, "high %d, low %d", at_high, at_low);
	stop();
}

/* reportDuringSearchEvery: reports with isDuringSearch true while the
 * position is searched, then exactly one final answer. */
Test(analysis, reports_during_search)
{
	start(go9, 1, 3000);
	send("{\"id\":\"r\",\"moves\":[],\"rules\":\"chinese\",\"boardXSize\":9,\"boardYSize\":9,"
	     "\"reportDuringSearchEvery\":0.005,\"firstReportDuringSearchAfter\":0.001}");
	finish();
	cJSON *a[256];
	int n = answers("r", a, 256), during = 0, final = 0;
	for (int i = 0; i < n; i++) {
		if (cJSON_IsTrue(get(a[i], "isDuringSearch"))) {
			cr_assert_eq(final, 0, "the final answer comes last");
			cr_assert_lt(num(get(a[i], "rootInfo"), "visits"), 3001);
			during++;
		} else {
			final++;
			cr_assert_eq(num(get(a[i], "rootInfo"), "visits"), 3000);
		}
	}
	cr_assert_eq(final, 1);
	cr_assert_geq(during, 1);
	stop();
}

/* ---- positions -------------------------------------------------------------------- */

/* avoidMoves: the banned moves never appear; allowMoves: only the listed. */
Test(analysis, avoid_and_allow)
{
	start(NULL, 1, 60);
	send("{\"id\":\"av\",\"moves\":[],\"rules\":\"chinese\",\"boardXSize\":9,\"boardYSize\":9,"
	     "\"avoidMoves\":[{\"player\":\"B\",\"moves\":[\"C3\",\"G7\",\"C7\",\"G3\",\"E5\"],"
	     "\"untilDepth\":1}]}");
	send("{\"id\":\"al\",\"moves\":[],\"rules\":\"chinese\",\"boardXSize\":9,\"boardYSize\":9,"
	     "\"allowMoves\":[{\"player\":\"B\",\"moves\":[\"A1\",\"J9\"],\"untilDepth\":1}]}");
	finish();
	cJSON *a[2];
	const cJSON *mi;
	cr_assert_eq(answers("av", a, 2), 1);
	cr_assert_gt(cJSON_GetArraySize(get(a[0], "moveInfos")), 3);
	cJSON_ArrayForEach(mi, get(a[0], "moveInfos")) {
		const char *m = str(mi, "move");
		cr_assert(strcmp(m, "C3") && strcmp(m, "G7") && strcmp(m, "C7") && strcmp(m, "G3") &&
			  strcmp(m, "E5"), "%s was avoided", m);
	}
	cr_assert_eq(answers("al", a, 2), 1);
	cr_assert_gt(cJSON_GetArraySize(get(a[0], "moveInfos")), 0);
	cJSON_ArrayForEach(mi, get(a[0], "moveInfos")) {
		const char *m = str(mi, "move");
		cr_assert(!strcmp(m, "A1") || !strcmp(m, "J9"), "%s was not allowed", m);
	}
	stop();
}

/* The game ended by two passes: nothing to search; the result. */
Test(analysis, finished_game)
{
	start(NULL, 1, 10);
	send("{\"id\":\"f\",\"moves\":[[\"B\",\"E5\"],[\"W\",\"pass\"],[\"B\",\"pass\"]],\"rules\":\"chinese\","
	     "\"komi\":7.5,\"boardXSize\":9,\"boardYSize\":9,\"analyzeTurns\":[2,3]}");
	finish();
	cJSON *a[2];
	cr_assert_eq(answers("f", a, 2), 2);
	for (int i = 0; i < 2; i++) {
		const cJSON *ri = get(a[i], "rootInfo");
		if (num(a[i], "turnNumber") == 3) {
			cr_assert_eq(num(ri, "visits"), 0);
			cr_assert_eq(num(ri, "winrate"), 1, "Black's 81 points beat 7.5 komi");
			cr_assert_eq(num(ri, "scoreLead"), 81 - 7.5);
		} else {
			cr_assert_eq(num(ri, "visits"), 10);
		}
	}
	stop();
}

/* A Connect Four network: its board (7x6), its moves (the columns), no
 * ownership or score. */
Test(analysis, connect_four)
{
	start(c4, 1, 16);
	send("{\"id\":\"c\",\"moves\":[[\"B\",\"4\"],[\"W\",\"4\"]],\"rules\":\"tromp-taylor\","
	     "\"boardXSize\":7,\"boardYSize\":6,\"includePolicy\":true}");
	send("{\"id\":\"bad\",\"moves\":[],\"rules\":\"tromp-taylor\",\"boardXSize\":9,\"boardYSize\":9}");
	finish();
	cJSON *a[2];
	cr_assert_eq(answers("c", a, 2), 1);
	game_params p = game_params_default(GAME_KIND_CONNECT4);
	game g;
	game_init(&g, &p);
	game_play(&g, 3);
	game_play(&g, 3);
	check_answer(a[0], &g, 16, false);
	cr_assert(!get(get(a[0], "rootInfo"), "scoreLead") && !get(a[0], "ownership"));
	cr_assert_eq(cJSON_GetArraySize(get(a[0], "policy")), 7);
	cr_assert(message("error", "bad", "boardXSize"));
	stop();
}

/* KaTrain's use: a whole game sent at once, every turn analysed. A random
 * 60-move 9x9 game, turns 0..60, 4 analysis threads over one evaluator:
 * every turn answered exactly once, each a correct answer for its own
 * position, and the shared evaluator ran batches of more than one. */
Test(analysis, whole_game_every_turn)
{
	enum { N = 60 };
	char moves[8192], turns[512];
	game *pos = malloc(sizeof(game) * (N + 1));
	cr_assert_eq(random_game(9, N, moves, sizeof(moves), pos), N);
	size_t k = (size_t)snprintf(turns, sizeof(turns), "[");
	for (int t = 0; t <= N; t++)
		k += (size_t)snprintf(turns + k, sizeof(turns) - k, "%s%d", t ? "," : "", t);
	snprintf(turns + k, sizeof(turns) - k, "]");
	start(go9, 4, 8);
	send("{\"id\":\"game\",\"moves\":%s,\"rules\":\"chinese\",\"komi\":7.5,\"boardXSize\":9,"
	     "\"boardYSize\":9,\"analyzeTurns\":%s,\"includeOwnership\":true,\"includePolicy\":true}",
	     moves, turns);
	finish();
	cJSON *a[N + 8];
	cr_assert_eq(answers("game", a, N + 8), N + 1);
	cr_assert_eq(n_lines, N + 1, "nothing but the answers");
	bool seen[N + 1] = { false };
	for (int i = 0; i <= N; i++) {
		int t = (int)num(a[i], "turnNumber");
		cr_assert(t >= 0 && t <= N && !seen[t], "turn %d twice or out of range", t);
		seen[t] = true;
		check_answer(a[i], &pos[t], 8, true);
		cr_assert_eq(cJSON_GetArraySize(get(a[i], "ownership")), 81);
		cr_assert_eq(cJSON_GetArraySize(get(a[i], "policy")), 82);
	}
	analysis_stats s;
	analysis_engine_get_stats(eng, &s);
	cr_assert_eq(s.turns, (uint64_t)N + 1);
	cr_assert_gt((double)s.eval.evals / (double)s.eval.batches, 1.5, "batches shared: %llu evals "
		     "in %llu batches", (unsigned long long)s.eval.evals,
		     (unsigned long long)s.eval.batches);
	free(pos);
	stop();
}

/* ---- the binary ---------------------------------------------------------------------- */

/* `sente analysis` as KaTrain starts KataGo (-model, -config, -analysis-threads):
 * the queries answered, the input's end waited for, exit 0. */
Test(analysis, binary_as_katrain_starts_it)
{
	char cmd[1024], got[1 << 16];
	snprintf(cmd, sizeof(cmd),
		 "printf '%%s\\n' '{\"id\":\"QUERY:1\",\"rules\":\"japanese\",\"priority\":0,"
		 "\"analyzeTurns\":[0,1],\"maxVisits\":5,\"komi\":6.5,\"boardXSize\":9,\"boardYSize\":9,"
		 "\"includeOwnership\":true,\"includeMovesOwnership\":true,\"includePolicy\":true,"
		 "\"initialStones\":[],\"initialPlayer\":\"B\",\"moves\":[[\"B\",\"E5\"]],"
		 "\"overrideSettings\":{\"reportAnalysisWinratesAs\":\"BLACK\",\"maxTime\":8}}' "
		 "'{\"action\":\"terminate\",\"terminateId\":\"QUERY:1\",\"id\":\"QUERY:2\"}' | "
		 "timeout -k 1 60 %s analysis -model %s -config /nonexistent.cfg -analysis-threads 2 "
		 "--nn-threads 1 2>/dev/null", cli_test_bin(), go9);
	cr_assert_eq(cli_test_shell(cmd, got, sizeof(got)), 0, "%s", got);
	int answered = 0, warnings = 0, echoes = 0;
	for (char *save = NULL, *l = strtok_r(got, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		cJSON *o = cJSON_Parse(l);
		cr_assert(cJSON_IsObject(o), "%s", l);
		answered += get(o, "turnNumber") != NULL;
		warnings += get(o, "warning") != NULL;
		echoes += str(o, "action") != NULL;
		cJSON_Delete(o);
	}
	cr_assert_eq(answered, 2, "both turns answered once, terminated or not");
	cr_assert_eq(warnings, 1, "japanese rules: played as area scoring");
	cr_assert_eq(echoes, 1);
}
