/* engine.c: GTP v2 engine (see engine.h). */
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
#include "engine/game_desc.h"
#include "engine/sgf.h"
#include "gtp/parse.h"
#include "nn/encode.h"
#include "nn/net.h"
#include "search/eval.h"
#include "search/timectl.h"

/* Input read straight from the file descriptor, so the engine can tell
 * whether a next line is waiting (analysis runs until one arrives) without
 * stdio's buffer hiding it. */
typedef struct gtp_input {
	int fd;                  /* where commands come from */
	char buf[1 << 16];       /* bytes read, not yet handed out */
	size_t len;              /* bytes in buf */
	bool eof;                /* read() reported the end */
	bool skipping;           /* dropping the rest of an over-long line */
	char line[GTP_MAX_LINE * 2]; /* the line being handled */
} gtp_input;

/* A growable answer text; answers are small and not on a hot path. */
typedef struct gtp_reply {
	char *text; /* NUL-terminated */
	size_t len; /* bytes used, without the NUL */
	size_t cap; /* bytes allocated */
} gtp_reply;

struct gtp_engine {
	gtp_options opt;   /* as created */
	game game;         /* the position and its history */
	gtp_command cmd;   /* the command being handled */
	gtp_reply reply;   /* its answer */
	bool quit;         /* `quit` was answered */
	nn_net *net;       /* the network, NULL without weights */
	nn_backend_set bes; /* its backends (one per GPU, or the CPU) */
	evaluator *ev;     /* evaluation queue (uniform without a network) */
	nn_encoding enc;   /* the network's input encoding */
	mcts *search;      /* the search tree */
	timectl time;      /* time settings and clocks */
	gtp_input *in;     /* the command stream, NULL when lines are handed in */
	FILE *out;         /* where answers go */
	bool pondering;    /* a background search runs for the opponent's turn */
	bool streamed;     /* the handler wrote its answer itself (analysis) */
};

static void log_info(const gtp_engine *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void log_info(const gtp_engine *e, const char *fmt, ...)
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
static bool input_wait(gtp_input *in, int timeout_ms)
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
			input_wait(in, -1);
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


static void reply_add(gtp_reply *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reply_add(gtp_reply *r, const char *fmt, ...)
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

/* Handlers return true for success ("="), false for failure ("?"); either
 * way the reply holds the text. */
typedef bool (*gtp_handler)(gtp_engine *e, const gtp_command *c, gtp_reply *r);

typedef struct gtp_entry {
	const char *name;    /* the command */
	gtp_handler handler; /* its function */
	bool go_only;        /* needs a Go board: refused when the game has none */
} gtp_entry;

static const gtp_entry *gtp_find(const char *name);
static const gtp_entry gtp_table[];

/* The game's position is a go_board: handicap, SGF, scoring and dead
 * stones apply, and GTP may play out of turn and after two passes. */
static bool is_go(const gtp_engine *e) { return game_desc_of(&e->game)->has_go_board; }

static bool fail(gtp_reply *r, const char *msg)
{
	reply_add(r, "%s", msg);
	return false;
}

static bool need_args(const gtp_command *c, int n, gtp_reply *r)
{
	if (c->argc < n) {
		reply_add(r, "syntax error");
		return false;
	}
	return true;
}

/* "b", "black", "w", "white" (any case) -> colour; -1 otherwise. */
static int parse_color(const char *s)
{
	if (!strcasecmp(s, "b") || !strcasecmp(s, "black"))
		return GAME_BLACK;
	if (!strcasecmp(s, "w") || !strcasecmp(s, "white"))
		return GAME_WHITE;
	return -1;
}

static bool parse_int_arg(const char *s, int *out)
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
static bool parse_real_arg(const char *s, double *out)
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
	reply_add(r, "2");
	return true;
}

static bool cmd_name(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	reply_add(r, "sente");
	return true;
}

static bool cmd_version(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	reply_add(r, "0.1.0");
	return true;
}

static bool cmd_known_command(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	if (!need_args(c, 1, r))
		return false;
	const gtp_entry *k = gtp_find(c->argv[0]);
	reply_add(r, "%s", k && (!k->go_only || is_go(e)) ? "true" : "false");
	return true;
}

static bool cmd_list_commands(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	for (const gtp_entry *k = gtp_table; k->name; k++)
		if (!k->go_only || is_go(e))
			reply_add(r, "%s%s", r->len ? "\n" : "", k->name);
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
	if (!need_args(c, 1, r))
		return false;
	if (!parse_int_arg(c->argv[0], &size))
		return fail(r, "boardsize not an integer");
	game_params p = e->game.params;
	p.size = size;
	const game_desc *d = game_desc_of(&e->game);
	if (size < d->min_size || size > d->max_size || (e->net && size != e->net->arch.board_w) ||
	    game_init(&e->game, &p) != GAME_OK)
		return fail(r, "unacceptable size");
	return true;
}

static bool cmd_clear_board(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	game_params p = e->game.params;
	game_init(&e->game, &p);
	return true;
}

static bool cmd_komi(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	double k;
	if (!need_args(c, 1, r))
		return false;
	if (!is_go(e))
		return true; /* accepted and ignored: Connect Four has no komi */
	if (!parse_real_arg(c->argv[0], &k))
		return fail(r, "komi not a float");
	/* Komi is kept in steps of 0.5, as area scoring needs; GUIs send
	 * e.g. 6.5 or 7.5. Round anything else to the nearest half. */
	k = round(k * 2) / 2;
	if (fabs(k) > 1000)
		return fail(r, "komi out of range");
	e->game.params.komi = k;
	go_set_komi(&e->game.u.go, k);
	return true;
}

/* play COLOR VERTEX */
static bool cmd_play(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	int color, move;
	if (!need_args(c, 2, r))
		return false;
	if ((color = parse_color(c->argv[0])) < 0)
		return fail(r, "syntax error (color)");
	if (game_move_from_text(&e->game, c->argv[1], &move) != GAME_OK)
		return fail(r, "syntax error (vertex)");
	if (game_is_over(&e->game) && !is_go(e))
		return fail(r, "illegal move (the game is over)");
	if (is_go(e)) {
		go_board *b = &e->game.u.go;
		/* GTP allows moves after two passes (the GUI decides when the
		 * game ends) and out of turn. */
		int rc = go_play_color(b, color, move);
		if (rc == -2)
			return fail(r, "illegal move (game too long)");
		if (rc != 0)
			return fail(r, "illegal move");
		return true;
	}
	if (color != game_to_move(&e->game))
		return fail(r, "illegal move (not this colour's turn)");
	if (game_play(&e->game, move) != GAME_OK)
		return fail(r, "illegal move");
	return true;
}

static bool cmd_undo(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	if (game_move_count(&e->game) == 0 || !game_undo(&e->game))
		return fail(r, "cannot undo");
	return true;
}

static bool cmd_showboard(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	char buf[4096];
	game_print(&e->game, buf, sizeof(buf));
	reply_add(r, "\n%s", buf);
	while (r->len && r->text[r->len - 1] == '\n')
		r->text[--r->len] = '\0';
	return true;
}

static bool place_handicap(gtp_engine *e, const int *points, int n, gtp_reply *r)
{
	go_board *b = &e->game.u.go;
	if (b->n_history > 0)
		return fail(r, "board not empty");
	if (go_set_handicap(b, points, n) != 0)
		return fail(r, "bad vertex list");
	char text[8];
	for (int i = 0; i < n; i++)
		reply_add(r, "%s%s", i ? " " : "", game_move_to_text(&e->game, points[i], text));
	return true;
}

static bool cmd_fixed_handicap(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	int n, points[9];
	if (!need_args(c, 1, r))
		return false;
	if (!parse_int_arg(c->argv[0], &n))
		return fail(r, "handicap not an integer");
	if (n < 2 || n > 9 || go_fixed_handicap_points(e->game.u.go.size, n, points) != n)
		return fail(r, "invalid number of stones");
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
		return fail(r, "bad vertex list");
	for (int i = 0; i < n; i++) {
		if (game_move_from_text(&e->game, c->argv[i], &points[i]) != GAME_OK ||
		    points[i] == game_pass_move(&e->game))
			return fail(r, "bad vertex list");
		for (int j = 0; j < i; j++)
			if (points[j] == points[i])
				return fail(r, "bad vertex list");
	}
	gtp_reply scratch = { 0 };
	bool ok = place_handicap(e, points, n, &scratch);
	if (!ok)
		reply_add(r, "%s", scratch.text ? scratch.text : "bad vertex list");
	free(scratch.text);
	return ok;
}

static bool cmd_final_score(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	if (!is_go(e)) {
		int res = game_result(&e->game);
		reply_add(r, "%s", res > 0 ? "B+" : res < 0 ? "W+" : "0");
		return true;
	}
	const go_board *b = &e->game.u.go;
	if (b->resigned >= 0) {
		reply_add(r, "%s+R", b->resigned == GO_WHITE ? "B" : "W");
		return true;
	}
	/* Tromp-Taylor area score, no dead-stone removal (as Leela Zero). */
	double s = go_score(b);
	if (s == 0)
		reply_add(r, "0");
	else
		reply_add(r, "%s+%.1f", s > 0 ? "B" : "W", fabs(s));
	return true;
}

/* ---- search --------------------------------------------------------------- */

static void stop_pondering(gtp_engine *e)
{
	if (e->pondering) {
		mcts_stop(e->search);
		e->pondering = false;
	}
}

/* Starts an answer that the handler streams itself ("=ID" and a newline;
 * the handler ends it with a blank line). */
static void begin_streamed(gtp_engine *e, const gtp_command *c)
{
	if (c->id >= 0)
		fprintf(e->out, "=%d\n", c->id);
	else
		fprintf(e->out, "=\n");
	fflush(e->out);
	e->streamed = true;
}

/* Winrate (0..1) of a value in [-1, 1]. */
static double winrate(float v) { return (v + 1) / 2; }

/* Search limits for a move by `color`: time control when one is set, the
 * user's visit/playout limits otherwise (or as well, when given). */
static void set_limits(gtp_engine *e, int color, double seconds_override)
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
static bool ensure_to_move(gtp_engine *e, int color, gtp_reply *r)
{
	if (game_to_move(&e->game) == color)
		return true;
	if (!game_set_to_move(&e->game, color)) {
		reply_add(r, "not this colour's turn");
		return false;
	}
	return true;
}

static bool parse_color_arg(const gtp_command *c, int *color, gtp_reply *r)
{
	if (c->argc < 1) {
		reply_add(r, "syntax error");
		return false;
	}
	if ((*color = parse_color(c->argv[0])) < 0) {
		reply_add(r, "syntax error (color)");
		return false;
	}
	return true;
}

/* One "info ..." entry per root child with visits, best first, in Leela
 * Zero's (lz) or KataGo's (kata) analysis format, all on one line. */
static void print_analysis(gtp_engine *e, bool kata, int max_moves)
{
	mcts_child_info ci[GAME_MAX_ACTIONS];
	int n = mcts_root_children(e->search, ci, GAME_MAX_ACTIONS);
	char line[1 << 16], text[8];
	size_t len = 0;
	int order = 0;
	for (int i = 0; i < n && order < max_moves; i++) {
		if (ci[i].visits == 0)
			continue;
		int pv[64];
		int np = mcts_pv(e->search, ci[i].move, pv, 64);
		double wr = winrate(ci[i].q), lcb = winrate(ci[i].lcb);
		if (lcb < 0)
			lcb = 0;
		int k;
		if (kata)
			k = snprintf(line + len, sizeof(line) - len,
				     "%sinfo move %s visits %d utility %.6f winrate %.6f prior %.6f "
				     "lcb %.6f utilityLcb %.6f order %d pv",
				     len ? " " : "", game_move_to_text(&e->game, ci[i].move, text),
				     ci[i].visits, ci[i].q, wr, ci[i].prior, lcb, ci[i].lcb, order);
		else
			k = snprintf(line + len, sizeof(line) - len,
				     "%sinfo move %s visits %d winrate %d prior %d lcb %d order %d pv",
				     len ? " " : "", game_move_to_text(&e->game, ci[i].move, text),
				     ci[i].visits, (int)lround(wr * 10000), (int)lround(ci[i].prior * 10000),
				     (int)lround(lcb * 10000), order);
		if (k < 0 || (size_t)k >= sizeof(line) - len)
			break;
		len += (size_t)k;
		for (int j = 0; j < np; j++) {
			k = snprintf(line + len, sizeof(line) - len, " %s",
				     game_move_to_text(&e->game, pv[j], text));
			if (k < 0 || (size_t)k >= sizeof(line) - len)
				break;
			len += (size_t)k;
		}
		order++;
	}
	if (len) {
		fprintf(e->out, "%s\n", line);
		fflush(e->out);
	}
}

/* Options of the analyze commands: [color] [interval] then key-value
 * pairs (interval, minmoves/maxmoves; allow/avoid are not supported and
 * are refused). */
typedef struct analyze_args {
	int color;       /* side to analyse for */
	int interval_cs; /* centiseconds between outputs */
	int max_moves;   /* most info entries per line */
} analyze_args;

static bool parse_analyze(gtp_engine *e, const gtp_command *c, int first, analyze_args *a,
			  gtp_reply *r)
{
	a->color = game_to_move(&e->game);
	a->interval_cs = 100;
	a->max_moves = GAME_MAX_ACTIONS;
	int i = first;
	if (i < c->argc && parse_color(c->argv[i]) >= 0)
		a->color = parse_color(c->argv[i++]);
	if (i < c->argc && isdigit((unsigned char)c->argv[i][0])) {
		if (!parse_int_arg(c->argv[i++], &a->interval_cs) || a->interval_cs < 0)
			return fail(r, "syntax error (interval)");
	}
	while (i < c->argc) {
		const char *key = c->argv[i];
		const char *val = i + 1 < c->argc ? c->argv[i + 1] : NULL;
		int v;
		if (!strcmp(key, "interval") && val && parse_int_arg(val, &v) && v >= 0)
			a->interval_cs = v;
		else if (!strcmp(key, "maxmoves") && val && parse_int_arg(val, &v) && v > 0)
			a->max_moves = v;
		else if ((!strcmp(key, "minmoves") || !strcmp(key, "ownership") ||
			  !strcmp(key, "ownershipStdev") || !strcmp(key, "movesOwnership") ||
			  !strcmp(key, "rootInfo") || !strcmp(key, "pvVisits")) && val)
			; /* accepted; sente prints what it has */
		else if (!strcmp(key, "allow") || !strcmp(key, "avoid"))
			return fail(r, "allow/avoid are not supported");
		else
			return fail(r, "syntax error (analyze options)");
		i += 2;
	}
	return true;
}

/* Plays `move` for the side to move, charging its clock; the answer text. */
static void commit_move(gtp_engine *e, int move, double started, gtp_reply *r)
{
	char text[8];
	int color = game_to_move(&e->game);
	timectl_charge(&e->time, color, clock_now() - started);
	if (is_go(e))
		go_play_color(&e->game.u.go, color, move);
	else
		game_play(&e->game, move);
	reply_add(r, "%s", game_move_to_text(&e->game, move, text));
}

/* Searches and picks a move (or resigns) for the side to move. Returns the
 * move, GAME_MOVE_NONE to resign. */
static int think(gtp_engine *e, bool allow_resign)
{
	mcts_set_position(e->search, &e->game);
	mcts_search(e->search);
	mcts_stats st;
	mcts_get_stats(e->search, &st);
	float v = mcts_root_value(e->search);
	log_info(e, "sente: %d visits, %llu playouts in %.2f s (%.0f/s), winrate %.1f%%\n",
		 mcts_root_visits(e->search), (unsigned long long)st.playouts, st.seconds,
		 st.seconds > 0 ? st.playouts / st.seconds : 0.0, winrate(v) * 100);
	if (allow_resign && e->opt.resign_pct > 0 && winrate(v) * 100 < e->opt.resign_pct &&
	    mcts_root_visits(e->search) >= 100 &&
	    game_move_count(&e->game) > game_num_actions(&e->game) / 8)
		return GAME_MOVE_NONE;
	int m = mcts_choose_move(e->search, 0, true);
	if (m == GAME_MOVE_NONE)
		m = game_pass_move(&e->game);
	return m;
}

static void start_pondering(gtp_engine *e)
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

static bool genmove_common(gtp_engine *e, const gtp_command *c, gtp_reply *r, bool commit)
{
	int color;
	if (!parse_color_arg(c, &color, r))
		return false;
	if (game_desc_of(&e->game)->has_pass && game_is_over(&e->game) &&
	    game_resigned(&e->game) < 0) {
		/* After two passes GUIs may still ask: pass again. */
		if (!ensure_to_move(e, color, r))
			return false;
		if (commit)
			commit_move(e, game_pass_move(&e->game), clock_now(), r);
		else
			reply_add(r, "pass");
		return true;
	}
	if (game_is_over(&e->game))
		return fail(r, "the game is over");
	if (!ensure_to_move(e, color, r))
		return false;
	double started = clock_now();
	set_limits(e, color, 0);
	int m = think(e, commit);
	if (m == GAME_MOVE_NONE) {
		game_resign(&e->game, color);
		reply_add(r, "resign");
		return true;
	}
	if (commit) {
		commit_move(e, m, started, r);
		start_pondering(e);
	} else {
		char text[8];
		reply_add(r, "%s", game_move_to_text(&e->game, m, text));
	}
	return true;
}

static bool cmd_genmove(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	return genmove_common(e, c, r, true);
}

static bool cmd_reg_genmove(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	game saved = e->game;
	bool ok = genmove_common(e, c, r, false);
	e->game = saved; /* reg_genmove never changes the game */
	return ok;
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
		return fail(r, "the game is over");
	if (!ensure_to_move(e, a.color, r))
		return false;
	begin_streamed(e, c);
	mcts_options o = e->opt.search;
	if (e->in) {
		o.max_visits = o.max_playouts = 0;
		o.max_seconds = 0;
	}
	mcts_set_options(e->search, &o);
	mcts_set_position(e->search, &e->game);
	if (!e->in) {
		mcts_search(e->search);
		print_analysis(e, kata, a.max_moves);
	} else {
		mcts_start(e->search);
		int wait_ms = a.interval_cs > 0 ? a.interval_cs * 10 : 1000;
		while (!input_wait(e->in, wait_ms))
			if (a.interval_cs > 0)
				print_analysis(e, kata, a.max_moves);
		mcts_stop(e->search);
	}
	fprintf(e->out, "\n");
	fflush(e->out);
	return true; /* the answer is already written */
}

static bool cmd_lz_analyze(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	return analyze_common(e, c, r, false);
}

static bool cmd_kata_analyze(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	return analyze_common(e, c, r, true);
}

/* genmove with analysis output while it thinks, ended by "play MOVE". */
static bool genmove_analyze_common(gtp_engine *e, const gtp_command *c, gtp_reply *r, bool kata)
{
	analyze_args a;
	int color;
	if (!parse_color_arg(c, &color, r) || !parse_analyze(e, c, 1, &a, r))
		return false;
	if (game_is_over(&e->game))
		return fail(r, "the game is over");
	if (!ensure_to_move(e, color, r))
		return false;
	begin_streamed(e, c);
	double started = clock_now();
	set_limits(e, color, 0);
	mcts_set_position(e->search, &e->game);
	mcts_start(e->search);
	double next = clock_now() + a.interval_cs / 100.0;
	while (mcts_running(e->search)) {
		struct timespec ts = { 0, 5 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		if (a.interval_cs > 0 && clock_now() >= next) {
			print_analysis(e, kata, a.max_moves);
			next = clock_now() + a.interval_cs / 100.0;
		}
	}
	mcts_stop(e->search);
	print_analysis(e, kata, a.max_moves);
	float v = mcts_root_value(e->search);
	int m = mcts_choose_move(e->search, 0, true);
	if (m == GAME_MOVE_NONE)
		m = game_pass_move(&e->game);
	gtp_reply tmp = { .text = malloc(64), .cap = 64 };
	if (e->opt.resign_pct > 0 && winrate(v) * 100 < e->opt.resign_pct &&
	    mcts_root_visits(e->search) >= 100 &&
	    game_move_count(&e->game) > game_num_actions(&e->game) / 8) {
		game_resign(&e->game, color);
		fprintf(e->out, "play resign\n\n");
	} else if (tmp.text) {
		tmp.text[0] = '\0';
		commit_move(e, m, started, &tmp);
		fprintf(e->out, "play %s\n\n", tmp.text);
	}
	free(tmp.text);
	fflush(e->out);
	start_pondering(e);
	return true;
}

static bool cmd_lz_genmove_analyze(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	return genmove_analyze_common(e, c, r, false);
}

static bool cmd_kata_genmove_analyze(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	return genmove_analyze_common(e, c, r, true);
}

/* kata-raw-nn SYMMETRY|all: the network's own output (KataGo's format). */
static bool cmd_kata_raw_nn(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	int sym = 0, n_sym = game_num_symmetries(&e->game);
	bool all = false;
	if (!need_args(c, 1, r))
		return false;
	if (!strcmp(c->argv[0], "all"))
		all = true;
	else if (!parse_int_arg(c->argv[0], &sym) || sym < 0 || sym >= n_sym)
		return fail(r, "symmetry must be all or 0..7");
	if (!e->net)
		return fail(r, "no network loaded (start with -w FILE)");
	if (game_is_over(&e->game))
		return fail(r, "the game is over");
	int na = game_num_actions(&e->game);
	float pol[GAME_MAX_ACTIONS], sum[GAME_MAX_ACTIONS] = { 0 }, v, vsum = 0;
	int from = all ? 0 : sym, to = all ? n_sym : sym + 1;
	for (int s = from; s < to; s++) {
		if (eval_raw(e->ev, &e->game, s, pol, &v) != 0)
			return fail(r, "network evaluation failed");
		for (int a = 0; a < na; a++)
			sum[a] += pol[a] / (float)(to - from);
		vsum += v / (float)(to - from);
	}
	double white_win = game_to_move(&e->game) == GAME_WHITE ? winrate(vsum) : 1 - winrate(vsum);
	reply_add(r, "symmetry %s\nwhiteWin %.6f\nwhiteLoss %.6f\nnoResult 0\npolicy\n",
		  all ? "all" : c->argv[0], white_win, 1 - white_win);
	int w = game_width(&e->game), h = game_height(&e->game);
	/* One value per point, or per column (Connect Four's moves). */
	h = (game_num_actions(&e->game) - (game_pass_move(&e->game) != GAME_MOVE_NONE)) / w;
	for (int y = h - 1; y >= 0; y--) {
		for (int x = 0; x < w; x++) {
			int a = y * w + x;
			if (game_is_legal(&e->game, a))
				reply_add(r, "%s%.6f", x ? " " : "", sum[a]);
			else
				reply_add(r, "%sNAN", x ? " " : "");
		}
		reply_add(r, "\n");
	}
	int pass = game_pass_move(&e->game);
	if (pass != GAME_MOVE_NONE)
		reply_add(r, "policyPass %.6f", sum[pass]);
	else
		r->text[--r->len] = '\0'; /* no trailing newline */
	return true;
}

static bool cmd_clear_cache(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	eval_clear_cache(e->ev);
	mcts_clear(e->search);
	return true;
}

static bool cmd_stop(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	stop_pondering(e);
	return true;
}

/* ---- time ----------------------------------------------------------------- */

static bool parse_seconds(const char *s, double *out)
{
	double v;
	if (!parse_real_arg(s, &v) || v < 0 || v > 1e7)
		return false;
	*out = v;
	return true;
}

static bool cmd_time_settings(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	double main_t, byo;
	int stones;
	if (!need_args(c, 3, r))
		return false;
	if (!parse_seconds(c->argv[0], &main_t) || !parse_seconds(c->argv[1], &byo) ||
	    !parse_int_arg(c->argv[2], &stones) || stones < 0)
		return fail(r, "syntax error");
	timectl_set_canadian(&e->time, main_t, byo, stones);
	return true;
}

static bool cmd_kgs_time_settings(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	double main_t = 0, byo = 0;
	int n = 0;
	if (!need_args(c, 1, r))
		return false;
	const char *kind = c->argv[0];
	if (!strcmp(kind, "none")) {
		timectl_set_canadian(&e->time, 0, 1, 0);
	} else if (!strcmp(kind, "absolute")) {
		if (c->argc < 2 || !parse_seconds(c->argv[1], &main_t))
			return fail(r, "syntax error");
		timectl_set_absolute(&e->time, main_t);
	} else if (!strcmp(kind, "byoyomi")) {
		if (c->argc < 4 || !parse_seconds(c->argv[1], &main_t) ||
		    !parse_seconds(c->argv[2], &byo) || !parse_int_arg(c->argv[3], &n) || n < 0)
			return fail(r, "syntax error");
		timectl_set_japanese(&e->time, main_t, byo, n);
	} else if (!strcmp(kind, "canadian")) {
		if (c->argc < 4 || !parse_seconds(c->argv[1], &main_t) ||
		    !parse_seconds(c->argv[2], &byo) || !parse_int_arg(c->argv[3], &n) || n < 0)
			return fail(r, "syntax error");
		timectl_set_canadian(&e->time, main_t, byo, n);
	} else if (!strcmp(kind, "fischer")) {
		if (c->argc < 3 || !parse_seconds(c->argv[1], &main_t) ||
		    !parse_seconds(c->argv[2], &byo))
			return fail(r, "syntax error");
		timectl_set_fischer(&e->time, main_t, byo);
	} else {
		return fail(r, "syntax error (none, absolute, byoyomi, canadian or fischer)");
	}
	return true;
}

static bool cmd_time_left(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	int color, stones;
	double t;
	if (!need_args(c, 3, r))
		return false;
	if ((color = parse_color(c->argv[0])) < 0 || !parse_seconds(c->argv[1], &t) ||
	    !parse_int_arg(c->argv[2], &stones) || stones < 0)
		return fail(r, "syntax error");
	timectl_time_left(&e->time, color, t, stones);
	return true;
}

/* ---- scoring and records -------------------------------------------------- */

/* Dead stones by Monte Carlo: fast playouts from the position (no eye
 * filling, as go_playout plays them) to the end, area ownership counted at
 * each end; a stone whose point ends up the opponent's in most playouts is
 * dead. */
static void dead_stones(const gtp_engine *e, bool *dead)
{
	const go_board *b = &e->game.u.go;
	int n = b->size * b->size;
	int own[GO_MAX_SIZE * GO_MAX_SIZE][2];
	memset(own, 0, sizeof(own));
	static go_board scratch; /* 25 KB; GTP runs on one thread */
	uint64_t rng = 0x5eed5eedULL ^ go_hash(b);
	enum { PLAYOUTS = 200 };
	int8_t owner[GO_MAX_SIZE * GO_MAX_SIZE];
	for (int k = 0; k < PLAYOUTS; k++) {
		scratch = *b;
		scratch.passes = 0;
		go_playout(&scratch, &rng);
		go_area(&scratch, owner);
		for (int p = 0; p < n; p++)
			if (owner[p] >= 0)
				own[p][owner[p]]++;
	}
	for (int p = 0; p < n; p++) {
		int col = go_color_at(b, p % b->size, p / b->size);
		dead[p] = col >= 0 && own[p][1 - col] * 2 > PLAYOUTS;
	}
}

static bool cmd_final_status_list(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	if (!need_args(c, 1, r))
		return false;
	const char *what = c->argv[0];
	bool want_dead = !strcmp(what, "dead");
	if (!want_dead && strcmp(what, "alive") && strcmp(what, "seki"))
		return fail(r, "syntax error (dead, alive or seki)");
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
		reply_add(r, "%s%s", col == 0 ? (r->len ? "\n" : "") : " ",
			  game_move_to_text(&e->game, p, text));
		col = (col + 1) % 10;
	}
	return true;
}

static bool cmd_loadsgf(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	int upto = -1;
	char err[256];
	if (!need_args(c, 1, r))
		return false;
	if (c->argc >= 2 && (!parse_int_arg(c->argv[1], &upto) || upto < 1))
		return fail(r, "syntax error (move number)");
	sgf_record rec;
	sgf_record_init(&rec);
	bool ok = false;
	static go_board b; /* 25 KB, off the stack */
	if (sgf_load_file(c->argv[0], &rec, err, sizeof(err)) != 0) {
		reply_add(r, "cannot load file: %s", err);
		goto out;
	}
	if (e->net && rec.size != e->net->arch.board_w) {
		reply_add(r, "cannot load file: %dx%d, the network plays %dx%d", rec.size, rec.size,
			  e->net->arch.board_w, e->net->arch.board_w);
		goto out;
	}
	/* GTP: the position before move `upto` is played. */
	if (sgf_replay(&rec, &b, upto > 0 ? upto - 1 : -1, err, sizeof(err)) != 0) {
		reply_add(r, "cannot load file: %s", err);
		goto out;
	}
	e->game.params.size = rec.size;
	e->game.params.komi = b.komi;
	e->game.u.go = b;
	ok = true;
	reply_add(r, "%s", game_to_move(&e->game) == GAME_BLACK ? "black" : "white");
out:
	sgf_record_free(&rec);
	return ok;
}

static bool cmd_printsgf(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	sgf_record rec;
	if (sgf_record_from_go(&e->game.u.go, &rec) != 0)
		return fail(r, "cannot write this game as SGF");
	snprintf(rec.pb, sizeof(rec.pb), "%s", "");
	char *text = sgf_write(&rec);
	sgf_record_free(&rec);
	if (!text)
		return fail(r, "cannot write this game as SGF");
	bool ok = true;
	if (c->argc >= 1) {
		char tmp[4096];
		snprintf(tmp, sizeof(tmp), "%s.tmp", c->argv[0]);
		FILE *f = fopen(tmp, "w");
		if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, c->argv[0]) != 0) {
			ok = fail(r, "cannot write file");
			if (f)
				remove(tmp);
		}
	} else {
		reply_add(r, "%s", text);
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
	{ "lz-analyze", cmd_lz_analyze, false },
	{ "lz-genmove_analyze", cmd_lz_genmove_analyze, false },
	{ "kata-analyze", cmd_kata_analyze, false },
	{ "kata-genmove_analyze", cmd_kata_genmove_analyze, false },
	{ "analyze", cmd_lz_analyze, false },
	{ "genmove_analyze", cmd_lz_genmove_analyze, false },
	{ "kata-raw-nn", cmd_kata_raw_nn, false },
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
		nn_expect want = { .game = (int)gp.kind };
		char lerr[512];
		e->net = nn_net_load_any(opt->weights, &want, lerr, sizeof(lerr));
		if (!e->net) {
			snprintf(err, errlen, "%s", lerr);
			goto fail;
		}
		if (game_desc_from_params(&gp)->has_size)
			gp.size = e->net->arch.board_w; /* the network decides the board */
		e->enc = e->net->arch.encoding;
		if (nn_backend_set_open(&e->bes, e->net, opt->batch > 0 ? opt->batch : 1, &opt->nn,
					lerr, sizeof(lerr)) < 0) {
			snprintf(err, errlen, "backend: %s", lerr);
			goto fail;
		}
	}
	eval_options eo = eval_options_default();
	eo.max_batch = opt->batch > 0 ? opt->batch : 1;
	eo.cache_bytes = opt->cache_bytes;
	eo.seed = opt->search.seed;
	e->ev = eval_new(e->bes.be, e->bes.n, e->enc, &eo, err, errlen);
	if (!e->ev)
		goto fail;
	/* Each search thread gathers enough leaves that together they fill
	 * a batch: few threads, full batches. */
	if (e->opt.search.gather <= 1 && e->opt.batch > e->opt.search.threads)
		e->opt.search.gather = e->opt.batch / (e->opt.search.threads > 0 ? e->opt.search.threads : 1);
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
	stop_pondering(e);
	e->out = out;
	e->streamed = false;
	gtp_reply *r = &e->reply;
	r->len = 0;
	r->text[0] = '\0';
	bool ok;
	const gtp_entry *k = gtp_find(c->name);
	if (c->too_long || c->too_many_args)
		ok = fail(r, "line too long");
	else if (!k || (k->go_only && !is_go(e)))
		ok = fail(r, k && !strcmp(k->name, "boardsize") ? "unacceptable size" : "unknown command");
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
	stop_pondering(e);
	e->in = NULL;
	free(input);
	return 0;
}
