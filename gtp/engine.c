/* engine.c: GTP v2 engine (see engine.h): input, answers, the command
 * table and the GTP v2 commands. Analysis is in analyze.c, the KataGo,
 * Leela Zero, KGS and GoGui extensions in extensions.c. */
#include "gtp/engine.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "engine/clock.h"
#include "engine/fileio.h"
#include "engine/game_desc.h"
#include "engine/sgf.h"
#include "gtp/internal.h"
#include "nn/encode.h"

void gtp_log(const gtp_engine *e, const char *fmt, ...)
{
	if (e->opt.quiet)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

/* ---- input ---------------------------------------------------------------- */

static bool input_has_line(const gtp_input *in)
{
	return memchr(in->buf, '\n', in->len) != NULL || (in->eof && in->len > 0) ||
	       in->len == sizeof(in->buf);
}

/* Waits up to timeout_ms (-1: forever) for more input. True when a whole
 * line (or the end of input) is ready. */
bool gtp_input_wait(gtp_input *in, int timeout_ms)
{
	if (input_has_line(in) || in->eof)
		return true;
	struct pollfd p = { .fd = in->fd, .events = POLLIN };
	int r = poll(&p, 1, timeout_ms);
	if (r < 0 && errno != EINTR) {
		in->eof = true;
		return true;
	}
	if (r <= 0)
		return false;
	ssize_t k = read(in->fd, in->buf + in->len, sizeof(in->buf) - in->len);
	if (k < 0 && (errno == EINTR || errno == EAGAIN))
		return input_has_line(in);
	if (k <= 0)
		in->eof = true;
	else
		in->len += (size_t)k;
	return input_has_line(in) || in->eof;
}

/* Drops the first n bytes of the buffer. */
static void input_consume(gtp_input *in, size_t n)
{
	memmove(in->buf, in->buf + n, in->len - n);
	in->len -= n;
}

/* Takes the next line into line[] (cap bytes); false at the end of input.
 * A line longer than cap, or than the buffer, comes back cut with
 * *too_long set, and the rest of it, up to its newline, is dropped: no
 * part of one line is ever read as a command of its own. */
static bool input_line(gtp_input *in, char *line, size_t cap, size_t *len, bool *too_long)
{
	for (;;) {
		while (!input_has_line(in) && !in->eof)
			gtp_input_wait(in, -1);
		if (in->len == 0)
			return false;
		char *nl = memchr(in->buf, '\n', in->len);
		size_t n = nl ? (size_t)(nl - in->buf) + 1 : in->len;
		/* No newline and not the end: the buffer is full of one line. */
		bool cut = !nl && !in->eof;
		if (in->skipping) {
			in->skipping = cut;
			input_consume(in, n);
			continue;
		}
		*too_long = cut || n > cap;
		size_t copy = n < cap ? n : cap;
		memcpy(line, in->buf, copy);
		*len = copy;
		in->skipping = cut;
		input_consume(in, n);
		return true;
	}
}


void gtp_reply_add(gtp_reply *r, const char *fmt, ...)
{
	va_list ap;
	if (!r->text) {
		r->cap = 256;
		r->len = 0;
		r->text = malloc(r->cap);
		if (!r->text) {
			r->cap = 0;
			return;
		}
		r->text[0] = '\0';
	}
	for (;;) {
		size_t room = r->cap - r->len;
		va_start(ap, fmt);
		int k = vsnprintf(r->text + r->len, room, fmt, ap);
		va_end(ap);
		if (k < 0)
			return;
		if ((size_t)k < room) {
			r->len += (size_t)k;
			return;
		}
		size_t cap = r->cap * 2 + (size_t)k;
		char *t = realloc(r->text, cap);
		if (!t)
			return; /* keep what fits; the answer is cut, not lost */
		r->text = t;
		r->cap = cap;
	}
}

static const gtp_entry *gtp_find(const char *name);
static const gtp_entry gtp_table[];

/* The game's position is a go_board: handicap, SGF, scoring and dead
 * stones apply, and GTP may play out of turn and after two passes. */
bool gtp_is_go(const gtp_engine *e) { return game_desc_of(&e->game)->has_go_board; }

bool gtp_fail(gtp_reply *r, const char *msg)
{
	gtp_reply_add(r, "%s", msg);
	return false;
}

bool gtp_need_args(const gtp_command *c, int n, gtp_reply *r)
{
	if (c->argc < n) {
		gtp_reply_add(r, "syntax error");
		return false;
	}
	return true;
}

/* "b", "black", "w", "white" (any case) -> colour; -1 otherwise. */
int gtp_parse_color(const char *s)
{
	if (!strcasecmp(s, "b") || !strcasecmp(s, "black"))
		return GAME_BLACK;
	if (!strcasecmp(s, "w") || !strcasecmp(s, "white"))
		return GAME_WHITE;
	return -1;
}

bool gtp_parse_int(const char *s, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (end == s || *end || v < -1000000 || v > 1000000)
		return false;
	*out = (int)v;
	return true;
}

/* A decimal number, the only kind GTP has: strtod alone would also take
 * hex ("0x10" as 16), "inf" and "nan". False for those, for anything
 * else, and for trailing text. */
bool gtp_parse_real(const char *s, double *out)
{
	const char *p = s + (*s == '+' || *s == '-');
	if (!isdigit((unsigned char)p[0]) && p[0] != '.')
		return false;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		return false;
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || !isfinite(v))
		return false;
	*out = v;
	return true;
}

static bool cmd_protocol_version(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	gtp_reply_add(r, "2");
	return true;
}

static bool cmd_name(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	gtp_reply_add(r, "sente");
	return true;
}

static bool cmd_version(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	gtp_reply_add(r, GTP_VERSION);
	return true;
}

static bool cmd_known_command(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	if (!gtp_need_args(c, 1, r))
		return false;
	const gtp_entry *k = gtp_find(c->argv[0]);
	gtp_reply_add(r, "%s", k && (!k->go_only || gtp_is_go(e)) ? "true" : "false");
	return true;
}

static bool cmd_list_commands(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	for (const gtp_entry *k = gtp_table; k->name; k++)
		if (!k->go_only || gtp_is_go(e))
			gtp_reply_add(r, "%s%s", r->len ? "\n" : "", k->name);
	return true;
}

static bool cmd_quit(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	e->quit = true;
	return true;
}

static bool cmd_boardsize(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	int size;
	if (!gtp_need_args(c, 1, r))
		return false;
	if (!gtp_parse_int(c->argv[0], &size))
		return gtp_fail(r, "boardsize not an integer");
	game_params p = e->game.params;
	p.size = size;
	const game_desc *d = game_desc_of(&e->game);
	if (size < d->min_size || size > d->max_size || (e->net && !nn_arch_plays(&e->net->arch, &p)) ||
	    game_init(&e->game, &p) != GAME_OK)
		return gtp_fail(r, "unacceptable size");
	return true;
}

static bool cmd_clear_board(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	e->pb[0] = e->pw[0] = e->rules[0] = '\0';
	game_params p = e->game.params;
	game_init(&e->game, &p);
	return true;
}

static bool cmd_komi(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	double k;
	if (!gtp_need_args(c, 1, r))
		return false;
	if (!gtp_is_go(e))
		return true; /* accepted and ignored: Connect Four has no komi */
	if (!gtp_parse_real(c->argv[0], &k))
		return gtp_fail(r, "komi not a float");
	/* Komi is kept in steps of 0.5, as area scoring needs; GUIs send
	 * e.g. 6.5 or 7.5. Round anything else to the nearest half. */
	k = round(k * 2) / 2;
	if (fabs(k) > 1000)
		return gtp_fail(r, "komi out of range");
	e->game.params.komi = k;
	go_set_komi(&e->game.u.go, k);
	return true;
}

/* play COLOR VERTEX */
static bool cmd_play(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	int color, move;
	if (!gtp_need_args(c, 2, r))
		return false;
	if ((color = gtp_parse_color(c->argv[0])) < 0)
		return gtp_fail(r, "syntax error (color)");
	if (game_move_from_text(&e->game, c->argv[1], &move) != GAME_OK)
		return gtp_fail(r, "syntax error (vertex)");
	if (game_is_over(&e->game) && !gtp_is_go(e))
		return gtp_fail(r, "illegal move (the game is over)");
	if (gtp_is_go(e)) {
		go_board *b = &e->game.u.go;
		/* GTP allows moves after two passes (the GUI decides when the
		 * game ends) and out of turn. */
		int rc = go_play_color(b, color, move);
		if (rc == -2)
			return gtp_fail(r, "illegal move (game too long)");
		if (rc != 0)
			return gtp_fail(r, "illegal move");
		return true;
	}
	if (color != game_to_move(&e->game))
		return gtp_fail(r, "illegal move (not this colour's turn)");
	if (game_play(&e->game, move) != GAME_OK)
		return gtp_fail(r, "illegal move");
	return true;
}

static bool cmd_undo(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	if (game_move_count(&e->game) == 0 || !game_undo(&e->game))
		return gtp_fail(r, "cannot undo");
	return true;
}

static bool cmd_showboard(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	char buf[4096];
	game_print(&e->game, buf, sizeof(buf));
	gtp_reply_add(r, "\n%s", buf);
	while (r->len && r->text[r->len - 1] == '\n')
		r->text[--r->len] = '\0';
	return true;
}

static bool place_handicap(gtp_engine *e, const int *points, int n, gtp_reply *r)
{
	go_board *b = &e->game.u.go;
	if (b->n_history > 0)
		return gtp_fail(r, "board not empty");
	if (go_set_handicap(b, points, n) != 0)
		return gtp_fail(r, "bad vertex list");
	char text[8];
	for (int i = 0; i < n; i++)
		gtp_reply_add(r, "%s%s", i ? " " : "", game_move_to_text(&e->game, points[i], text));
	return true;
}

static bool cmd_fixed_handicap(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	int n, points[9];
	if (!gtp_need_args(c, 1, r))
		return false;
	if (!gtp_parse_int(c->argv[0], &n))
		return gtp_fail(r, "handicap not an integer");
	if (n < 2 || n > 9 || go_fixed_handicap_points(e->game.u.go.size, n, points) != n)
		return gtp_fail(r, "invalid number of stones");
	return place_handicap(e, points, n, r);
}

static bool cmd_place_free_handicap(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	/* Until the search can choose, use the standard placements, which are
	 * what strong engines choose anyway for up to 9 stones. */
	return cmd_fixed_handicap(e, c, r);
}

static bool cmd_set_free_handicap(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	int points[GAME_MAX_ACTIONS];
	int n = c->argc;
	if (n < 2 || n >= e->game.u.go.size * e->game.u.go.size)
		return gtp_fail(r, "bad vertex list");
	for (int i = 0; i < n; i++) {
		if (game_move_from_text(&e->game, c->argv[i], &points[i]) != GAME_OK ||
		    points[i] == game_pass_move(&e->game))
			return gtp_fail(r, "bad vertex list");
		for (int j = 0; j < i; j++)
			if (points[j] == points[i])
				return gtp_fail(r, "bad vertex list");
	}
	gtp_reply scratch = { 0 };
	bool ok = place_handicap(e, points, n, &scratch);
	if (!ok)
		gtp_reply_add(r, "%s", scratch.text ? scratch.text : "bad vertex list");
	free(scratch.text);
	return ok;
}

static bool cmd_final_score(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	if (!gtp_is_go(e)) {
		int res = game_result(&e->game);
		gtp_reply_add(r, "%s", res > 0 ? "B+" : res < 0 ? "W+" : "0");
		return true;
	}
	const go_board *b = &e->game.u.go;
	if (b->resigned >= 0) {
		gtp_reply_add(r, "%s+R", b->resigned == GO_WHITE ? "B" : "W");
		return true;
	}
	/* Tromp-Taylor area score, no dead-stone removal (as Leela Zero). */
	double s = go_score(b);
	if (s == 0)
		gtp_reply_add(r, "0");
	else
		gtp_reply_add(r, "%s+%.1f", s > 0 ? "B" : "W", fabs(s));
	return true;
}

/* ---- search --------------------------------------------------------------- */

void gtp_stop_pondering(gtp_engine *e)
{
	if (e->pondering) {
		mcts_stop(e->search);
		e->pondering = false;
	}
}

/* Starts an answer that the handler streams itself ("=ID" and a newline;
 * the handler ends it with a blank line). */
void gtp_begin_streamed(gtp_engine *e, const gtp_command *c)
{
	if (c->id >= 0)
		fprintf(e->out, "=%d\n", c->id);
	else
		fprintf(e->out, "=\n");
	fflush(e->out);
	e->streamed = true;
}

/* Winrate (0..1) of a value in [-1, 1]. */

/* Search limits for a move by `color`: time control when one is set, the
 * user's visit/playout limits otherwise (or as well, when given). */
void gtp_set_limits(gtp_engine *e, int color, double seconds_override)
{
	mcts_options o = e->opt.search;
	double budget = timectl_budget(&e->time, color, game_num_actions(&e->game),
				       game_move_count(&e->game));
	if (seconds_override > 0) {
		o.max_seconds = seconds_override;
	} else if (budget > 0) {
		o.max_seconds = budget;
		if (!e->opt.limits_set) {
			o.max_visits = 0;
			o.max_playouts = 0;
		}
	}
	mcts_set_options(e->search, &o);
}

/* Gives the move to `color`, as genmove may ask out of turn. */
bool gtp_ensure_to_move(gtp_engine *e, int color, gtp_reply *r)
{
	if (game_to_move(&e->game) == color)
		return true;
	if (!game_set_to_move(&e->game, color)) {
		gtp_reply_add(r, "not this colour's turn");
		return false;
	}
	return true;
}

bool gtp_parse_color_arg(const gtp_command *c, int *color, gtp_reply *r)
{
	if (c->argc < 1) {
		gtp_reply_add(r, "syntax error");
		return false;
	}
	if ((*color = gtp_parse_color(c->argv[0])) < 0) {
		gtp_reply_add(r, "syntax error (color)");
		return false;
	}
	return true;
}


/* Plays `move` for the side to move, charging its clock; the answer text. */
void gtp_commit_move(gtp_engine *e, int move, double started, gtp_reply *r)
{
	char text[8];
	int color = game_to_move(&e->game);
	timectl_charge(&e->time, color, clock_now() - started);
	if (gtp_is_go(e))
		go_play_color(&e->game.u.go, color, move);
	else
		game_play(&e->game, move);
	gtp_reply_add(r, "%s", game_move_to_text(&e->game, move, text));
}

/* Searches and picks a move (or resigns) for the side to move. Returns the
 * move, GAME_MOVE_NONE to resign. */
int gtp_think(gtp_engine *e, bool allow_resign)
{
	mcts_set_position(e->search, &e->game);
	if (e->cancellable && e->in) {
		/* Until the limits, or until a line arrives (which then runs as
		 * the next command). */
		mcts_start(e->search);
		while (mcts_running(e->search))
			if (gtp_input_wait(e->in, 5)) {
				e->cancelled = true;
				break;
			}
		mcts_stop(e->search);
	} else {
		mcts_search(e->search);
	}
	mcts_stats st;
	mcts_get_stats(e->search, &st);
	float v = mcts_root_value(e->search);
	gtp_log(e, "sente: %d visits, %llu playouts in %.2f s (%.0f/s), winrate %.1f%%\n",
		 mcts_root_visits(e->search), (unsigned long long)st.playouts, st.seconds,
		 st.seconds > 0 ? st.playouts / st.seconds : 0.0, gtp_winrate(v) * 100);
	if (st.pool_full)
		gtp_log(e, "sente: the search tree is full (--memory %zu MB): the search stopped "
			   "early; give it more memory for longer searches\n",
			 e->opt.search.max_memory >> 20);
	if (allow_resign && e->opt.resign_pct > 0 && gtp_winrate(v) * 100 < e->opt.resign_pct &&
	    mcts_root_visits(e->search) >= 100 &&
	    game_move_count(&e->game) > game_num_actions(&e->game) / 8)
		return GAME_MOVE_NONE;
	int m = mcts_choose_move(e->search, 0, true);
	if (m == GAME_MOVE_NONE)
		m = game_pass_move(&e->game);
	return m;
}

void gtp_start_pondering(gtp_engine *e)
{
	if (!e->opt.ponder || !e->in || game_is_over(&e->game))
		return;
	mcts_options o = e->opt.search;
	o.max_visits = 0;
	o.max_playouts = 0;
	o.max_seconds = 0;
	mcts_set_options(e->search, &o);
	mcts_set_position(e->search, &e->game);
	mcts_start(e->search);
	e->pondering = true;
}

bool gtp_genmove_common(gtp_engine *e, const gtp_command *c, gtp_reply *r, bool commit)
{
	int color;
	if (!gtp_parse_color_arg(c, &color, r))
		return false;
	if (game_desc_of(&e->game)->has_pass && game_is_over(&e->game) &&
	    game_resigned(&e->game) < 0) {
		/* After two passes GUIs may still ask: pass again. */
		if (!gtp_ensure_to_move(e, color, r))
			return false;
		if (commit)
			gtp_commit_move(e, game_pass_move(&e->game), clock_now(), r);
		else
			gtp_reply_add(r, "pass");
		return true;
	}
	if (game_is_over(&e->game))
		return gtp_fail(r, "the game is over");
	if (!gtp_ensure_to_move(e, color, r))
		return false;
	double started = clock_now();
	gtp_set_limits(e, color, 0);
	int m = gtp_think(e, commit);
	if (e->cancelled) {
		e->cancelled = false;
		gtp_reply_add(r, "cancelled");
		return true;
	}
	if (m == GAME_MOVE_NONE) {
		game_resign(&e->game, color);
		gtp_reply_add(r, "resign");
		return true;
	}
	if (commit) {
		gtp_commit_move(e, m, started, r);
		gtp_start_pondering(e);
	} else {
		char text[8];
		gtp_reply_add(r, "%s", game_move_to_text(&e->game, m, text));
	}
	return true;
}

static bool cmd_genmove(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	return gtp_genmove_common(e, c, r, true);
}

static bool cmd_reg_genmove(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	game saved = e->game;
	bool ok = gtp_genmove_common(e, c, r, false);
	e->game = saved; /* reg_genmove never changes the game */
	return ok;
}


static bool cmd_clear_cache(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	eval_clear_cache(e->ev);
	mcts_clear(e->search);
	return true;
}

static bool cmd_stop(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	gtp_stop_pondering(e);
	return true;
}

/* ---- time ----------------------------------------------------------------- */

static bool parse_seconds(const char *s, double *out)
{
	double v;
	if (!gtp_parse_real(s, &v) || v < 0 || v > 1e7)
		return false;
	*out = v;
	return true;
}

static bool cmd_time_settings(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	double main_t, byo;
	int stones;
	if (!gtp_need_args(c, 3, r))
		return false;
	if (!parse_seconds(c->argv[0], &main_t) || !parse_seconds(c->argv[1], &byo) ||
	    !gtp_parse_int(c->argv[2], &stones) || stones < 0)
		return gtp_fail(r, "syntax error");
	timectl_set_canadian(&e->time, main_t, byo, stones);
	return true;
}

static bool cmd_kgs_time_settings(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	double main_t = 0, byo = 0;
	int n = 0;
	if (!gtp_need_args(c, 1, r))
		return false;
	const char *kind = c->argv[0];
	if (!strcmp(kind, "none")) {
		timectl_set_canadian(&e->time, 0, 1, 0);
	} else if (!strcmp(kind, "absolute")) {
		if (c->argc < 2 || !parse_seconds(c->argv[1], &main_t))
			return gtp_fail(r, "syntax error");
		timectl_set_absolute(&e->time, main_t);
	} else if (!strcmp(kind, "byoyomi")) {
		if (c->argc < 4 || !parse_seconds(c->argv[1], &main_t) ||
		    !parse_seconds(c->argv[2], &byo) || !gtp_parse_int(c->argv[3], &n) || n < 0)
			return gtp_fail(r, "syntax error");
		timectl_set_japanese(&e->time, main_t, byo, n);
	} else if (!strcmp(kind, "canadian")) {
		if (c->argc < 4 || !parse_seconds(c->argv[1], &main_t) ||
		    !parse_seconds(c->argv[2], &byo) || !gtp_parse_int(c->argv[3], &n) || n < 0)
			return gtp_fail(r, "syntax error");
		timectl_set_canadian(&e->time, main_t, byo, n);
	} else if (!strcmp(kind, "fischer")) {
		if (c->argc < 3 || !parse_seconds(c->argv[1], &main_t) ||
		    !parse_seconds(c->argv[2], &byo))
			return gtp_fail(r, "syntax error");
		timectl_set_fischer(&e->time, main_t, byo);
	} else {
		return gtp_fail(r, "syntax error (none, absolute, byoyomi, canadian or fischer)");
	}
	return true;
}

static bool cmd_time_left(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	int color, stones;
	double t;
	if (!gtp_need_args(c, 3, r))
		return false;
	if ((color = gtp_parse_color(c->argv[0])) < 0 || !parse_seconds(c->argv[1], &t) ||
	    !gtp_parse_int(c->argv[2], &stones) || stones < 0)
		return gtp_fail(r, "syntax error");
	timectl_time_left(&e->time, color, t, stones);
	return true;
}

/* ---- scoring and records -------------------------------------------------- */

/* Dead stones: a stone whose point ends up the opponent's in most of 200
 * fast playouts (gtp_ownership) is dead. */
static void dead_stones(const gtp_engine *e, bool *dead)
{
	const go_board *b = &e->game.u.go;
	float share[2][GO_MAX_SIZE * GO_MAX_SIZE];
	gtp_ownership(b, 200, share[GO_BLACK], share[GO_WHITE]);
	for (int p = 0; p < b->size * b->size; p++) {
		int col = go_color_at(b, p % b->size, p / b->size);
		dead[p] = col >= 0 && share[1 - col][p] > 0.5f;
	}
}

static bool cmd_final_status_list(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	if (!gtp_need_args(c, 1, r))
		return false;
	const char *what = c->argv[0];
	bool want_dead = !strcmp(what, "dead");
	if (!want_dead && strcmp(what, "alive") && strcmp(what, "seki"))
		return gtp_fail(r, "syntax error (dead, alive or seki)");
	if (!strcmp(what, "seki"))
		return true; /* sente does not tell seki apart: none listed */
	bool dead[GO_MAX_SIZE * GO_MAX_SIZE];
	dead_stones(e, dead);
	const go_board *b = &e->game.u.go;
	char text[8];
	int col = 0;
	for (int p = 0; p < b->size * b->size; p++) {
		if (go_color_at(b, p % b->size, p / b->size) < 0 || dead[p] != want_dead)
			continue;
		gtp_reply_add(r, "%s%s", col == 0 ? (r->len ? "\n" : "") : " ",
			  game_move_to_text(&e->game, p, text));
		col = (col + 1) % 10;
	}
	return true;
}

static bool cmd_loadsgf(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	int upto = -1;
	char err[256];
	if (!gtp_need_args(c, 1, r))
		return false;
	if (c->argc >= 2 && (!gtp_parse_int(c->argv[1], &upto) || upto < 1))
		return gtp_fail(r, "syntax error (move number)");
	sgf_record rec;
	sgf_record_init(&rec);
	bool ok = false;
	static go_board b; /* 25 KB, off the stack */
	if (sgf_load_file(c->argv[0], &rec, err, sizeof(err)) != 0) {
		gtp_reply_add(r, "cannot load file: %s", err);
		goto out;
	}
	game_params rp = e->game.params;
	rp.size = rec.size;
	if (e->net && !nn_arch_plays(&e->net->arch, &rp)) {
		char sizes[128];
		gtp_reply_add(r, "cannot load file: %dx%d, the network plays %s", rec.size, rec.size,
			      nn_arch_sizes_text(&e->net->arch, sizes, sizeof(sizes)));
		goto out;
	}
	/* GTP: the position before move `upto` is played. */
	if (sgf_replay(&rec, &b, upto > 0 ? upto - 1 : -1, err, sizeof(err)) != 0) {
		gtp_reply_add(r, "cannot load file: %s", err);
		goto out;
	}
	e->game.params.size = rec.size;
	e->game.params.komi = b.komi;
	e->game.u.go = b;
	snprintf(e->pb, sizeof(e->pb), "%s", rec.pb);
	snprintf(e->pw, sizeof(e->pw), "%s", rec.pw);
	snprintf(e->rules, sizeof(e->rules), "%s", rec.rules);
	ok = true; /* GTP: an empty answer */
out:
	sgf_record_free(&rec);
	return ok;
}

static bool cmd_printsgf(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	sgf_record rec;
	if (sgf_record_from_go(&e->game.u.go, &rec) != 0)
		return gtp_fail(r, "cannot write this game as SGF");
	/* The names and rules of a loaded record stay. */
	snprintf(rec.pb, sizeof(rec.pb), "%s", e->pb);
	snprintf(rec.pw, sizeof(rec.pw), "%s", e->pw);
	if (e->rules[0])
		snprintf(rec.rules, sizeof(rec.rules), "%s", e->rules);
	char *text = sgf_write(&rec);
	sgf_record_free(&rec);
	if (!text)
		return gtp_fail(r, "cannot write this game as SGF");
	bool ok = true;
	if (c->argc >= 1) {
		char why[512];
		if (fileio_write_text(c->argv[0], text, why, sizeof(why)) != 0)
			ok = gtp_fail(r, "cannot write file");
	} else {
		gtp_reply_add(r, "%s", text);
		while (r->len && r->text[r->len - 1] == '\n')
			r->text[--r->len] = '\0';
	}
	free(text);
	return ok;
}

static const gtp_entry gtp_table[] = {
	{ "protocol_version", cmd_protocol_version, false },
	{ "name", cmd_name, false },
	{ "version", cmd_version, false },
	{ "known_command", cmd_known_command, false },
	{ "list_commands", cmd_list_commands, false },
	{ "quit", cmd_quit, false },
	{ "boardsize", cmd_boardsize, true },
	{ "clear_board", cmd_clear_board, false },
	{ "komi", cmd_komi, false },
	{ "play", cmd_play, false },
	{ "undo", cmd_undo, false },
	{ "showboard", cmd_showboard, false },
	{ "fixed_handicap", cmd_fixed_handicap, true },
	{ "place_free_handicap", cmd_place_free_handicap, true },
	{ "set_free_handicap", cmd_set_free_handicap, true },
	{ "final_score", cmd_final_score, false },
	{ "final_status_list", cmd_final_status_list, true },
	{ "genmove", cmd_genmove, false },
	{ "reg_genmove", cmd_reg_genmove, false },
	{ "time_settings", cmd_time_settings, false },
	{ "time_left", cmd_time_left, false },
	{ "kgs-time_settings", cmd_kgs_time_settings, false },
	{ "loadsgf", cmd_loadsgf, true },
	{ "printsgf", cmd_printsgf, true },
	{ "lz-analyze", gtp_cmd_lz_analyze, false },
	{ "lz-genmove_analyze", gtp_cmd_lz_genmove_analyze, false },
	{ "kata-analyze", gtp_cmd_kata_analyze, false },
	{ "kata-genmove_analyze", gtp_cmd_kata_genmove_analyze, false },
	{ "kata-search_analyze", gtp_cmd_kata_search_analyze, false },
	{ "kata-search_analyze_cancellable", gtp_cmd_kata_search_analyze_cancellable, false },
	{ "analyze", gtp_cmd_lz_analyze, false },
	{ "genmove_analyze", gtp_cmd_lz_genmove_analyze, false },
	{ "kata-raw-nn", gtp_cmd_kata_raw_nn, false },
	{ "kata-search", gtp_cmd_kata_search, false },
	{ "kata-search_cancellable", gtp_cmd_kata_search_cancellable, false },
	{ "kata-get-rules", gtp_cmd_kata_get_rules, true },
	{ "kata-set-rules", gtp_cmd_kata_set_rules, true },
	{ "kgs-rules", gtp_cmd_kgs_rules, true },
	{ "get_komi", gtp_cmd_get_komi, false },
	{ "kata-list_time_settings", gtp_cmd_kata_list_time_settings, false },
	{ "kata-time_settings", gtp_cmd_kata_time_settings, false },
	{ "kata-get-param", gtp_cmd_kata_get_param, false },
	{ "kata-set-param", gtp_cmd_kata_set_param, false },
	{ "kata-list-params", gtp_cmd_kata_list_params, false },
	{ "lz-setoption", gtp_cmd_lz_setoption, false },
	{ "lz-memory_report", gtp_cmd_lz_memory_report, false },
	{ "heatmap", gtp_cmd_heatmap, false },
	{ "kgs-genmove_cleanup", gtp_cmd_kgs_genmove_cleanup, true },
	{ "gogui-analyze_commands", gtp_cmd_gogui_analyze_commands, false },
	{ "gogui-sente-policy", gtp_cmd_gogui_policy, true },
	{ "gogui-sente-ownership", gtp_cmd_gogui_ownership, true },
	{ "clear_cache", cmd_clear_cache, false },
	{ "stop", cmd_stop, false },
	{ NULL, NULL, false },
};

static const gtp_entry *gtp_find(const char *name)
{
	for (const gtp_entry *k = gtp_table; k->name; k++)
		if (!strcmp(k->name, name))
			return k;
	return NULL;
}

gtp_options gtp_options_default(void)
{
	gtp_options o;
	memset(&o, 0, sizeof(o));
	o.game = game_go.defaults; /* the Go Text Protocol: Go unless told otherwise */
	o.search = mcts_options_default();
	o.search.max_visits = 800;
	o.batch = 16;
	o.nn = nn_backend_options_default();
	o.cache_bytes = (size_t)256 << 20;
	o.ponder = true;
	o.resign_pct = 10;
	o.lag = 1.0;
	o.plain_prior = true;
	return o;
}

gtp_engine *gtp_engine_new(const gtp_options *opt, char *err, size_t errlen)
{
	gtp_engine *e = calloc(1, sizeof(*e));
	if (!e) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	e->opt = *opt;
	e->reply.cap = 4096;
	e->reply.text = malloc(e->reply.cap);
	if (!e->reply.text) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	timectl_init(&e->time);
	e->time.lag = opt->lag;
	game_params gp = opt->game;
	e->enc = nn_encoding_for_game(&gp);
	if (opt->weights) {
		nn_expect want = { .game = opt->game_given ? (int)gp.kind : -1 };
		char lerr[512];
		e->net = nn_net_load_any(opt->weights, &want, lerr, sizeof(lerr));
		if (!e->net) {
			snprintf(err, errlen, "%s", lerr);
			goto fail;
		}
		/* The network fixes the game and, where the game has sizes, the
		 * board: a size asked for that it cannot play is refused. */
		game_params np = nn_arch_params(&e->net->arch);
		const game_desc *nd = game_desc_from_params(&np);
		if (np.kind != gp.kind)
			gp = game_params_sized(np.kind, np.size, nd->has_komi ? gp.komi : NAN);
		game_params asked = np;
		asked.size = gp.size;
		if (nd->has_size && opt->size_given && !nn_arch_plays(&e->net->arch, &asked)) {
			char sizes[128];
			snprintf(err, errlen, "%s plays %s %s only; --size %d cannot be played with it "
				 "(leave --size out, or use a network of that size)",
				 opt->weights, nd->title,
				 nn_arch_sizes_text(&e->net->arch, sizes, sizeof(sizes)), gp.size);
			goto fail;
		}
		if (!opt->size_given || !nd->has_size)
			gp.size = np.size; /* a net of several sizes: its largest */
		e->enc = e->net->arch.encoding;
		nn_backend_options bo = opt->nn;
		bo.lanes = nn_lanes_resolve(&bo, opt->search.threads > 0 ? opt->search.threads : 1);
		if (nn_backend_set_open(&e->bes, e->net, opt->batch > 0 ? opt->batch : 1, &bo,
					lerr, sizeof(lerr)) < 0) {
			snprintf(err, errlen, "backend: %s", lerr);
			goto fail;
		}
	}
	/* Each search thread gathers enough leaves that together they fill
	 * a batch: few threads, full batches. */
	if (e->opt.search.gather <= 1 && e->opt.batch > e->opt.search.threads)
		e->opt.search.gather = e->opt.batch / (e->opt.search.threads > 0 ? e->opt.search.threads : 1);
	eval_options eo = eval_options_default();
	eo.max_batch = nn_lane_batch(&e->bes, opt->batch > 0 ? opt->batch : 1, e->opt.search.gather);
	eo.cache_bytes = opt->cache_bytes;
	eo.seed = opt->search.seed;
	eo.plain_prior = opt->plain_prior;
	e->ev = eval_new(e->bes.be, e->bes.n, e->enc, &eo, err, errlen);
	if (!e->ev)
		goto fail;
	e->search = mcts_new(e->ev, &e->opt.search, err, errlen);
	if (!e->search)
		goto fail;
	if (game_init(&e->game, &gp) != GAME_OK) {
		snprintf(err, errlen, "bad game parameters (size %d, komi %g)", gp.size, gp.komi);
		goto fail;
	}
	e->opt.game = gp;
	return e;
fail:
	gtp_engine_free(e);
	return NULL;
}

void gtp_engine_free(gtp_engine *e)
{
	if (!e)
		return;
	mcts_free(e->search);
	eval_free(e->ev);
	nn_backend_set_close(&e->bes);
	nn_net_free(e->net);
	free(e->reply.text);
	free(e);
}

const game *gtp_engine_game(const gtp_engine *e) { return &e->game; }

const char *gtp_engine_backend(const gtp_engine *e)
{
	return e->bes.n ? e->bes.what : "none";
}

/* gtp_engine_handle, for a line that may have been cut (too_long): such a
 * line is answered with one error whatever its start holds. */
static bool handle_line(gtp_engine *e, const char *line, size_t len, bool too_long, FILE *out)
{
	gtp_command *c = &e->cmd;
	if (!gtp_parse_line(line, len, c)) {
		if (!too_long)
			return !e->quit;
		c->name = ""; /* blank or a comment so far: still one bad line */
	}
	c->too_long |= too_long;
	gtp_stop_pondering(e);
	e->out = out;
	e->streamed = false;
	gtp_reply *r = &e->reply;
	r->len = 0;
	r->text[0] = '\0';
	bool ok;
	const gtp_entry *k = gtp_find(c->name);
	if (c->too_long || c->too_many_args)
		ok = gtp_fail(r, "line too long");
	else if (!k || (k->go_only && !gtp_is_go(e)))
		ok = gtp_fail(r, k && !strcmp(k->name, "boardsize") ? "unacceptable size" : "unknown command");
	else
		ok = k->handler(e, c, r);
	if (e->streamed)
		return !e->quit;
	char id[16] = "";
	if (c->id >= 0)
		snprintf(id, sizeof(id), "%d", c->id);
	fprintf(out, "%c%s%s%s\n\n", ok ? '=' : '?', id, r->len ? " " : "", r->text);
	fflush(out);
	return !e->quit;
}

bool gtp_engine_handle(gtp_engine *e, const char *line, size_t len, FILE *out)
{
	return handle_line(e, line, len, false, out);
}

int gtp_engine_run(gtp_engine *e, FILE *in, FILE *out)
{
	gtp_input *input = malloc(sizeof(*input));
	size_t len;
	bool too_long;
	if (!input)
		return 1;
	input->fd = fileno(in);
	input->len = 0;
	input->eof = false;
	input->skipping = false;
	e->in = input;
	while (input_line(input, input->line, sizeof(input->line), &len, &too_long))
		if (!handle_line(e, input->line, len, too_long, out))
			break;
	gtp_stop_pondering(e);
	e->in = NULL;
	free(input);
	return 0;
}
