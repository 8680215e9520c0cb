/* analysis.c: KataGo's JSON analysis engine (see analysis.h).
 *
 * The reading thread parses each line with cJSON, checks the query field
 * by field in KataGo's order and with KataGo's messages (cpp/command/
 * analysis.cpp), replays its moves once, and queues one `turn` per turn
 * to analyse, each holding its position. Analysis threads pop the turn of
 * highest priority, search it with their own tree over the shared
 * evaluator, and write the answer. Terminating a turn: a queued one is
 * answered `noResults` at once and dropped when popped; a searched one is
 * interrupted (mcts_interrupt) and answered with what its search found.
 *
 * With a score head, scores are the search's, as KataGo's: the head's
 * answers averaged below each move and over the whole search
 * (mcts_child_info.score, mcts_root_score; no scoreStdev). Ownership, and
 * scores without the head, are gtp_estimate's, as GTP's kata-analyze
 * shows them: the network's ownership head for the root and for the
 * position after each move where it has one (its answer, not an average
 * over the search), otherwise fast random playouts of the position: the
 * root's from opt.score_playouts playouts, each move's from a quarter as
 * many. opt.score_playouts 0 turns both off. */
#include "gtp/analysis.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "engine/clock.h"
#include "engine/game_desc.h"
#include "gtp/internal.h"
#include "nn/encode.h"
#include "nn/net.h"
#include "search/mcts.h"

enum {
	MAX_LINE = 16 << 20, /* longest input line handled; longer ones are refused */
	ECHO_MAX = 200,      /* bytes of a bad line echoed in its error */
	MAX_PV = 1000,       /* longest analysisPVLen */
};

/* Whose view winrates, scores and ownership take (reportAnalysisWinratesAs). */
enum { VIEW_BLACK = GAME_BLACK, VIEW_WHITE = GAME_WHITE, VIEW_SIDE = 2 };

/* What a query asks, shared by its turns (freed with the last). */
typedef struct query {
	int refs;                   /* turns holding it (under a->mu) */
	char *id;                   /* the query's id */
	mcts_options search;        /* limits and parameters of its searches */
	int pv_len;                 /* analysisPVLen: PV moves after the first */
	bool ownership, ownership_stdev;             /* includeOwnership(Stdev) */
	bool moves_ownership, moves_ownership_stdev; /* includeMovesOwnership(Stdev) */
	bool policy;                /* includePolicy */
	bool pv_visits;             /* includePVVisits */
	bool no_result;             /* includeNoResultValue */
	double report_every;        /* reportDuringSearchEvery, seconds; 0: none */
	double first_report;        /* firstReportDuringSearchAfter */
	int view;                   /* VIEW_*: reportAnalysisWinratesAs */
	bool avoiding;              /* avoidMoves or allowMoves given */
	mcts_avoid avoid;           /* their bans */
} query;

typedef enum turn_state {
	TURN_QUEUED,    /* in the heap */
	TURN_POPPED,    /* an analysis thread holds it, not searching */
	TURN_SEARCHING, /* its search runs: terminate interrupts it */
} turn_state;

/* One position to analyse. */
typedef struct turn {
	struct turn *prev, *next; /* the engine's list of open turns */
	query *q;                 /* what was asked */
	int number;               /* turnNumber */
	int64_t priority;         /* higher first */
	uint64_t seq;             /* arrival, breaks ties (earlier first) */
	turn_state state;         /* under a->mu */
	bool terminated;          /* terminate reached it (under a->mu) */
	int worker;               /* the analysis thread holding it */
	game g;                   /* the position */
} turn;

/* An estimate (gtp_estimate): score and ownership of a position. */
typedef struct estimate {
	bool done;      /* computed for the current turn */
	double score;   /* mean final score, Black's view (komi counted) */
	double sd;      /* its standard deviation; NAN from the network */
	float *own;     /* [points] Black's share minus White's, NULL until needed */
	float *own_sd;  /* [points] standard deviation of the owner */
} estimate;

typedef struct worker {
	struct analysis_engine *a; /* owner */
	pthread_t thread;          /* the analysis thread */
	bool started;              /* thread was created */
	int index;                 /* in a->workers */
	mcts *search;              /* its search tree */
	game after;                /* scratch: a position after a root move */
	estimate root;             /* the turn's root estimate */
	estimate moves[GAME_MAX_ACTIONS]; /* after each root move */
} worker;

struct analysis_engine {
	analysis_options opt;   /* as created (filled defaults) */
	FILE *out;              /* answers */
	pthread_mutex_t out_mu; /* one line at a time */
	nn_net *net;            /* NULL without weights */
	nn_backend_set bes;     /* its backends */
	evaluator *ev;          /* shared by every analysis thread */
	game_params params;     /* the game (and board) analysed; komi: the default */
	bool any_size;          /* no network: any Go size 5..19 */
	char game_text[64];     /* e.g. "go 9x9" */
	pthread_mutex_t mu;     /* the queue, the open turns, stats, quitting */
	pthread_cond_t work;    /* a turn was queued, or quitting */
	pthread_cond_t idle;    /* an open turn was closed */
	turn **heap;            /* queued turns, a binary heap by (priority, -seq) */
	int n_heap, cap_heap;   /* entries used and allocated */
	turn *open;             /* every turn not yet closed */
	int n_open;             /* their count */
	uint64_t seq;           /* turns queued so far */
	bool quitting;          /* analysis_engine_free: drop what is left */
	analysis_stats stats;   /* queries, turns, errors, warnings */
	worker *workers;        /* [n_workers] */
	int n_workers;
};

/* ---- output ---------------------------------------------------------------- */

/* Writes o as one line and deletes it. */
static void emit(analysis_engine *a, cJSON *o)
{
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!s)
		return;
	pthread_mutex_lock(&a->out_mu);
	fputs(s, a->out);
	fputc('\n', a->out);
	fflush(a->out);
	pthread_mutex_unlock(&a->out_mu);
	cJSON_free(s);
}

static void count(analysis_engine *a, uint64_t *counter)
{
	pthread_mutex_lock(&a->mu);
	(*counter)++;
	pthread_mutex_unlock(&a->mu);
}

/* {"error":MSG} (id NULL), or {"error"|"warning":MSG,"field":F,"id":ID}, as
 * KataGo writes them (keys in its order). */
static void report(analysis_engine *a, bool warning, const char *id, const char *field,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void report(analysis_engine *a, bool warning, const char *id, const char *field,
		   const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, warning ? "warning" : "error", msg);
	if (id) {
		cJSON_AddStringToObject(o, "field", field);
		cJSON_AddStringToObject(o, "id", id);
	}
	emit(a, o);
	count(a, warning ? &a->stats.warnings : &a->stats.errors);
}

/* A number rounded to 8 significant digits, as KataGo prints them (and
 * without float noise such as 0.52345001697540283). */
static double round8(double v)
{
	char b[32];
	snprintf(b, sizeof(b), "%.8g", v);
	return strtod(b, NULL) + 0.0; /* never -0 */
}

static void add_num(cJSON *o, const char *key, double v)
{
	cJSON_AddNumberToObject(o, key, round8(v));
}

/* Text for an error that quotes input: at most ECHO_MAX bytes, bytes that
 * are not printable ASCII as '?', "..." when cut. */
static void quote(const char *s, size_t len, char *buf, size_t cap)
{
	size_t n = 0;
	for (size_t i = 0; i < len && n + 4 < cap && i < ECHO_MAX; i++) {
		unsigned char c = (unsigned char)s[i];
		buf[n++] = c >= 32 && c < 127 ? (char)c : '?';
	}
	if (len > ECHO_MAX && n + 4 < cap)
		n += (size_t)snprintf(buf + n, cap - n, "...");
	buf[n] = '\0';
}

/* ---- the queue ------------------------------------------------------------- */

static bool before(const turn *x, const turn *y)
{
	return x->priority != y->priority ? x->priority > y->priority : x->seq < y->seq;
}

/* Under a->mu. False when memory is short. */
static bool heap_push(analysis_engine *a, turn *t)
{
	if (a->n_heap == a->cap_heap) {
		int cap = a->cap_heap ? a->cap_heap * 2 : 64;
		turn **h = realloc(a->heap, sizeof(*h) * (size_t)cap);
		if (!h)
			return false;
		a->heap = h;
		a->cap_heap = cap;
	}
	int i = a->n_heap++;
	while (i > 0 && before(t, a->heap[(i - 1) / 2])) {
		a->heap[i] = a->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	a->heap[i] = t;
	return true;
}

/* Under a->mu; the heap is not empty. */
static turn *heap_pop(analysis_engine *a)
{
	turn *top = a->heap[0], *last = a->heap[--a->n_heap];
	int i = 0, n = a->n_heap;
	for (;;) {
		int c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && before(a->heap[c + 1], a->heap[c]))
			c++;
		if (!before(a->heap[c], last))
			break;
		a->heap[i] = a->heap[c];
		i = c;
	}
	if (n > 0)
		a->heap[i] = last;
	return top;
}

static void query_release(query *q)
{
	if (q && --q->refs == 0) {
		free(q->id);
		free(q);
	}
}

/* Under a->mu: unlinks and frees an open turn. */
static void turn_close(analysis_engine *a, turn *t)
{
	if (t->prev)
		t->prev->next = t->next;
	else
		a->open = t->next;
	if (t->next)
		t->next->prev = t->prev;
	a->n_open--;
	query_release(t->q);
	free(t);
	pthread_cond_broadcast(&a->idle);
}

/* {"id":..,"isDuringSearch":false,"noResults":true,"turnNumber":N}: a turn
 * terminated before any analysis. */
static void emit_no_results(analysis_engine *a, const turn *t)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", t->q->id);
	cJSON_AddBoolToObject(o, "isDuringSearch", false);
	cJSON_AddBoolToObject(o, "noResults", true);
	cJSON_AddNumberToObject(o, "turnNumber", t->number);
	emit(a, o);
}

/* Under a->mu: terminate reached t. */
static void turn_terminate(analysis_engine *a, turn *t)
{
	if (t->terminated)
		return;
	t->terminated = true;
	if (t->state == TURN_QUEUED) {
		/* Nobody will search it: answered now, dropped when popped. */
		emit_no_results(a, t);
		a->stats.turns++;
	} else if (t->state == TURN_SEARCHING) {
		mcts_interrupt(a->workers[t->worker].search);
	}
	/* TURN_POPPED: its thread sees the flag before it searches. */
}

/* ---- estimates ------------------------------------------------------------- */

/* The estimate of position g (a Go board; gtp_estimate), with ownership
 * when `own` (computed once per turn; ownership added when first asked). */
static void estimate_of(evaluator *ev, const game *g, int playouts, bool own, estimate *e)
{
	if (e->done && (!own || e->own))
		return;
	if (own && !e->own) {
		e->own = malloc(sizeof(float) * GO_MAX_SIZE * GO_MAX_SIZE);
		e->own_sd = malloc(sizeof(float) * GO_MAX_SIZE * GO_MAX_SIZE);
		if (!e->own || !e->own_sd) {
			free(e->own);
			free(e->own_sd);
			e->own = e->own_sd = NULL;
			own = false;
		}
	}
	gtp_estimate(ev, g, playouts, own ? e->own : NULL, own ? e->own_sd : NULL, &e->score, &e->sd);
	e->done = true;
}

static void estimate_reset(estimate *e)
{
	e->done = false;
	free(e->own);
	free(e->own_sd);
	e->own = e->own_sd = NULL;
}

/* A Go board of values (one per point, y * size + x) as a JSON array,
 * rows from the top left as KataGo writes them; sign flips own[] (Black's
 * view) to the viewer's. */
static cJSON *board_array(const game *g, const float *v, float sign)
{
	int w = game_width(g), h = game_height(g);
	cJSON *arr = cJSON_CreateArray();
	for (int y = h - 1; y >= 0; y--)
		for (int x = 0; x < w; x++)
			cJSON_AddItemToArray(arr, cJSON_CreateNumber(round8(sign * v[y * w + x])));
	return arr;
}

/* ---- answers --------------------------------------------------------------- */

/* KataGo's thisHash/symHash: hex of the position's hash, and the least
 * over the board's symmetries (Go; else the hash itself). */
static void hashes(const game *g, char *this_hash, char *sym_hash)
{
	uint64_t h = game_hash(g), best = h;
	if (game_desc_of(g)->has_go_board) {
		const go_board *b = &g->u.go;
		go_board *s = malloc(sizeof(*s));
		for (int k = 1; s && k < game_num_symmetries(g); k++) {
			if (go_init(s, b->size, b->komi) != 0)
				break;
			for (int y = 0; y < b->size; y++)
				for (int x = 0; x < b->size; x++) {
					int c = go_color_at(b, x, y);
					if (c != GO_EMPTY)
						go_place_stone(s, c, game_symmetry_move(g, k, y * b->size + x));
				}
			go_set_to_move(s, b->to_move);
			uint64_t hk = go_hash(s);
			if (hk < best)
				best = hk;
		}
		free(s);
	}
	snprintf(this_hash, 17, "%016llX", (unsigned long long)h);
	snprintf(sym_hash, 17, "%016llX", (unsigned long long)best);
}

/* The answer for a finished game: nothing to search, the result. */
static void write_final(analysis_engine *a, const turn *t, int viewer)
{
	const game *g = &t->g;
	int r = game_result(g); /* +1 Black won */
	double black_wr = r > 0 ? 1 : r < 0 ? 0 : 0.5;
	double wr = viewer == GAME_BLACK ? black_wr : 1 - black_wr;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", t->q->id);
	cJSON_AddBoolToObject(o, "isDuringSearch", false);
	cJSON_AddItemToObject(o, "moveInfos", cJSON_CreateArray());
	cJSON *ri = cJSON_AddObjectToObject(o, "rootInfo");
	cJSON_AddStringToObject(ri, "currentPlayer", game_to_move(g) == GAME_BLACK ? "B" : "W");
	if (game_desc_of(g)->has_komi) {
		double s = game_score(g) * (viewer == GAME_BLACK ? 1 : -1);
		add_num(ri, "scoreLead", s);
		add_num(ri, "scoreSelfplay", s);
		add_num(ri, "scoreStdev", 0);
	}
	add_num(ri, "utility", 2 * wr - 1);
	cJSON_AddNumberToObject(ri, "visits", 0);
	add_num(ri, "winrate", wr);
	cJSON_AddNumberToObject(o, "turnNumber", t->number);
	emit(a, o);
}

/* The analysis of t from w's search: moveInfos (visited moves, best
 * first), rootInfo, and ownership and policy when asked. */
static void write_analysis(worker *w, const turn *t, bool during)
{
	analysis_engine *a = w->a;
	const query *q = t->q;
	const game *g = &t->g;
	mcts *m = w->search;
	int mover = game_to_move(g);
	int viewer = q->view == VIEW_SIDE ? mover : q->view;
	float vs = viewer == mover ? 1 : -1;            /* mover's values -> viewer's */
	float bs = viewer == GAME_BLACK ? 1 : -1;        /* Black's scores -> viewer's */
	bool go = game_desc_of(g)->has_go_board;
	int root_playouts = go ? a->opt.score_playouts : 0;
	int move_playouts = root_playouts > 0 ? (root_playouts + 3) / 4 : 0;
	/* With a score head the scores are the search's (the head's answers
	 * averaged below each move, as the values are); estimates then only
	 * give ownership. */
	bool tree_scores = go && root_playouts > 0 && (eval_heads(a->ev) & NN_HEAD_SCORE);
	bool moves_own = q->moves_ownership || q->moves_ownership_stdev;
	char text[8];

	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", q->id);
	cJSON_AddBoolToObject(o, "isDuringSearch", during);

	static __thread mcts_child_info ci[GAME_MAX_ACTIONS];
	static __thread int pv[MAX_PV + 1], pvv[MAX_PV + 1];
	int n = mcts_root_children(m, ci, GAME_MAX_ACTIONS), order = 0;
	cJSON *infos = cJSON_AddArrayToObject(o, "moveInfos");
	for (int i = 0; i < n; i++) {
		const mcts_child_info *c = &ci[i];
		if (c->visits == 0)
			break; /* sorted by visits: only unvisited ones follow */
		if (q->avoiding && q->avoid.until_ply[mover][c->move] >= 1)
			continue;
		estimate *e = &w->moves[c->move];
		if (move_playouts > 0 && (!tree_scores || moves_own)) {
			w->after = *g;
			if (game_play(&w->after, c->move) == GAME_OK)
				estimate_of(a->ev, &w->after, move_playouts, moves_own, e);
			else
				e = NULL;
		} else {
			e = NULL;
		}
		cJSON *mi = cJSON_CreateObject();
		double wr = gtp_winrate(c->q), lcb = gtp_winrate(c->lcb);
		cJSON_AddNumberToObject(mi, "edgeVisits", c->visits);
		add_num(mi, "lcb", vs > 0 ? lcb : 1 - lcb);
		cJSON_AddStringToObject(mi, "move", game_move_to_text(g, c->move, text));
		if (q->no_result)
			add_num(mi, "noResultValue", 0);
		cJSON_AddNumberToObject(mi, "order", order++);
		if (e && e->own && q->moves_ownership)
			cJSON_AddItemToObject(mi, "ownership", board_array(g, e->own, bs));
		if (e && e->own && q->moves_ownership_stdev)
			cJSON_AddItemToObject(mi, "ownershipStdev", board_array(g, e->own_sd, 1));
		add_num(mi, "prior", c->prior);
		int np = mcts_pv_visits(m, c->move, pv, pvv, q->pv_len + 1);
		cJSON *pva = cJSON_AddArrayToObject(mi, "pv");
		for (int j = 0; j < np; j++)
			cJSON_AddItemToArray(pva, cJSON_CreateString(game_move_to_text(g, pv[j], text)));
		if (q->pv_visits) { /* a tree: a node's visits are its one edge's */
			cJSON_AddItemToObject(mi, "pvEdgeVisits", cJSON_CreateIntArray(pvv, np));
			cJSON_AddItemToObject(mi, "pvVisits", cJSON_CreateIntArray(pvv, np));
		}
		if (tree_scores && !isnan(c->score)) {
			add_num(mi, "scoreLead", vs * c->score);
			add_num(mi, "scoreMean", vs * c->score);
			add_num(mi, "scoreSelfplay", vs * c->score);
		} else if (e && e->done) {
			add_num(mi, "scoreLead", bs * e->score);
			add_num(mi, "scoreMean", bs * e->score);
			add_num(mi, "scoreSelfplay", bs * e->score);
			if (!isnan(e->sd))
				add_num(mi, "scoreStdev", e->sd);
		}
		add_num(mi, "utility", vs * c->q);
		add_num(mi, "utilityLcb", vs * c->lcb);
		cJSON_AddNumberToObject(mi, "visits", c->visits);
		add_num(mi, "winrate", vs > 0 ? wr : 1 - wr);
		cJSON_AddItemToArray(infos, mi);
	}

	/* The root: the network's own view of it (a cache hit: the search
	 * evaluated it), the estimate, the search's value. */
	static __thread float pol[GAME_MAX_ACTIONS];
	float raw_v = 0;
	bool raw = (q->policy || eval_has_network(a->ev)) &&
		   eval_position(a->ev, g, pol, &raw_v) == 0;
	bool own = q->ownership || q->ownership_stdev;
	float root_score = tree_scores ? mcts_root_score(m) : NAN;
	if (root_playouts > 0 && (isnan(root_score) || own))
		estimate_of(a->ev, g, root_playouts, own, &w->root);
	if (own && w->root.own) {
		if (q->ownership)
			cJSON_AddItemToObject(o, "ownership", board_array(g, w->root.own, bs));
		if (q->ownership_stdev)
			cJSON_AddItemToObject(o, "ownershipStdev", board_array(g, w->root.own_sd, 1));
	}
	if (q->policy && raw) {
		int na = game_num_actions(g), pass = game_pass_move(g);
		float p2[GAME_MAX_ACTIONS];
		for (int k = 0; k < na; k++)
			p2[k] = game_is_legal(g, k) ? pol[k] : -1;
		/* A board's points (Go) as KataGo's rows, then the pass; a game
		 * whose moves are not points (Connect Four's columns) in order. */
		cJSON *pa;
		if (go) {
			pa = board_array(g, p2, 1);
		} else {
			pa = cJSON_CreateArray();
			for (int k = 0; k < na; k++)
				if (k != pass)
					cJSON_AddItemToArray(pa, cJSON_CreateNumber(round8(p2[k])));
		}
		if (pass != GAME_MOVE_NONE)
			cJSON_AddItemToArray(pa, cJSON_CreateNumber(round8(p2[pass])));
		cJSON_AddItemToObject(o, "policy", pa);
	}
	float root_v = mcts_root_value(m);
	double root_wr = gtp_winrate(root_v);
	char th[17], sh[17];
	hashes(g, th, sh);
	cJSON *ri = cJSON_AddObjectToObject(o, "rootInfo");
	cJSON_AddStringToObject(ri, "currentPlayer", mover == GAME_BLACK ? "B" : "W");
	if (raw && eval_has_network(a->ev)) {
		double rw = gtp_winrate(raw_v);
		add_num(ri, "rawWinrate", vs > 0 ? rw : 1 - rw);
	}
	if (!isnan(root_score)) {
		add_num(ri, "scoreLead", vs * root_score);
		add_num(ri, "scoreSelfplay", vs * root_score);
	} else if (w->root.done) {
		add_num(ri, "scoreLead", bs * w->root.score);
		add_num(ri, "scoreSelfplay", bs * w->root.score);
		if (!isnan(w->root.sd))
			add_num(ri, "scoreStdev", w->root.sd);
	}
	cJSON_AddStringToObject(ri, "symHash", sh);
	cJSON_AddStringToObject(ri, "thisHash", th);
	add_num(ri, "utility", vs * root_v);
	cJSON_AddNumberToObject(ri, "visits", mcts_root_visits(m));
	add_num(ri, "winrate", vs > 0 ? root_wr : 1 - root_wr);
	cJSON_AddNumberToObject(o, "turnNumber", t->number);
	emit(a, o);
}

/* Searches t and writes its answer (or noResults when terminated before
 * any visit). Called without a->mu. */
static void analyse(worker *w, turn *t)
{
	analysis_engine *a = w->a;
	const query *q = t->q;
	mcts *m = w->search;
	estimate_reset(&w->root);
	for (int k = 0; k < GAME_MAX_ACTIONS; k++)
		if (w->moves[k].done || w->moves[k].own)
			estimate_reset(&w->moves[k]);
	mcts_clear(m); /* also lifts an interrupt of the thread's last turn */
	mcts_set_options(m, &q->search);
	mcts_set_avoid(m, q->avoiding ? &q->avoid : NULL);
	mcts_set_position(m, &t->g);
	bool over = game_is_over(&t->g);

	pthread_mutex_lock(&a->mu);
	bool term = t->terminated || a->quitting; /* quitting: no new search */
	if (!term)
		t->state = TURN_SEARCHING;
	pthread_mutex_unlock(&a->mu);

	if (!term && !over) {
		if (q->report_every > 0) {
			mcts_start(m);
			double next = clock_now() + q->first_report;
			while (mcts_running(m)) {
				struct timespec ts = { 0, 2 * 1000 * 1000 };
				nanosleep(&ts, NULL);
				if (clock_now() >= next && mcts_root_visits(m) > 0) {
					write_analysis(w, t, true);
					next = clock_now() + q->report_every;
				}
			}
			mcts_stop(m);
		} else {
			mcts_search(m);
		}
	}

	pthread_mutex_lock(&a->mu);
	t->state = TURN_POPPED; /* no interrupt reaches a finished search */
	term = t->terminated;
	pthread_mutex_unlock(&a->mu);

	int viewer = q->view == VIEW_SIDE ? game_to_move(&t->g) : q->view;
	if (over && !term)
		write_final(a, t, viewer);
	else if (mcts_root_visits(m) > 0)
		write_analysis(w, t, false);
	else
		emit_no_results(a, t);
	mcts_set_avoid(m, NULL);
}

static void *worker_main(void *arg)
{
	worker *w = arg;
	analysis_engine *a = w->a;
	pthread_mutex_lock(&a->mu);
	for (;;) {
		while (!a->quitting && a->n_heap == 0)
			pthread_cond_wait(&a->work, &a->mu);
		if (a->n_heap == 0)
			break; /* quitting, nothing left */
		turn *t = heap_pop(a);
		if (t->terminated || a->quitting) {
			turn_close(a, t); /* answered by terminate, or dropped */
			continue;
		}
		t->state = TURN_POPPED;
		t->worker = w->index;
		pthread_mutex_unlock(&a->mu);
		analyse(w, t);
		pthread_mutex_lock(&a->mu);
		a->stats.turns++;
		turn_close(a, t);
	}
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

/* ---- reading queries --------------------------------------------------------- */

/* The checks of one query: the engine, the query's id, and the input. */
typedef struct qctx {
	analysis_engine *a;
	const char *id;
	cJSON *in;
} qctx;

#define FAIL(field, ...) \
	do { \
		report(c->a, false, c->id, (field), __VA_ARGS__); \
		return false; \
	} while (0)

static cJSON *get(const qctx *c, const char *field)
{
	return cJSON_GetObjectItemCaseSensitive(c->in, field);
}

/* An integral JSON number within [lo, hi] (JSON has one kind of number:
 * 5.0 counts as 5). */
static bool int_value(const cJSON *v, double lo, double hi, int64_t *out)
{
	if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
	    v->valuedouble < lo || v->valuedouble > hi)
		return false;
	*out = (int64_t)v->valuedouble;
	return true;
}

static bool parse_int(const qctx *c, const cJSON *dict, const char *field, double lo, double hi,
		      int64_t *out, const char *msg)
{
	if (!int_value(cJSON_GetObjectItemCaseSensitive(dict, field), lo, hi, out))
		FAIL(field, "%s", msg);
	return true;
}

static bool parse_double(const qctx *c, const char *field, double lo, double hi, double *out,
			 const char *msg)
{
	const cJSON *v = get(c, field);
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo ||
	    v->valuedouble > hi)
		FAIL(field, "%s", msg);
	*out = v->valuedouble;
	return true;
}

static bool parse_bool(const qctx *c, const char *field, bool *out)
{
	const cJSON *v = get(c, field);
	if (!v)
		return true;
	if (!cJSON_IsBool(v))
		FAIL(field, "Must be a boolean");
	*out = cJSON_IsTrue(v);
	return true;
}

/* "b", "B", "black", "w", "white" (any case) -> colour, else -1. */
static int player_of(const cJSON *v)
{
	return cJSON_IsString(v) ? gtp_parse_color(v->valuestring) : -1;
}

/* A vertex of g's board ("D4", "pass" when allowed) -> action, else -1. */
static int vertex_of(const game *g, const cJSON *v, bool allow_pass)
{
	int m;
	if (!cJSON_IsString(v) || game_move_from_text(g, v->valuestring, &m) != GAME_OK)
		return -1;
	if (!allow_pass && m == game_pass_move(g))
		return -1;
	return m;
}

/* A [player, vertex] list (moves, initialStones) into mv[] (colour, action). */
static bool parse_moves(const qctx *c, const char *field, const game *g, bool allow_pass,
			int (**mv)[2], int *n)
{
	static const char pairs[] = "Must be an array of pairs of the form: [\"b\" or \"w\", GTP board vertex]";
	cJSON *arr = get(c, field), *e;
	*mv = NULL;
	*n = 0;
	if (!cJSON_IsArray(arr))
		FAIL(field, "%s", pairs);
	int len = cJSON_GetArraySize(arr);
	*mv = malloc(sizeof(**mv) * (size_t)(len > 0 ? len : 1));
	if (!*mv)
		FAIL(field, "out of memory");
	cJSON_ArrayForEach(e, arr) {
		cJSON *p = cJSON_GetArrayItem(e, 0), *v = cJSON_GetArrayItem(e, 1);
		if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 || !cJSON_IsString(p) ||
		    !cJSON_IsString(v))
			FAIL(field, "%s", pairs);
		int color = player_of(p), m;
		if (color < 0)
			FAIL(field, "Could not parse player: %.100s", p->valuestring);
		if ((m = vertex_of(g, v, allow_pass)) < 0)
			FAIL(field, "Could not parse board location: %.100s", v->valuestring);
		(*mv)[*n][0] = color;
		(*mv)[*n][1] = m;
		(*n)++;
	}
	return true;
}

/* boardXSize, boardYSize: KataGo's range, then what sente can play. */
static bool parse_board(const qctx *c, game_params *p)
{
	const analysis_engine *a = c->a;
	static const char msg[] = "Must provide an integer from 2 to 19";
	int64_t x, y;
	if (!get(c, "boardXSize"))
		FAIL("boardXSize", msg);
	if (!get(c, "boardYSize"))
		FAIL("boardYSize", msg);
	if (!parse_int(c, c->in, "boardXSize", 2, 19, &x, msg) ||
	    !parse_int(c, c->in, "boardYSize", 2, 19, &y, msg))
		return false;
	*p = a->params;
	if (a->any_size) {
		if (x != y)
			FAIL("boardYSize", "sente plays square boards only: boardXSize and "
			     "boardYSize must be equal");
		if (x < GO_MIN_SIZE)
			FAIL("boardXSize", "Must provide an integer from %d to 19 (sente's smallest "
			     "board is %dx%d)", GO_MIN_SIZE, GO_MIN_SIZE, GO_MIN_SIZE);
		p->size = (int)x;
		return true;
	}
	if (a->net && a->net->arch.sizes) { /* a network of several sizes */
		game_params q = *p;
		q.size = (int)x;
		char sizes[128];
		if (x != y || !nn_arch_plays(&a->net->arch, &q))
			FAIL(x != y ? "boardYSize" : "boardXSize", "The network plays %s only",
			     nn_arch_sizes_text(&a->net->arch, sizes, sizeof(sizes)));
		p->size = (int)x;
		return true;
	}
	game_numbers nb = game_numbers_of(p);
	if (x != nb.width || y != nb.height)
		FAIL(x != nb.width ? "boardXSize" : "boardYSize", "The network plays %s only: "
		     "boardXSize must be %d and boardYSize %d", a->game_text, nb.width, nb.height);
	return true;
}

/* rules: a name or KataGo's JSON object; area scoring without a tax or
 * button is sente's own; territory scoring, a tax or a button are played
 * as sente's rules, with KataGo's warning. */
static bool parse_rules(const qctx *c, double komi)
{
	static const char need[] = "Must specify rules string, such as \"chinese\" or \"tromp-taylor\", "
				   "or a JSON object with detailed rules parameters.";
	static const char *const territory[] = { "japanese", "korean", "stone-scoring", "stone_scoring",
						 "territory", NULL };
	cJSON *r = get(c, "rules");
	char given[128];
	bool ours = false;
	if (cJSON_IsString(r)) {
		snprintf(given, sizeof(given), "%s", r->valuestring);
		ours = gtp_rules_area_name(given);
		bool known = ours;
		for (int i = 0; !known && territory[i]; i++)
			known = !strcasecmp(given, territory[i]);
		if (!known)
			FAIL("rules", "Could not parse rules: %.100s", r->valuestring);
	} else if (cJSON_IsObject(r)) {
		const cJSON *sc = cJSON_GetObjectItemCaseSensitive(r, "scoring");
		const cJSON *tax = cJSON_GetObjectItemCaseSensitive(r, "tax");
		const cJSON *button = cJSON_GetObjectItemCaseSensitive(r, "hasButton");
		if ((sc && !cJSON_IsString(sc)) || (tax && !cJSON_IsString(tax)) ||
		    (button && !cJSON_IsBool(button))) {
			char *s = cJSON_PrintUnformatted(r);
			report(c->a, false, c->id, "rules", "Could not parse rules: %.100s", s ? s : "");
			cJSON_free(s);
			return false;
		}
		ours = (!sc || !strcasecmp(sc->valuestring, "AREA")) &&
		       (!tax || !strcasecmp(tax->valuestring, "NONE")) && !cJSON_IsTrue(button);
		snprintf(given, sizeof(given), "koPOSITIONALscore%staxNONEsui0%s", ours ? "AREA" : "TERRITORY",
			 cJSON_IsTrue(button) ? "button1" : "");
	} else {
		FAIL("rules", "%s", need);
	}
	if (!ours)
		report(c->a, true, c->id, "rules", "Rules %s not supported by sente, using "
		       "koPOSITIONALscoreAREAtaxNONEsui0komi%g instead", given, komi);
	return true;
}

/* reportAnalysisWinratesAs text -> VIEW_*, else -1. */
static int view_of(const char *s)
{
	if (!strcasecmp(s, "BLACK"))
		return VIEW_BLACK;
	if (!strcasecmp(s, "WHITE"))
		return VIEW_WHITE;
	if (!strcasecmp(s, "SIDETOMOVE"))
		return VIEW_SIDE;
	return -1;
}

/* A setting's value as a number: a JSON number or a string holding one
 * (KataGo reads every setting as text). */
static bool setting_number(const cJSON *v, double *out)
{
	if (cJSON_IsNumber(v)) {
		*out = v->valuedouble;
		return isfinite(*out);
	}
	return cJSON_IsString(v) && gtp_parse_real(v->valuestring, out);
}

/* overrideSettings: KataGo's names of the settings sente has; others get
 * KataGo's warning, "Unknown config params: a,b". */
static bool parse_overrides(const qctx *c, query *q)
{
	static const struct {
		const char *name;
		double lo, hi;
		bool integral;
	} known[] = {
		{ "maxVisits", 1, 1e8, true },         { "maxPlayouts", 1, 1e8, true },
		{ "maxTime", 0, 1e7, false },          { "cpuctExploration", 0, 100, false },
		{ "cpuctExplorationLog", 0, 100, false }, { "cpuctExplorationBase", 1, 1e9, false },
		{ "fpuReductionMax", 0, 2, false },    { "rootFpuReductionMax", 0, 2, false },
		{ "analysisPVLen", 1, MAX_PV, true },  { "reportAnalysisWinratesAs", 0, 0, false },
	};
	cJSON *s = get(c, "overrideSettings"), *e;
	if (!s)
		return true;
	if (!cJSON_IsObject(s))
		FAIL("overrideSettings", "Must be an object");
	char unknown[512] = "";
	size_t ul = 0;
	cJSON_ArrayForEach(e, s) {
		size_t k = 0, nk = sizeof(known) / sizeof(known[0]);
		while (k < nk && strcmp(e->string, known[k].name))
			k++;
		if (k == nk) {
			if (ul + 1 < sizeof(unknown))
				ul += (size_t)snprintf(unknown + ul, sizeof(unknown) - ul, "%s%.60s",
						       ul ? "," : "", e->string);
			continue;
		}
		if (!strcmp(e->string, "reportAnalysisWinratesAs")) {
			int v = cJSON_IsString(e) ? view_of(e->valuestring) : -1;
			if (v < 0)
				FAIL("overrideSettings", "Could not set settings: reportAnalysisWinratesAs "
				     "must be BLACK, WHITE or SIDETOMOVE");
			q->view = v;
			continue;
		}
		double v;
		if (!setting_number(e, &v) || v < known[k].lo || v > known[k].hi ||
		    (known[k].integral && v != floor(v)))
			FAIL("overrideSettings", "Could not set settings: %s must be %s from %g to %g",
			     known[k].name, known[k].integral ? "an integer" : "a number", known[k].lo,
			     known[k].hi);
		mcts_options *o = &q->search;
		switch (k) {
		case 0: o->max_visits = (int)v; break;
		case 1: o->max_playouts = (int)v; break;
		case 2: o->max_seconds = v; break;
		case 3: o->cpuct = (float)v; break;
		case 4: o->cpuct_log = (float)v; break;
		case 5: o->cpuct_base = (float)v; break;
		case 6: o->fpu_reduction = (float)v; break;
		case 7: o->fpu_root = (float)v; break;
		case 8: q->pv_len = (int)v; break;
		}
	}
	if (ul)
		report(c->a, true, c->id, "overrideSettings", "Unknown config params: %s", unknown);
	return true;
}

/* avoidMoves / allowMoves: [{"player":P,"moves":[V,...],"untilDepth":N}]. */
static bool parse_bans(const qctx *c, const game *g, query *q)
{
	static const char shape[] = "Must be a list of dicts with subfields 'player', 'moves', 'untilDepth'";
	bool allow = get(c, "allowMoves") != NULL;
	if (allow && get(c, "avoidMoves"))
		FAIL("allowMoves", "Cannot specify both allowMoves and avoidMoves");
	const char *field = allow ? "allowMoves" : "avoidMoves";
	cJSON *list = get(c, field), *d;
	if (!list)
		return true;
	if (!cJSON_IsArray(list))
		FAIL(field, shape);
	if (allow && cJSON_GetArraySize(list) > 2)
		FAIL(field, "Currently allowMoves only allows at most one entry per player");
	bool allowed[2] = { false, false };
	int na = game_num_actions(g);
	cJSON_ArrayForEach(d, list) {
		cJSON *pl = cJSON_GetObjectItemCaseSensitive(d, "player");
		cJSON *mv = cJSON_GetObjectItemCaseSensitive(d, "moves");
		cJSON *v;
		if (!cJSON_IsObject(d) || !pl || !mv || !cJSON_GetObjectItemCaseSensitive(d, "untilDepth"))
			FAIL(field, shape);
		int color = player_of(pl);
		if (color < 0)
			FAIL("player", "Must be \"b\" or \"w\"");
		if (!cJSON_IsArray(mv))
			FAIL("moves", "Must be an array of GTP board vertices");
		bool listed[GAME_MAX_ACTIONS] = { false };
		cJSON_ArrayForEach(v, mv) {
			int m = vertex_of(g, v, true);
			if (!cJSON_IsString(v))
				FAIL("moves", "Must be an array of GTP board vertices");
			if (m < 0)
				FAIL("moves", "Could not parse board location: %.100s", v->valuestring);
			listed[m] = true;
		}
		int64_t depth;
		if (!parse_int(c, d, "untilDepth", 1, 1e9, &depth, "Must be a positive integer"))
			return false;
		if (allow) {
			if (allowed[color])
				FAIL(field, "Cannot specify allowMoves more than once for the same player");
			allowed[color] = true;
		}
		mcts_avoid_ban(&q->avoid, color, listed, na, allow, depth > 65535 ? 65535 : (int)depth);
	}
	q->avoiding = true;
	return true;
}

/* The fields KataGo knows; any other one gets its warning. Fields of
 * KataGo that sente does not use are warned about separately. */
static const char *const expected_keys[] = {
	"id", "action", "terminateId", "turnNumbers", "boardXSize", "boardYSize", "initialStones",
	"moves", "initialPlayer", "analyzeTurns", "priorities", "rules", "komi", "whiteHandicapBonus",
	"overrideSettings", "maxVisits", "analysisPVLen", "rootFpuReductionMax",
	"rootPolicyTemperature", "includeMovesOwnership", "includeMovesOwnershipStdev",
	"includeOwnership", "includeOwnershipStdev", "includePolicy", "includePVVisits",
	"includeNoResultValue", "reportDuringSearchEvery", "firstReportDuringSearchAfter",
	"priority", "avoidMoves", "allowMoves", NULL,
};

static void warn_fields(const qctx *c)
{
	cJSON *e;
	cJSON_ArrayForEach(e, c->in) {
		bool known = false;
		for (int i = 0; !known && expected_keys[i]; i++)
			known = !strcmp(e->string, expected_keys[i]);
		if (!known)
			report(c->a, true, c->id, e->string, "Unexpected or unused field, do you have "
			       "a typo?");
	}
	if (get(c, "rootPolicyTemperature"))
		report(c->a, true, c->id, "rootPolicyTemperature", "sente's search has no root policy "
		       "temperature; the field is ignored");
}

/* An analysis query: checked, its moves replayed, its turns queued. */
static bool handle_query(const qctx *c, query *q)
{
	analysis_engine *a = c->a;
	game_params gp;
	int (*stones)[2] = NULL, (*moves)[2] = NULL;
	int n_stones = 0, n_moves = 0;
	bool *analyse_turn = NULL, ok = false;
	int64_t *prio = NULL;
	game *g = NULL;

#undef FAIL
#define FAIL(field, ...) \
	do { \
		report(a, false, c->id, (field), __VA_ARGS__); \
		goto out; \
	} while (0)

	if (!parse_board(c, &gp))
		goto out;
	g = malloc(sizeof(*g));
	if (!g || game_init(g, &gp) != GAME_OK)
		FAIL("boardXSize", "out of memory");
	bool go = game_desc_of(g)->has_go_board;
	if (get(c, "initialStones")) {
		if (!parse_moves(c, "initialStones", g, false, &stones, &n_stones))
			goto out;
		if (n_stones > 0 && !go)
			FAIL("initialStones", "%s has no initial stones", game_desc_of(g)->title);
	}
	if (!get(c, "moves"))
		FAIL("moves", "Must specify an array of [player,location] pairs");
	if (!parse_moves(c, "moves", g, true, &moves, &n_moves))
		goto out;
	int first = -1;
	if (get(c, "initialPlayer") && (first = player_of(get(c, "initialPlayer"))) < 0)
		FAIL("initialPlayer", "Must be \"b\" or \"w\"");

	analyse_turn = calloc((size_t)n_moves + 1, sizeof(bool));
	prio = calloc((size_t)n_moves + 1, sizeof(int64_t));
	if (!analyse_turn || !prio)
		FAIL("moves", "out of memory");
	cJSON *turns = get(c, "analyzeTurns"), *e;
	if (turns) {
		static const char msg[] = "Must specify an array of integers indicating turns to analyze";
		if (!cJSON_IsArray(turns))
			FAIL("analyzeTurns", msg);
		cJSON_ArrayForEach(e, turns) {
			int64_t k;
			if (!int_value(e, -2147483648.0, 2147483647.0, &k))
				FAIL("analyzeTurns", msg);
			if (k < 0 || k > n_moves)
				FAIL("analyzeTurns", "Invalid turn number: %lld", (long long)k);
			analyse_turn[k] = true;
		}
	} else {
		analyse_turn[n_moves] = true;
	}
	cJSON *prios = get(c, "priorities");
	if (prios) {
		if (!cJSON_IsArray(prios))
			FAIL("priorities", "Must specify an array of integers indicating priorities");
		if (!turns)
			FAIL("priorities", "Can only specify when also specifying analyzeTurns");
		if (cJSON_GetArraySize(prios) != cJSON_GetArraySize(turns))
			FAIL("priorities", "Must be of matching length to analyzeTurns");
		for (int i = 0; i < cJSON_GetArraySize(prios); i++) {
			int64_t p;
			if (!int_value(cJSON_GetArrayItem(prios, i), -4.6e18, 4.6e18, &p))
				FAIL("priorities", "Must specify an array of integers indicating priorities");
			prio[(int)cJSON_GetArrayItem(turns, i)->valuedouble] = p;
		}
	}

	double komi = game_desc_of(g)->has_komi ? 7.5 : 0;
	if (get(c, "komi")) {
		static const char msg[] = "Must be a integer or half-integer from -400.0 to 400.0";
		if (!parse_double(c, "komi", -400, 400, &komi, msg))
			goto out;
		if (komi * 2 != floor(komi * 2))
			FAIL("komi", msg);
	}
	if (!get(c, "rules"))
		FAIL("rules", "Must specify rules string, such as \"chinese\" or \"tromp-taylor\", or a "
		     "JSON object with detailed rules parameters.");
	if (!parse_rules(c, komi))
		goto out;
	cJSON *whb = get(c, "whiteHandicapBonus");
	if (whb) {
		if (!cJSON_IsString(whb))
			FAIL("whiteHandicapBonus", "Must be a string");
		if (strcmp(whb->valuestring, "0") && strcmp(whb->valuestring, "N") &&
		    strcmp(whb->valuestring, "N-1"))
			FAIL("whiteHandicapBonus", "Could not parse whiteHandicapBonus rule: %.60s",
			     whb->valuestring);
		if (strcmp(whb->valuestring, "0"))
			report(a, true, c->id, "whiteHandicapBonus", "sente gives White no handicap "
			       "bonus, using 0 instead");
	}
	if (!parse_overrides(c, q))
		goto out;
	int64_t iv;
	if (get(c, "maxVisits")) {
		if (!parse_int(c, c->in, "maxVisits", 1, 1125899906842624.0, &iv,
			       "Must be an integer from 1 to 2^50"))
			goto out;
		q->search.max_visits = iv > 100000000 ? 100000000 : (int)iv;
	}
	if (get(c, "analysisPVLen")) {
		if (!parse_int(c, c->in, "analysisPVLen", 1, MAX_PV, &iv, "Must be an integer from 1 to 1000"))
			goto out;
		q->pv_len = (int)iv;
	}
	double dv;
	if (get(c, "rootFpuReductionMax")) {
		if (!parse_double(c, "rootFpuReductionMax", 0, 2, &dv, "Must be a number from 0.0 to 2.0"))
			goto out;
		q->search.fpu_root = (float)dv;
	}
	if (get(c, "rootPolicyTemperature") &&
	    !parse_double(c, "rootPolicyTemperature", 0.01, 100, &dv, "Must be a number from 0.01 to 100.0"))
		goto out;
	if (!parse_bool(c, "includeMovesOwnership", &q->moves_ownership) ||
	    !parse_bool(c, "includeMovesOwnershipStdev", &q->moves_ownership_stdev) ||
	    !parse_bool(c, "includeOwnership", &q->ownership) ||
	    !parse_bool(c, "includeOwnershipStdev", &q->ownership_stdev) ||
	    !parse_bool(c, "includePolicy", &q->policy) ||
	    !parse_bool(c, "includePVVisits", &q->pv_visits) ||
	    !parse_bool(c, "includeNoResultValue", &q->no_result))
		goto out;
	static const char secs[] = "Must be number of seconds from 0.001 to 1000000.0";
	if (get(c, "reportDuringSearchEvery")) {
		if (!parse_double(c, "reportDuringSearchEvery", 0.001, 1e6, &q->report_every, secs))
			goto out;
		q->first_report = q->report_every;
	}
	if (get(c, "firstReportDuringSearchAfter")) {
		if (!parse_double(c, "firstReportDuringSearchAfter", 0.001, 1e6, &q->first_report, secs))
			goto out;
		if (q->report_every <= 0)
			q->report_every = 1e6;
	}
	int64_t priority = 0;
	if (get(c, "priority")) {
		if (prios)
			FAIL("priority", "Cannot specify both priority and priorities");
		if (!parse_int(c, c->in, "priority", -4.6e18, 4.6e18, &priority,
			       "Must be a number between -2^62 and 2^62"))
			goto out;
	}
	if (!parse_bans(c, g, q))
		goto out;
	if (!go && (q->ownership || q->ownership_stdev || q->moves_ownership))
		report(a, true, c->id, "includeOwnership", "%s has no ownership; not reported",
		       game_desc_of(g)->title);

	/* The position: komi, initial stones, the first player. */
	if (go && go_set_komi(&g->u.go, komi) != 0)
		FAIL("komi", "Must be a integer or half-integer from -400.0 to 400.0");
	g->params.komi = go ? komi : g->params.komi;
	int blacks = 0, whites = 0;
	for (int i = 0; i < n_stones; i++) {
		char text[8];
		if (go_place_stone(&g->u.go, stones[i][0], stones[i][1]) != 0)
			FAIL("initialStones", "Illegal initial stone: %s (occupied, or without liberties)",
			     game_move_to_text(g, stones[i][1], text));
		stones[i][0] == GAME_BLACK ? blacks++ : whites++;
	}
	if (first < 0)
		first = n_moves > 0 ? moves[0][0] : (blacks >= 2 && whites == 0 ? GAME_WHITE : GAME_BLACK);
	if (game_to_move(g) != first && !game_set_to_move(g, first))
		FAIL("initialPlayer", "%s's first player is b", game_desc_of(g)->title);
	warn_fields(c);

	/* Replay, making a turn of each position asked for. */
	turn *made = NULL; /* the new turns, linked by next */
	int n_made = 0;
	for (int k = 0; k <= n_moves; k++) {
		if (analyse_turn[k]) {
			turn *t = calloc(1, sizeof(*t));
			if (!t) {
				report(a, false, c->id, "moves", "out of memory");
				while (made) {
					turn *nx = made->next;
					free(made);
					made = nx;
				}
				goto out;
			}
			t->number = k;
			t->priority = prios ? prio[k] : priority;
			t->g = *g;
			t->next = made;
			made = t;
			n_made++;
		}
		if (k == n_moves)
			break;
		int color = moves[k][0], m = moves[k][1];
		game_status st = GAME_ERR_ILLEGAL;
		if (game_to_move(g) == color || game_set_to_move(g, color))
			st = game_play(g, m);
		if (st != GAME_OK) {
			char text[8];
			report(a, false, c->id, "moves", "Illegal move %d: %s%s", k,
			       game_move_to_text(g, m, text), st == GAME_ERR_FULL ?
			       " (the game is longer than sente's history)" : "");
			while (made) {
				turn *nx = made->next;
				free(made);
				made = nx;
			}
			goto out;
		}
	}
	/* Queue them, earliest turn first for equal priorities. */
	pthread_mutex_lock(&a->mu);
	turn *rev = NULL;
	while (made) {
		turn *nx = made->next;
		made->next = rev;
		rev = made;
		made = nx;
	}
	a->stats.queries++;
	q->refs = n_made;
	while (rev) {
		turn *t = rev;
		rev = rev->next;
		t->q = q;
		t->seq = a->seq++;
		t->state = TURN_QUEUED;
		t->prev = NULL;
		t->next = a->open;
		if (!heap_push(a, t)) {
			q->refs--;
			free(t);
			continue;
		}
		if (a->open)
			a->open->prev = t;
		a->open = t;
		a->n_open++;
	}
	bool none = q->refs == 0;
	pthread_cond_broadcast(&a->work);
	pthread_mutex_unlock(&a->mu);
	if (none) { /* no turn was asked for (or memory ran out) */
		free(q->id);
		free(q);
	}
	ok = true;
out:
	free(stones);
	free(moves);
	free(analyse_turn);
	free(prio);
	free(g);
	return ok;
#undef FAIL
}

#define FAIL(field, ...) \
	do { \
		report(c->a, false, c->id, (field), __VA_ARGS__); \
		return false; \
	} while (0)

/* turnNumbers of terminate/terminate_all into set[] (all true when absent). */
static bool parse_turn_set(const qctx *c, bool **set, int *n)
{
	cJSON *tn = get(c, "turnNumbers"), *e;
	*set = NULL;
	*n = 0;
	if (!tn)
		return true;
	static const char msg[] = "If provided, must be an array of integers indicating turns to terminate";
	if (!cJSON_IsArray(tn))
		FAIL("turnNumbers", msg);
	int64_t max = -1, k;
	cJSON_ArrayForEach(e, tn) {
		if (!int_value(e, -2147483648.0, 2147483647.0, &k))
			FAIL("turnNumbers", msg);
		if (k > max)
			max = k;
	}
	*n = (int)(max + 1 > 0 ? (max + 1 < GO_MAX_HISTORY + 1 ? max + 1 : GO_MAX_HISTORY + 1) : 1);
	*set = calloc((size_t)*n, sizeof(bool));
	if (!*set)
		FAIL("turnNumbers", "out of memory");
	cJSON_ArrayForEach(e, tn) {
		k = (int64_t)e->valuedouble;
		if (k >= 0 && k < *n)
			(*set)[k] = true;
	}
	return true;
}

/* terminate (by terminateId) and terminate_all. */
static bool action_terminate(const qctx *c, bool all)
{
	analysis_engine *a = c->a;
	cJSON *tid = get(c, "terminateId");
	if (!all && !cJSON_IsString(tid))
		FAIL("terminateId", "Requests for a terminate action must have a string \"terminateId\" field");
	bool *set;
	int n;
	if (!parse_turn_set(c, &set, &n))
		return false;
	pthread_mutex_lock(&a->mu);
	for (turn *t = a->open; t; t = t->next)
		if ((all || !strcmp(t->q->id, tid->valuestring)) &&
		    (!set || (t->number < n && set[t->number])))
			turn_terminate(a, t);
	pthread_mutex_unlock(&a->mu);
	free(set);
	return true;
}

/* An action: answered at once, echoing the query (as KataGo). */
static void handle_action(const qctx *c, const char *action)
{
	analysis_engine *a = c->a;
	cJSON *echo = cJSON_Duplicate(c->in, true);
	if (!echo)
		return;
	if (!strcmp(action, "query_version")) {
		cJSON_AddStringToObject(echo, "git_hash", "<omitted>");
		cJSON_AddStringToObject(echo, "version", GTP_SENTE_VERSION);
	} else if (!strcmp(action, "query_models")) {
		cJSON *ms = cJSON_AddArrayToObject(echo, "models");
		if (a->net) {
			cJSON *m = cJSON_CreateObject();
			const char *base = strrchr(a->opt.weights, '/');
			cJSON_AddStringToObject(m, "name", a->opt.weights);
			cJSON_AddStringToObject(m, "internalName", base ? base + 1 : a->opt.weights);
			cJSON_AddNumberToObject(m, "maxBatchSize", a->opt.batch);
			cJSON_AddBoolToObject(m, "usesHumanSLProfile", false);
			cJSON_AddStringToObject(m, "backend", a->bes.what);
			cJSON_AddItemToArray(ms, m);
		}
	} else if (!strcmp(action, "clear_cache")) {
		eval_clear_cache(a->ev);
	} else if (!strcmp(action, "terminate") || !strcmp(action, "terminate_all")) {
		if (!action_terminate(c, action[9] == '_')) {
			cJSON_Delete(echo);
			return;
		}
	} else {
		cJSON_Delete(echo);
		report(a, false, NULL, NULL, "'action' field must be 'query_version' or 'query_models' or "
		       "'clear_cache' or 'terminate' or 'terminate_all'");
		return;
	}
	emit(a, echo);
}

#undef FAIL

void analysis_engine_handle(analysis_engine *a, const char *line, size_t len)
{
	while (len > 0 && strchr(" \t\r\n", line[len - 1]) && line[len - 1])
		len--;
	while (len > 0 && strchr(" \t\r\n", line[0]) && line[0])
		line++, len--;
	if (len == 0)
		return;
	char q[ECHO_MAX + 8];
	cJSON *in = cJSON_ParseWithLength(line, len);
	if (!in) {
		const char *at = cJSON_GetErrorPtr();
		quote(line, len, q, sizeof(q));
		size_t off = at && at >= line && at <= line + len ? (size_t)(at - line) : len;
		report(a, false, NULL, NULL, "parse error at byte %zu - could not parse input line as json "
		       "request: %s", off, q);
		return;
	}
	if (!cJSON_IsObject(in)) {
		quote(line, len, q, sizeof(q));
		report(a, false, NULL, NULL, "Request line was valid json but was not an object, "
		       "ignoring: %s", q);
		cJSON_Delete(in);
		return;
	}
	cJSON *id = cJSON_GetObjectItemCaseSensitive(in, "id");
	if (!cJSON_IsString(id)) {
		report(a, false, NULL, NULL, "Request must have a string \"id\" field");
		cJSON_Delete(in);
		return;
	}
	qctx c = { .a = a, .id = id->valuestring, .in = in };
	cJSON *action = cJSON_GetObjectItemCaseSensitive(in, "action");
	if (cJSON_IsString(action)) {
		handle_action(&c, action->valuestring);
	} else {
		query *qy = calloc(1, sizeof(*qy));
		if (qy && (qy->id = strdup(c.id))) {
			qy->search = mcts_options_default();
			qy->search.threads = a->opt.search_threads;
			int per = a->opt.threads * a->opt.search_threads;
			qy->search.gather = a->opt.batch > per ? a->opt.batch / per : 1;
			qy->search.max_visits = a->opt.max_visits;
			qy->search.max_memory = a->opt.tree_bytes;
			qy->search.seed = a->opt.seed;
			qy->pv_len = a->opt.pv_len;
			qy->view = VIEW_BLACK;
			if (handle_query(&c, qy))
				qy = NULL; /* the turns hold it (or it was freed) */
		} else {
			report(a, false, c.id, "id", "out of memory");
		}
		if (qy) {
			free(qy->id);
			free(qy);
		}
	}
	cJSON_Delete(in);
}

/* ---- the engine -------------------------------------------------------------- */

analysis_options analysis_options_default(void)
{
	analysis_options o = {
		.weights = NULL,
		.threads = 8,
		.search_threads = 1,
		.max_visits = 500,
		.batch = 32,
		.cache_bytes = (size_t)64 << 20,
		.tree_bytes = (size_t)128 << 20,
		.pv_len = 15,
		.score_playouts = 100,
		.seed = 1,
		.quiet = false,
	};
	o.nn = nn_backend_options_default();
	return o;
}

analysis_engine *analysis_engine_new(const analysis_options *opt, FILE *out, char *err,
				     size_t errlen)
{
	analysis_engine *a = calloc(1, sizeof(*a));
	if (!a) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	a->opt = *opt;
	if (a->opt.threads < 1)
		a->opt.threads = 1;
	if (a->opt.search_threads < 1)
		a->opt.search_threads = 1;
	if (a->opt.batch < 1)
		a->opt.batch = 1;
	if (a->opt.pv_len < 1 || a->opt.pv_len > MAX_PV)
		a->opt.pv_len = 15;
	a->out = out;
	pthread_mutex_init(&a->out_mu, NULL);
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->work, NULL);
	pthread_cond_init(&a->idle, NULL);
	a->params = game_params_default(GAME_KIND_GO);
	nn_encoding enc = nn_encoding_for_game(&a->params);
	a->any_size = true;
	if (opt->weights) {
		nn_expect want = { .game = -1 };
		char lerr[512];
		a->net = nn_net_load_any(opt->weights, &want, lerr, sizeof(lerr));
		if (!a->net) {
			snprintf(err, errlen, "%s", lerr);
			goto fail;
		}
		a->params = nn_arch_params(&a->net->arch);
		a->any_size = false;
		enc = a->net->arch.encoding;
		if (nn_backend_set_open(&a->bes, a->net, a->opt.batch, &opt->nn, lerr, sizeof(lerr)) < 0) {
			snprintf(err, errlen, "backend: %s", lerr);
			goto fail;
		}
	}
	const game_desc *d = game_desc_from_params(&a->params);
	game_numbers nb = game_numbers_of(&a->params);
	if (a->any_size)
		snprintf(a->game_text, sizeof(a->game_text), "%s (any size %d..%d)", d->title,
			 d->min_size, d->max_size);
	else
		snprintf(a->game_text, sizeof(a->game_text), "%s %dx%d", d->title, nb.width, nb.height);
	eval_options eo = eval_options_default();
	eo.max_batch = a->opt.batch;
	eo.cache_bytes = opt->cache_bytes;
	eo.seed = opt->seed;
	eo.plain_prior = true;
	a->ev = eval_new(a->bes.be, a->bes.n, enc, &eo, err, errlen);
	if (!a->ev)
		goto fail;
	a->workers = calloc((size_t)a->opt.threads, sizeof(worker));
	if (!a->workers) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	a->n_workers = a->opt.threads;
	for (int i = 0; i < a->n_workers; i++) {
		worker *w = &a->workers[i];
		w->a = a;
		w->index = i;
		mcts_options mo = mcts_options_default();
		mo.threads = a->opt.search_threads;
		mo.max_memory = a->opt.tree_bytes;
		mo.seed = opt->seed + (uint64_t)i;
		w->search = mcts_new(a->ev, &mo, err, errlen);
		if (!w->search)
			goto fail;
	}
	for (int i = 0; i < a->n_workers; i++) {
		worker *w = &a->workers[i];
		if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
			snprintf(err, errlen, "cannot start analysis thread %d", i);
			goto fail;
		}
		w->started = true;
	}
	return a;
fail:
	analysis_engine_free(a);
	return NULL;
}

void analysis_engine_free(analysis_engine *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	a->quitting = true;
	for (turn *t = a->open; t; t = t->next)
		if (t->state == TURN_SEARCHING)
			mcts_interrupt(a->workers[t->worker].search);
	pthread_cond_broadcast(&a->work);
	pthread_mutex_unlock(&a->mu);
	for (int i = 0; i < a->n_workers; i++)
		if (a->workers[i].started)
			pthread_join(a->workers[i].thread, NULL);
	for (int i = 0; i < a->n_workers; i++) {
		worker *w = &a->workers[i];
		mcts_free(w->search);
		estimate_reset(&w->root);
		for (int k = 0; k < GAME_MAX_ACTIONS; k++)
			estimate_reset(&w->moves[k]);
	}
	/* Turns no thread popped (none were started). */
	while (a->open)
		turn_close(a, a->open);
	free(a->workers);
	free(a->heap);
	eval_free(a->ev);
	nn_backend_set_close(&a->bes);
	nn_net_free(a->net);
	pthread_cond_destroy(&a->work);
	pthread_cond_destroy(&a->idle);
	pthread_mutex_destroy(&a->mu);
	pthread_mutex_destroy(&a->out_mu);
	free(a);
}

void analysis_engine_drain(analysis_engine *a)
{
	pthread_mutex_lock(&a->mu);
	while (a->n_open > 0)
		pthread_cond_wait(&a->idle, &a->mu);
	pthread_mutex_unlock(&a->mu);
}

int analysis_engine_run(analysis_engine *a, int fd)
{
	size_t cap = 1 << 16, len = 0, scan = 0;
	char *buf = malloc(cap);
	bool skipping = false, failed = false;
	if (!buf)
		return -1;
	for (;;) {
		char *nl = memchr(buf + scan, '\n', len - scan);
		if (nl) {
			size_t n = (size_t)(nl - buf);
			if (!skipping)
				analysis_engine_handle(a, buf, n);
			skipping = false;
			memmove(buf, nl + 1, len - n - 1);
			len -= n + 1;
			scan = 0;
			continue;
		}
		scan = len;
		if (len >= MAX_LINE && !skipping) {
			report(a, false, NULL, NULL, "Request line longer than %d bytes, ignoring it", MAX_LINE);
			skipping = true;
		}
		if (skipping)
			len = scan = 0;
		if (cap - len < 4096) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				failed = true;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t k = read(fd, buf + len, cap - len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			failed = k < 0;
			if (len > 0 && !skipping)
				analysis_engine_handle(a, buf, len); /* a last line without its newline */
			break;
		}
		len += (size_t)k;
	}
	free(buf);
	analysis_engine_drain(a);
	return failed ? -1 : 0;
}

void analysis_engine_get_stats(analysis_engine *a, analysis_stats *out)
{
	pthread_mutex_lock(&a->mu);
	*out = a->stats;
	pthread_mutex_unlock(&a->mu);
	eval_get_stats(a->ev, &out->eval);
}

const char *analysis_engine_backend(const analysis_engine *a)
{
	return a->bes.n ? a->bes.what : "none";
}

const char *analysis_engine_game(const analysis_engine *a)
{
	return a->game_text;
}
