/* analyze.c: the analysis commands of the GTP engine (Leela Zero's
 * lz-analyze family, KataGo's kata-analyze family and kata-raw-nn, Leela
 * Zero's heatmap, GoGui's policy and ownership boards) and the estimate of
 * a position's end (ownership and score) they share with the JSON
 * analysis engine.
 *
 * A network with the ownership and score heads (nn/net.h) gives that
 * estimate: kata-analyze's `ownership` and `movesOwnership`, kata-raw-nn's
 * whiteOwnership and whiteLead, GoGui's board: the network's answer for
 * the position (the root, or the position after a move), not averaged
 * over the search tree as KataGo's ownership is. kata-analyze's scoreLead
 * and scoreMean are the search's: the score head's answers averaged over
 * each move's subtree, as the values are (mcts_root_score). Without those
 * heads (older networks, a Leela Zero network) ownership is an estimate
 * from fast random playouts of the position, kata-raw-nn prints no
 * whiteLead/whiteOwnership and kata-analyze no scoreLead/scoreMean, as
 * KataGo's consumers allow (fields are keyed). final_status_list always
 * reads the playouts. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/clock.h"
#include "engine/game_desc.h"
#include "gtp/internal.h"

/* Playouts behind an ownership estimate: the root's, and each move's. */
enum { OWN_PLAYOUTS = 200, MOVE_OWN_PLAYOUTS = 64 };

void gtp_playout_estimate(const go_board *b, int playouts, float *black, float *white,
			  double *score_mean, double *score_sd)
{
	int n = b->size * b->size;
	int (*own)[2] = calloc((size_t)n, sizeof(*own));
	go_board *scratch = malloc(sizeof(*scratch)); /* 25 KB: not on a thread's stack */
	int8_t owner[GO_MAX_SIZE * GO_MAX_SIZE];
	double sum = 0, sum2 = 0;
	if (!own || !scratch)
		playouts = 0; /* out of memory: an estimate of nothing */
	uint64_t rng = 0x5eed5eedULL ^ go_hash(b);
	for (int k = 0; k < playouts; k++) {
		*scratch = *b;
		scratch->passes = 0;
		go_playout(scratch, &rng);
		go_area(scratch, owner);
		for (int p = 0; p < n; p++)
			if (owner[p] >= 0)
				own[p][owner[p]]++;
		double s = go_score(scratch);
		sum += s;
		sum2 += s * s;
	}
	for (int p = 0; p < n; p++) {
		if (black)
			black[p] = playouts > 0 ? (float)own[p][GO_BLACK] / (float)playouts : 0;
		if (white)
			white[p] = playouts > 0 ? (float)own[p][GO_WHITE] / (float)playouts : 0;
	}
	double mean = playouts > 0 ? sum / playouts : go_score(b);
	double var = playouts > 0 ? sum2 / playouts - mean * mean : 0;
	if (score_mean)
		*score_mean = mean;
	if (score_sd)
		*score_sd = var > 0 ? sqrt(var) : 0;
	free(own);
	free(scratch);
}

void gtp_ownership(const go_board *b, int playouts, float *black, float *white)
{
	gtp_playout_estimate(b, playouts, black, white, NULL, NULL);
}

int gtp_estimate(evaluator *ev, const game *g, int playouts, float *own, float *own_sd,
		 double *score, double *score_sd)
{
	int heads = ev && !game_is_over(g) ? eval_heads(ev) : 0, n = g->u.go.size * g->u.go.size;
	bool want_own = own || own_sd, want_score = score || score_sd;
	int use = (want_own ? heads & NN_HEAD_OWN : 0) | (want_score ? heads & NN_HEAD_SCORE : 0);
	float net_own[GO_MAX_SIZE * GO_MAX_SIZE], net_score = 0, pol[GAME_MAX_ACTIONS], v;
	if (use && eval_raw_heads(ev, g, 0, pol, &v, use & NN_HEAD_OWN ? net_own : NULL,
				  use & NN_HEAD_SCORE ? &net_score : NULL) != 0)
		use = 0;
	float side = game_to_move(g) == GAME_BLACK ? 1.0f : -1.0f; /* to Black's view */
	if ((want_own && !(use & NN_HEAD_OWN)) || (want_score && !(use & NN_HEAD_SCORE))) {
		float bl[GO_MAX_SIZE * GO_MAX_SIZE], wh[GO_MAX_SIZE * GO_MAX_SIZE];
		double m, sd;
		bool po = want_own && !(use & NN_HEAD_OWN);
		gtp_playout_estimate(&g->u.go, playouts, po ? bl : NULL, po ? wh : NULL, &m, &sd);
		for (int p = 0; po && p < n; p++) {
			float d = bl[p] - wh[p], var = bl[p] + wh[p] - d * d;
			if (own)
				own[p] = d + 0.0f; /* never -0 */
			if (own_sd)
				own_sd[p] = var > 0 ? sqrtf(var) : 0;
		}
		if (want_score && !(use & NN_HEAD_SCORE)) {
			if (score)
				*score = m;
			if (score_sd)
				*score_sd = sd;
		}
	}
	/* The head's tanh is the expected owner of a two-way outcome: its
	 * spread is sqrt(1 - own^2). The score head gives no spread. */
	for (int p = 0; (use & NN_HEAD_OWN) && p < n; p++) {
		float o = side * net_own[p] + 0.0f;
		if (own)
			own[p] = o;
		if (own_sd)
			own_sd[p] = o * o < 1 ? sqrtf(1 - o * o) : 0;
	}
	if (use & NN_HEAD_SCORE) {
		if (score)
			*score = side * net_score;
		if (score_sd)
			*score_sd = NAN;
	}
	return use;
}

/* Appends values (one per point, y * width + x) as rows, top row first:
 * rows_first_sep between rows. A value is printed with fmt, or as `illegal`
 * where mask is given and false. The rows cover the game's points (Connect
 * Four: its columns, one row). */
static void reply_rows(gtp_reply *r, const gtp_engine *e, const float *v, const bool *mask,
		       const char *fmt, const char *illegal, const char *row_sep)
{
	int w = game_width(&e->game);
	int h = (game_num_actions(&e->game) - (game_pass_move(&e->game) != GAME_MOVE_NONE)) / w;
	for (int y = h - 1; y >= 0; y--) {
		for (int x = 0; x < w; x++) {
			int a = y * w + x;
			if (x)
				gtp_reply_add(r, " ");
			if (mask && !mask[a])
				gtp_reply_add(r, "%s", illegal);
			else
				gtp_reply_add(r, fmt, v[a]);
		}
		if (y > 0)
			gtp_reply_add(r, "%s", row_sep);
	}
}

/* ---- analyze options ------------------------------------------------------ */

/* Options of the analyze commands: [color] [interval] then key-value pairs
 * (KataGo's docs/GTP_Extensions.md). */
typedef struct analyze_args {
	int color;            /* side to analyse for */
	int interval_cs;      /* centiseconds between outputs */
	int max_moves;        /* most info entries per line */
	int min_moves;        /* fewest entries: 0-visit moves fill up to it */
	bool ownership;       /* kata: ownership of every point, after the moves */
	bool ownership_stdev; /* kata: its standard deviation over the playouts */
	bool moves_ownership; /* kata: ownership after each move */
	bool root_info;       /* kata: rootInfo visits, utility, winrate */
	bool pv_visits;       /* kata: visits of each PV node */
	bool pv_edge_visits;  /* kata: the same (a tree: every node has one edge in) */
	bool avoiding;        /* avoid or allow given */
	bool allowing;        /* allow given (once, not with avoid) */
	mcts_avoid avoid;     /* the bans of avoid/allow */
} analyze_args;

/* "true" or "false" into *v. */
static bool parse_bool(const char *s, bool *v)
{
	if (!strcmp(s, "true") || !strcmp(s, "1"))
		*v = true;
	else if (!strcmp(s, "false") || !strcmp(s, "0"))
		*v = false;
	else
		return false;
	return true;
}

/* avoid|allow PLAYER VERTEX,VERTEX,... UNTILDEPTH into a->avoid. */
static bool parse_ban(gtp_engine *e, const char *key, const char *who, const char *list,
		      const char *depth_s, analyze_args *a, gtp_reply *r)
{
	int color = gtp_parse_color(who), depth;
	bool allow = !strcmp(key, "allow");
	if (color < 0)
		return gtp_fail(r, "syntax error (avoid/allow: player)");
	if (!gtp_parse_int(depth_s, &depth) || depth < 1)
		return gtp_fail(r, "syntax error (avoid/allow: depth, an integer >= 1)");
	if (allow ? a->avoiding : a->allowing)
		return gtp_fail(r, "allow cannot be combined with avoid or given twice");
	bool listed[GAME_MAX_ACTIONS] = { false };
	char buf[GTP_MAX_LINE];
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int m;
		if (game_move_from_text(&e->game, t, &m) != GAME_OK)
			return gtp_fail(r, "syntax error (avoid/allow: vertex)");
		listed[m] = true;
	}
	mcts_avoid_ban(&a->avoid, color, listed, game_num_actions(&e->game), allow, depth);
	a->avoiding = true;
	a->allowing |= allow;
	return true;
}

static bool parse_analyze(gtp_engine *e, const gtp_command *c, int first, analyze_args *a,
			  gtp_reply *r)
{
	memset(a, 0, sizeof(*a));
	a->color = game_to_move(&e->game);
	a->interval_cs = 100;
	a->max_moves = GAME_MAX_ACTIONS;
	int i = first;
	if (i < c->argc && gtp_parse_color(c->argv[i]) >= 0)
		a->color = gtp_parse_color(c->argv[i++]);
	if (i < c->argc && isdigit((unsigned char)c->argv[i][0])) {
		if (!gtp_parse_int(c->argv[i++], &a->interval_cs) || a->interval_cs < 0)
			return gtp_fail(r, "syntax error (interval)");
	}
	static const struct {
		const char *key;
		size_t field;
	} flags[] = {
		{ "ownership", offsetof(analyze_args, ownership) },
		{ "ownershipStdev", offsetof(analyze_args, ownership_stdev) },
		{ "movesOwnership", offsetof(analyze_args, moves_ownership) },
		{ "rootInfo", offsetof(analyze_args, root_info) },
		{ "pvVisits", offsetof(analyze_args, pv_visits) },
		{ "pvEdgeVisits", offsetof(analyze_args, pv_edge_visits) },
	};
	while (i < c->argc) {
		const char *key = c->argv[i];
		const char *val = i + 1 < c->argc ? c->argv[i + 1] : NULL;
		int v;
		bool b, done = false;
		if (!strcmp(key, "avoid") || !strcmp(key, "allow")) {
			if (i + 3 >= c->argc)
				return gtp_fail(r, "syntax error (avoid/allow PLAYER VERTICES DEPTH)");
			if (!parse_ban(e, key, c->argv[i + 1], c->argv[i + 2], c->argv[i + 3], a, r))
				return false;
			i += 4;
			continue;
		}
		if (!val)
			return gtp_fail(r, "syntax error (analyze options)");
		if (!strcmp(key, "interval") && gtp_parse_int(val, &v) && v >= 0)
			a->interval_cs = v, done = true;
		else if (!strcmp(key, "maxmoves") && gtp_parse_int(val, &v) && v > 0)
			a->max_moves = v, done = true;
		else if (!strcmp(key, "minmoves") && gtp_parse_int(val, &v) && v >= 0)
			a->min_moves = v, done = true;
		else if ((!strcmp(key, "movesOwnershipStdev") || !strcmp(key, "noResultValue")) &&
			 parse_bool(val, &b))
			done = true; /* accepted; nothing to print (no such head) */
		for (size_t k = 0; !done && k < sizeof(flags) / sizeof(flags[0]); k++)
			if (!strcmp(key, flags[k].key) && parse_bool(val, &b)) {
				*(bool *)((char *)a + flags[k].field) = b;
				done = true;
			}
		if (!done)
			return gtp_fail(r, "syntax error (analyze options)");
		i += 2;
	}
	return true;
}

/* ---- analysis output ------------------------------------------------------ */

/* What one analysis command keeps between its output lines: estimates,
 * which do not change while the position stays. */
typedef struct analysis_cache {
	bool root_done;                                /* root[] and root_sd[] hold it */
	float root[GO_MAX_SIZE * GO_MAX_SIZE];         /* root's ownership, mover's view */
	float root_sd[GO_MAX_SIZE * GO_MAX_SIZE];      /* its standard deviation */
	bool move_done[GAME_MAX_ACTIONS];              /* moves[m] holds it */
	float moves[GAME_MAX_ACTIONS][GO_MAX_SIZE * GO_MAX_SIZE]; /* after move m */
} analysis_cache;

/* The estimate of g (gtp_estimate) for `color` (+1 its own, its lead):
 * ownership own, its spread sd and the score *score (each may be NULL). */
static void estimate_for(gtp_engine *e, const game *g, int playouts, int color, float *own,
			 float *sd, double *score)
{
	int n = g->u.go.size * g->u.go.size;
	gtp_estimate(e->ev, g, playouts, own, sd, score, NULL);
	for (int p = 0; own && color != GO_BLACK && p < n; p++)
		own[p] = -own[p] + 0.0f; /* never -0 */
	if (color != GO_BLACK && score)
		*score = -*score;
}

/* The estimate after `color` plays m at the root, into the cache. */
static void move_estimate(gtp_engine *e, analysis_cache *cache, int color, int m)
{
	if (cache->move_done[m])
		return;
	static game after; /* 30 KB; GTP runs on one thread */
	after = e->game;
	if (game_play(&after, m) == GAME_OK)
		estimate_for(e, &after, MOVE_OWN_PLAYOUTS, color, cache->moves[m], NULL, NULL);
	else
		memset(cache->moves[m], 0, sizeof(cache->moves[m]));
	cache->move_done[m] = true;
}

/* " NAME v v v ..." for a board of floats, row-major from the top left. */
static void line_board(gtp_reply *l, const gtp_engine *e, const char *name, const float *v)
{
	gtp_reply_add(l, " %s ", name);
	reply_rows(l, e, v, NULL, "%.6f", "", " ");
}

/* The root child info of the analysis: moves with visits, then (to reach
 * min_moves) unvisited ones by prior, never a banned root move; at most
 * max_moves. Returns the count. */
static int analysis_moves(gtp_engine *e, const analyze_args *a, mcts_child_info *out)
{
	mcts_child_info ci[GAME_MAX_ACTIONS];
	int n = mcts_root_children(e->search, ci, GAME_MAX_ACTIONS), k = 0;
	int color = game_to_move(&e->game);
	for (int i = 0; i < n && k < a->max_moves; i++) {
		if (a->avoiding && a->avoid.until_ply[color][ci[i].move] >= 1)
			continue;
		if (ci[i].visits == 0 && k >= a->min_moves)
			break; /* sorted by visits: only unvisited ones follow */
		out[k++] = ci[i];
	}
	return k;
}

/* One analysis line: an "info ..." entry per move in Leela Zero's (lz) or
 * KataGo's (kata) format, then KataGo's rootInfo and ownership when asked. */
static void print_analysis(gtp_engine *e, bool kata, const analyze_args *a, analysis_cache *cache)
{
	mcts_child_info ci[GAME_MAX_ACTIONS];
	int n = analysis_moves(e, a, ci);
	bool go = gtp_is_go(e);
	bool scores = go && kata && (eval_heads(e->ev) & NN_HEAD_SCORE);
	int color = game_to_move(&e->game);
	float root_v = mcts_root_value(e->search) + 0.0f; /* never -0 */
	bool root_est = go && kata && (a->ownership || a->ownership_stdev);
	if (root_est && !cache->root_done) {
		estimate_for(e, &e->game, OWN_PLAYOUTS, color, cache->root, cache->root_sd, NULL);
		cache->root_done = true;
	}
	/* Scores are the search's: the score head's answers averaged below
	 * each move (KataGo's scoreLead); the head's own answer for the root
	 * before the search has any. */
	double root_score = scores ? mcts_root_score(e->search) : 0;
	if (scores && isnan(root_score))
		estimate_for(e, &e->game, OWN_PLAYOUTS, color, NULL, NULL, &root_score);
	gtp_reply l = { 0 };
	char text[8];
	for (int i = 0; i < n; i++) {
		int pv[64], pvv[64];
		int np = mcts_pv_visits(e->search, ci[i].move, pv, pvv, 64);
		if (np == 0) { /* unvisited: the move alone, valued as the root */
			pv[0] = ci[i].move;
			pvv[0] = 0;
			np = 1;
		}
		float q = (ci[i].visits ? ci[i].q : root_v) + 0.0f;
		double wr = gtp_winrate(q), lcb = ci[i].visits ? gtp_winrate(ci[i].lcb) : 0;
		float ulcb = ci[i].visits ? ci[i].lcb : -1;
		if (lcb < 0)
			lcb = 0;
		const char *mv = game_move_to_text(&e->game, ci[i].move, text);
		if (kata) {
			gtp_reply_add(&l, "%sinfo move %s visits %d utility %.6f winrate %.6f", i ? " " : "",
				      mv, ci[i].visits, q, wr);
			if (scores) {
				double sc = (isnan(ci[i].score) ? root_score : ci[i].score) + 0.0;
				gtp_reply_add(&l, " scoreMean %.6f scoreLead %.6f", sc, sc);
			}
			gtp_reply_add(&l, " prior %.6f lcb %.6f utilityLcb %.6f order %d pv", ci[i].prior,
				      lcb, ulcb, i);
		}
		else
			gtp_reply_add(&l, "%sinfo move %s visits %d winrate %d prior %d lcb %d order %d pv",
				      i ? " " : "", mv, ci[i].visits, (int)lround(wr * 10000),
				      (int)lround(ci[i].prior * 10000), (int)lround(lcb * 10000), i);
		for (int j = 0; j < np; j++)
			gtp_reply_add(&l, " %s", game_move_to_text(&e->game, pv[j], text));
		if (!kata)
			continue;
		for (int pass = 0; pass < 2; pass++) {
			if (!(pass ? a->pv_edge_visits : a->pv_visits))
				continue;
			gtp_reply_add(&l, " %s", pass ? "pvEdgeVisits" : "pvVisits");
			for (int j = 0; j < np; j++)
				gtp_reply_add(&l, " %d", pvv[j]);
		}
		if (a->moves_ownership && go) {
			move_estimate(e, cache, color, ci[i].move);
			line_board(&l, e, "movesOwnership", cache->moves[ci[i].move]);
		}
	}
	if (kata && a->root_info) {
		gtp_reply_add(&l, "%srootInfo visits %d utility %.6f winrate %.6f", l.len ? " " : "",
			      mcts_root_visits(e->search), root_v + 0.0f, gtp_winrate(root_v));
		if (scores)
			gtp_reply_add(&l, " scoreLead %.6f", root_score + 0.0);
	}
	if (kata && go && (a->ownership || a->ownership_stdev)) {
		if (a->ownership)
			line_board(&l, e, "ownership", cache->root);
		if (a->ownership_stdev)
			line_board(&l, e, "ownershipStdev", cache->root_sd);
	}
	if (l.len) {
		/* A line that began with ownership has no leading space. */
		fprintf(e->out, "%s\n", l.text[0] == ' ' ? l.text + 1 : l.text);
		fflush(e->out);
	}
	free(l.text);
}

/* Sets the bans of a (NULL or none: lifts them) on the search. */
static void apply_bans(gtp_engine *e, const analyze_args *a)
{
	mcts_set_avoid(e->search, a && a->avoiding ? &a->avoid : NULL);
}

/* Analysis until the next input line: "=" first, info lines every
 * interval, then the blank line that ends the answer. Without an input
 * stream, one search within the normal limits, then one info line. */
static bool analyze_common(gtp_engine *e, const gtp_command *c, gtp_reply *r, bool kata)
{
	analyze_args a;
	if (!parse_analyze(e, c, 0, &a, r))
		return false;
	if (game_is_over(&e->game))
		return gtp_fail(r, "the game is over");
	if (!gtp_ensure_to_move(e, a.color, r))
		return false;
	analysis_cache *cache = calloc(1, sizeof(*cache));
	if (!cache)
		return gtp_fail(r, "out of memory");
	gtp_begin_streamed(e, c);
	apply_bans(e, &a);
	mcts_options o = e->opt.search;
	if (e->in) {
		o.max_visits = o.max_playouts = 0;
		o.max_seconds = 0;
	}
	mcts_set_options(e->search, &o);
	mcts_set_position(e->search, &e->game);
	if (!e->in) {
		mcts_search(e->search);
		print_analysis(e, kata, &a, cache);
	} else {
		mcts_start(e->search);
		int wait_ms = a.interval_cs > 0 ? a.interval_cs * 10 : 1000;
		while (!gtp_input_wait(e->in, wait_ms))
			if (a.interval_cs > 0)
				print_analysis(e, kata, &a, cache);
		mcts_stop(e->search);
	}
	apply_bans(e, NULL); /* bans hold for this command only */
	free(cache);
	fprintf(e->out, "\n");
	fflush(e->out);
	return true; /* the answer is already written */
}

bool gtp_cmd_lz_analyze(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	return analyze_common(e, c, r, false);
}

bool gtp_cmd_kata_analyze(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	return analyze_common(e, c, r, true);
}

/* The move a finished search chooses, within the bans of a. */
static int choose(gtp_engine *e, const analyze_args *a)
{
	int m = GAME_MOVE_NONE;
	if (a->avoiding) {
		mcts_child_info ci[GAME_MAX_ACTIONS];
		analyze_args one = *a;
		one.max_moves = 1;
		one.min_moves = 1;
		if (analysis_moves(e, &one, ci) == 1)
			m = ci[0].move;
	} else {
		m = mcts_choose_move(e->search, 0, true);
	}
	return m == GAME_MOVE_NONE ? game_pass_move(&e->game) : m;
}

/* genmove (commit) or kata-search (!commit) with analysis output while it
 * thinks, ended by "play MOVE". */
static bool genmove_analyze_common(gtp_engine *e, const gtp_command *c, gtp_reply *r, bool kata,
				   bool commit)
{
	int color;
	analyze_args *a = malloc(sizeof(*a));
	analysis_cache *cache = calloc(1, sizeof(*cache));
	bool ok = false;
	if (!a || !cache) {
		ok = gtp_fail(r, "out of memory");
		goto out;
	}
	/* The colour is optional (KataGo), as for the analyze commands. */
	if (!parse_analyze(e, c, 0, a, r))
		goto out;
	color = a->color;
	if (game_is_over(&e->game)) {
		gtp_fail(r, "the game is over");
		goto out;
	}
	if (!gtp_ensure_to_move(e, color, r))
		goto out;
	gtp_begin_streamed(e, c);
	apply_bans(e, a);
	double started = clock_now();
	gtp_set_limits(e, color, 0);
	mcts_set_position(e->search, &e->game);
	mcts_start(e->search);
	double next = clock_now() + a->interval_cs / 100.0;
	while (mcts_running(e->search)) {
		if (e->cancellable && e->in) {
			if (gtp_input_wait(e->in, 5)) { /* a line cancels (it runs next) */
				e->cancelled = true;
				break;
			}
		} else {
			struct timespec ts = { 0, 5 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
		if (a->interval_cs > 0 && clock_now() >= next) {
			print_analysis(e, kata, a, cache);
			next = clock_now() + a->interval_cs / 100.0;
		}
	}
	mcts_stop(e->search);
	print_analysis(e, kata, a, cache);
	float v = mcts_root_value(e->search);
	int m = choose(e, a);
	apply_bans(e, NULL); /* bans hold for this command only */
	gtp_reply tmp = { 0 };
	if (e->cancelled) {
		e->cancelled = false;
		fprintf(e->out, "play cancelled\n\n");
	} else if (commit && e->opt.resign_pct > 0 && gtp_winrate(v) * 100 < e->opt.resign_pct &&
	    mcts_root_visits(e->search) >= 100 &&
	    game_move_count(&e->game) > game_num_actions(&e->game) / 8) {
		game_resign(&e->game, color);
		fprintf(e->out, "play resign\n\n");
	} else if (commit) {
		gtp_commit_move(e, m, started, &tmp);
		fprintf(e->out, "play %s\n\n", tmp.text ? tmp.text : "pass");
	} else {
		char text[8];
		fprintf(e->out, "play %s\n\n", game_move_to_text(&e->game, m, text));
	}
	free(tmp.text);
	fflush(e->out);
	if (commit)
		gtp_start_pondering(e);
	ok = true;
out:
	free(a);
	free(cache);
	return ok;
}

bool gtp_cmd_lz_genmove_analyze(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	return genmove_analyze_common(e, c, r, false, true);
}

bool gtp_cmd_kata_genmove_analyze(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	return genmove_analyze_common(e, c, r, true, true);
}

bool gtp_cmd_kata_search_analyze(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	game saved = e->game;
	bool ok = genmove_analyze_common(e, c, r, true, false);
	e->game = saved; /* kata-search_analyze never changes the game */
	return ok;
}

/* kata-search_analyze_cancellable: kata-search_analyze that the next
 * input line cancels, ending with `play cancelled`. */
bool gtp_cmd_kata_search_analyze_cancellable(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	e->cancellable = true;
	bool ok = gtp_cmd_kata_search_analyze(e, c, r);
	e->cancellable = false;
	return ok;
}

/* ---- the network's own output --------------------------------------------- */

/* The network's policy and value (for the side to move of g) under
 * symmetry sym, or averaged over all (sym < 0); with own and score (NULL
 * when not wanted) its ownership and score heads too (eval_raw_heads). */
static bool raw_eval(gtp_engine *e, const game *g, int sym, float *pol, float *v, float *own,
		     float *score, gtp_reply *r)
{
	int na = game_num_actions(g), n_sym = game_num_symmetries(g);
	int np = game_width(g) * game_height(g);
	int from = sym < 0 ? 0 : sym, to = sym < 0 ? n_sym : sym + 1;
	float p1[GAME_MAX_ACTIONS], v1, o1[GO_MAX_SIZE * GO_MAX_SIZE], s1;
	memset(pol, 0, sizeof(float) * (size_t)na);
	*v = 0;
	if (own)
		memset(own, 0, sizeof(float) * (size_t)np);
	if (score)
		*score = 0;
	for (int s = from; s < to; s++) {
		if ((own || score ? eval_raw_heads(e->ev, g, s, p1, &v1, own ? o1 : NULL,
						   score ? &s1 : NULL)
				  : eval_raw(e->ev, g, s, p1, &v1)) != 0)
			return gtp_fail(r, "network evaluation failed");
		for (int a = 0; a < na; a++)
			pol[a] += p1[a] / (float)(to - from);
		*v += v1 / (float)(to - from);
		for (int p = 0; own && p < np; p++)
			own[p] += o1[p] / (float)(to - from);
		if (score)
			*score += s1 / (float)(to - from);
	}
	return true;
}

/* The position as if `color` were to move (kata-raw-nn's COLOR). */
static bool position_for(const gtp_engine *e, int color, game *g, gtp_reply *r)
{
	*g = e->game;
	if (color >= 0 && game_to_move(g) != color && !game_set_to_move(g, color))
		return gtp_fail(r, "not this colour's turn");
	return true;
}

/* kata-raw-nn [COLOR] SYMMETRY|all [OPTIMISM]: the network's own output,
 * one block per symmetry (all: every symmetry in turn, as KataGo prints). */
bool gtp_cmd_kata_raw_nn(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	int sym = 0, color = -1, i = 0, n_sym = game_num_symmetries(&e->game);
	bool all = false;
	if (i < c->argc && gtp_parse_color(c->argv[i]) >= 0)
		color = gtp_parse_color(c->argv[i++]);
	if (i >= c->argc)
		return gtp_fail(r, "syntax error (kata-raw-nn [COLOR] SYMMETRY|all [OPTIMISM])");
	if (!strcmp(c->argv[i], "all"))
		all = true;
	else if (!gtp_parse_int(c->argv[i], &sym) || sym < 0 || sym >= n_sym) {
		char msg[64];
		snprintf(msg, sizeof(msg), "symmetry must be all or 0..%d", n_sym - 1);
		return gtp_fail(r, msg);
	}
	double optimism;
	if (++i < c->argc && (!gtp_parse_real(c->argv[i], &optimism) || optimism < 0 ||
			      optimism > 1 || i + 1 < c->argc))
		return gtp_fail(r, "syntax error (optimism, a number 0..1)");
	if (!e->net)
		return gtp_fail(r, "no network loaded (start with -w FILE)");
	if (game_is_over(&e->game))
		return gtp_fail(r, "the game is over");
	game g;
	if (!position_for(e, color, &g, r))
		return false;
	int na = game_num_actions(&g), pass = game_pass_move(&g);
	bool legal[GAME_MAX_ACTIONS];
	for (int a = 0; a < na; a++)
		legal[a] = game_is_legal(&g, a);
	int heads = gtp_is_go(e) ? eval_heads(e->ev) : 0, np = game_width(&g) * game_height(&g);
	float white = game_to_move(&g) == GAME_WHITE ? 1.0f : -1.0f; /* to White's view */
	for (int s = all ? 0 : sym; s < (all ? n_sym : sym + 1); s++) {
		float pol[GAME_MAX_ACTIONS], v, own[GO_MAX_SIZE * GO_MAX_SIZE], score;
		if (!raw_eval(e, &g, s, pol, &v, heads & NN_HEAD_OWN ? own : NULL,
			      heads & NN_HEAD_SCORE ? &score : NULL, r))
			return false;
		double white_win = game_to_move(&g) == GAME_WHITE ? gtp_winrate(v) : 1 - gtp_winrate(v);
		gtp_reply_add(r, "%ssymmetry %d\nwhiteWin %.6f\nwhiteLoss %.6f\nnoResult 0\n",
			      r->len ? "\n" : "", s, white_win, 1 - white_win);
		if (heads & NN_HEAD_SCORE)
			gtp_reply_add(r, "whiteLead %.6f\n", white * score + 0.0f);
		gtp_reply_add(r, "policy\n");
		reply_rows(r, e, pol, legal, "%.6f", "NAN", "\n");
		if (pass != GAME_MOVE_NONE)
			gtp_reply_add(r, "\npolicyPass %.6f", pol[pass]);
		if (heads & NN_HEAD_OWN) {
			for (int p = 0; p < np; p++)
				own[p] = white * own[p] + 0.0f; /* never -0 */
			gtp_reply_add(r, "\nwhiteOwnership\n");
			reply_rows(r, e, own, NULL, "%.6f", "", "\n");
		}
	}
	return true;
}

/* heatmap [SYMMETRY|average]: Leela Zero's table of the policy in
 * thousandths (rows top first), then the pass and the network's winrate
 * for the side to move; as the answer (Leela Zero prints it on stderr). */
bool gtp_cmd_heatmap(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	int sym = 0;
	if (c->argc >= 1) {
		if (!strcmp(c->argv[0], "average"))
			sym = -1;
		else if (!gtp_parse_int(c->argv[0], &sym) || sym < 0 ||
			 sym >= game_num_symmetries(&e->game))
			return gtp_fail(r, "syntax error (heatmap [SYMMETRY|average])");
	}
	if (game_is_over(&e->game))
		return gtp_fail(r, "the game is over");
	float pol[GAME_MAX_ACTIONS], v;
	if (!raw_eval(e, &e->game, sym, pol, &v, NULL, NULL, r))
		return false;
	int na = game_num_actions(&e->game), pass = game_pass_move(&e->game);
	for (int a = 0; a < na; a++)
		pol[a] = roundf(pol[a] * 1000);
	gtp_reply_add(r, "\n");
	reply_rows(r, e, pol, NULL, "%3.0f", "", "\n");
	if (pass != GAME_MOVE_NONE)
		gtp_reply_add(r, "\npass: %.0f", pol[pass]);
	gtp_reply_add(r, "\nwinrate: %.6f", gtp_winrate(v));
	return true;
}

/* GoGui dboard of the network's policy (averaged over the symmetries). */
bool gtp_cmd_gogui_policy(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	float pol[GAME_MAX_ACTIONS], v;
	if (game_is_over(&e->game))
		return gtp_fail(r, "the game is over");
	if (!raw_eval(e, &e->game, -1, pol, &v, NULL, NULL, r))
		return false;
	gtp_reply_add(r, "\n");
	reply_rows(r, e, pol, NULL, "%.4f", "", "\n");
	return true;
}

/* GoGui dboard of the ownership estimate, +1 Black's. */
bool gtp_cmd_gogui_ownership(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	float own[GO_MAX_SIZE * GO_MAX_SIZE];
	estimate_for(e, &e->game, OWN_PLAYOUTS, GO_BLACK, own, NULL, NULL);
	gtp_reply_add(r, "\n");
	reply_rows(r, e, own, NULL, "%.3f", "", "\n");
	return true;
}
