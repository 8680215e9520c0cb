/* engine.c: GTP v2 engine (see engine.h). */
#include "gtp/engine.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gtp/parse.h"

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
};

static void reply_add(gtp_reply *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reply_add(gtp_reply *r, const char *fmt, ...)
{
	va_list ap;
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
	bool go_only;        /* refused for Connect Four */
} gtp_entry;

static const gtp_entry *gtp_find(const char *name);
static const gtp_entry gtp_table[];

static bool is_go(const gtp_engine *e) { return e->game.params.kind == GAME_KIND_GO; }

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
	if (size < GO_MIN_SIZE || size > GO_MAX_SIZE || game_init(&e->game, &p) != GAME_OK)
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
	char *end;
	if (!need_args(c, 1, r))
		return false;
	if (!is_go(e))
		return true; /* accepted and ignored: Connect Four has no komi */
	double k = strtod(c->argv[0], &end);
	if (end == c->argv[0] || *end || !isfinite(k))
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
	{ NULL, NULL, false },
};

static const gtp_entry *gtp_find(const char *name)
{
	for (const gtp_entry *k = gtp_table; k->name; k++)
		if (!strcmp(k->name, name))
			return k;
	return NULL;
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
	if (game_init(&e->game, &opt->game) != GAME_OK) {
		snprintf(err, errlen, "bad game parameters (size %d, komi %g)",
			 opt->game.size, opt->game.komi);
		goto fail;
	}
	return e;
fail:
	gtp_engine_free(e);
	return NULL;
}

void gtp_engine_free(gtp_engine *e)
{
	if (!e)
		return;
	free(e->reply.text);
	free(e);
}

const game *gtp_engine_game(const gtp_engine *e) { return &e->game; }

bool gtp_engine_handle(gtp_engine *e, const char *line, size_t len, FILE *out)
{
	gtp_command *c = &e->cmd;
	if (!gtp_parse_line(line, len, c))
		return !e->quit;
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
	char id[16] = "";
	if (c->id >= 0)
		snprintf(id, sizeof(id), "%d", c->id);
	fprintf(out, "%c%s%s%s\n\n", ok ? '=' : '?', id, r->len ? " " : "", r->text);
	fflush(out);
	return !e->quit;
}

int gtp_engine_run(gtp_engine *e, FILE *in, FILE *out)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	while ((n = getline(&line, &cap, in)) >= 0)
		if (!gtp_engine_handle(e, line, (size_t)n, out))
			break;
	free(line);
	return 0;
}
