/* match.c: matches between models and GTP engines (see match.h). */
#include "match/match.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/clock.h"
#include "engine/game_desc.h"
#include "engine/rng.h"
#include "engine/sgf.h"
#include "gtp/client.h"
#include "nn/backend.h"
#include "nn/net.h"
#include "search/eval.h"
#include "search/mcts.h"

/* ---- players ----------------------------------------------------------------- */

typedef struct model_lookup {
	int64_t id;     /* wanted */
	bool found;     /* seen */
	int64_t step;   /* its train_step */
	char file[1024]; /* its file */
} model_lookup;

static int on_model(void *ctx, const store_model *m)
{
	model_lookup *l = ctx;
	if (m->id != l->id)
		return 0;
	l->found = true;
	l->step = m->train_step;
	snprintf(l->file, sizeof(l->file), "%s", m->file);
	return 1;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

int match_player_parse(const char *text, store *db, match_player *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	out->train_step = -1;
	if (!strncmp(text, "gtp:", 4)) {
		const char *cmd = text + 4;
		while (*cmd == ' ')
			cmd++;
		if (!*cmd || strlen(cmd) >= sizeof(out->command)) {
			snprintf(err, errlen, "'%s': give the engine's command line after gtp:", text);
			return -1;
		}
		out->kind = MATCH_PLAYER_GTP;
		snprintf(out->command, sizeof(out->command), "%s", cmd);
		snprintf(out->spec, sizeof(out->spec), "gtp:%s", cmd);
		/* The program's base name until the engine says its own. */
		char prog[128];
		snprintf(prog, sizeof(prog), "%s", cmd);
		prog[strcspn(prog, " \t")] = '\0';
		snprintf(out->name, sizeof(out->name), "%s", base_name(prog));
		return 0;
	}
	out->kind = MATCH_PLAYER_MODEL;
	const char *num = !strncmp(text, "model:", 6) ? text + 6 : text;
	struct stat st;
	bool all_digits = *num != '\0';
	for (const char *p = num; *p; p++)
		all_digits = all_digits && isdigit((unsigned char)*p);
	if (num == text && stat(text, &st) == 0) {
		if (strlen(text) >= sizeof(out->file)) {
			snprintf(err, errlen, "model path too long: %s", text);
			return -1;
		}
		/* Read now: a file that is no model is a usage error, and its
		 * learner step places it on a tournament's plot. */
		char e[256];
		nn_net *net = nn_net_load_any(text, NULL, e, sizeof(e));
		if (!net) {
			snprintf(err, errlen, "%s: %s", text, e);
			return -1;
		}
		out->train_step = (int64_t)net->meta.train_step;
		out->has_game = true;
		out->game = nn_arch_params(&net->arch);
		nn_net_free(net);
		snprintf(out->file, sizeof(out->file), "%s", text);
		snprintf(out->spec, sizeof(out->spec), "%s", text);
		snprintf(out->name, sizeof(out->name), "%s", base_name(text));
		return 0;
	}
	if (!all_digits) {
		snprintf(err, errlen, "'%s' is not a model file, a model id or gtp:COMMAND", text);
		return -1;
	}
	if (!db) {
		snprintf(err, errlen, "'%s' looks like a model id: give the run's database with --db", text);
		return -1;
	}
	model_lookup l = { .id = strtoll(num, NULL, 10) };
	if (store_list_models(db, on_model, &l) < 0) {
		snprintf(err, errlen, "%s", store_errmsg(db));
		return -1;
	}
	if (!l.found) {
		snprintf(err, errlen, "no model with id %lld in the database", (long long)l.id);
		return -1;
	}
	out->model_id = l.id;
	out->train_step = l.step;
	snprintf(out->file, sizeof(out->file), "%s", l.file);
	char e[256];
	nn_net *net = nn_net_load_any(l.file, NULL, e, sizeof(e));
	if (!net) {
		snprintf(err, errlen, "model %lld: %s: %s", (long long)l.id, l.file, e);
		return -1;
	}
	out->has_game = true;
	out->game = nn_arch_params(&net->arch);
	nn_net_free(net);
	snprintf(out->spec, sizeof(out->spec), "model:%lld", (long long)l.id);
	snprintf(out->name, sizeof(out->name), "model %lld", (long long)l.id);
	return 0;
}

match_options match_options_default(const game_params *g)
{
	match_options o;
	memset(&o, 0, sizeof(o));
	o.game = *g;
	o.games = 100;
	o.parallel = 2;
	o.visits = 100;
	game_numbers n = game_numbers_of(g);
	o.opening_moves = n.opening_moves;
	o.sprt_params = elo_sprt_default();
	o.resign_pct = 5;
	o.move_timeout = 120;
	o.max_moves = n.max_moves;
	o.batch = 32;
	o.seed = 1;
	return o;
}

void match_settings_text(const match_player *a, const match_player *b, const match_options *o,
			 char *buf, size_t len)
{
	char limit[64];
	if (o->move_seconds > 0)
		snprintf(limit, sizeof(limit), "time=%g", o->move_seconds);
	else
		snprintf(limit, sizeof(limit), "visits=%d/%d", a->visits ? a->visits : o->visits,
			 b->visits ? b->visits : o->visits);
	char open[1100];
	if (o->book[0])
		snprintf(open, sizeof(open), "book:%s", o->book);
	else
		snprintf(open, sizeof(open), "random:%d", o->opening_moves);
	/* Only what the game has: a game without passes ends within its
	 * board's cells, so its move limit never binds and is left out. */
	const game_desc *d = game_desc_from_params(&o->game);
	char size[32] = "", komi[48] = "", maxm[32] = "";
	if (d->has_size)
		snprintf(size, sizeof(size), " size=%d", o->game.size);
	if (d->has_komi)
		snprintf(komi, sizeof(komi), " komi=%g", o->game.komi);
	if (d->has_pass)
		snprintf(maxm, sizeof(maxm), " maxmoves=%d", o->max_moves);
	snprintf(buf, len, "%s%s%s %s openings=%s resign=%g%s seed=%llu", d->name, size, komi, limit,
		 open, (double)o->resign_pct, maxm, (unsigned long long)o->seed);
}

/* ---- openings ------------------------------------------------------------------- */

typedef struct opening_book {
	int n;          /* lines */
	int *len;       /* [n] moves per line */
	int **moves;    /* [n][len] actions */
} opening_book;

static void book_free(opening_book *b)
{
	for (int i = 0; i < b->n; i++)
		free(b->moves[i]);
	free(b->moves);
	free(b->len);
	memset(b, 0, sizeof(*b));
}

/* Reads a book: one opening per line, moves as GTP vertices (Go) or
 * columns (Connect Four) separated by spaces; '#' starts a comment. Every
 * line must replay legally from the empty board. */
static int book_load(const char *path, const game_params *gp, opening_book *b, char *err,
		     size_t errlen)
{
	memset(b, 0, sizeof(*b));
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "cannot read the opening book %s: %s", path, strerror(errno));
		return -1;
	}
	static _Thread_local game g;
	char line[8192];
	int lineno = 0, rc = -1;
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		line[strcspn(line, "#\r\n")] = '\0';
		int moves[GAME_MAX_ACTIONS * 3], n = 0;
		game_init(&g, gp);
		for (char *tok = strtok(line, " \t,;"); tok; tok = strtok(NULL, " \t,;")) {
			int mv;
			if (n >= (int)(sizeof(moves) / sizeof(moves[0])) ||
			    game_move_from_text(&g, tok, &mv) != GAME_OK || game_play(&g, mv) != GAME_OK) {
				snprintf(err, errlen, "%s:%d: '%s' is not a legal move there", path, lineno, tok);
				goto out;
			}
			moves[n++] = mv;
		}
		if (n == 0)
			continue;
		int *copy = malloc(sizeof(int) * (size_t)n);
		int **pm = realloc(b->moves, sizeof(int *) * (size_t)(b->n + 1));
		int *pl = pm ? realloc(b->len, sizeof(int) * (size_t)(b->n + 1)) : NULL;
		if (pm)
			b->moves = pm;
		if (pl)
			b->len = pl;
		if (!copy || !pm || !pl) {
			free(copy);
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		memcpy(copy, moves, sizeof(int) * (size_t)n);
		b->moves[b->n] = copy;
		b->len[b->n] = n;
		b->n++;
	}
	if (b->n == 0) {
		snprintf(err, errlen, "the opening book %s has no openings", path);
		goto out;
	}
	rc = 0;
out:
	fclose(f);
	if (rc)
		book_free(b);
	return rc;
}

/* Plays opening `k` onto g (fresh): a book line, or `n` random moves from a
 * generator seeded by (seed, k). Random moves never pass, and on a Go
 * board of 7x7 or more keep off the first line. */
static void play_opening(game *g, const opening_book *book, int n, uint64_t seed, int k)
{
	if (book->n > 0) {
		int i = k % book->n;
		for (int m = 0; m < book->len[i]; m++)
			game_play(g, book->moves[i][m]);
		return;
	}
	uint64_t rng = rng_mix(seed * 0x9e3779b97f4a7c15ULL + (uint64_t)k);
	int legal[GAME_MAX_ACTIONS], pick[GAME_MAX_ACTIONS];
	bool go = game_desc_of(g)->has_go_board;
	int size = go ? g->params.size : 0;
	for (int m = 0; m < n && !game_is_over(g); m++) {
		int cnt = game_legal_moves(g, legal), np = 0;
		for (int i = 0; i < cnt; i++) {
			int mv = legal[i];
			if (mv == game_pass_move(g))
				continue;
			if (go) {
				int x = mv % size, y = mv / size;
				if (size >= 7 && (x == 0 || y == 0 || x == size - 1 || y == size - 1))
					continue;
			}
			pick[np++] = mv;
		}
		if (np == 0)
			break;
		game_play(g, pick[rng_next(&rng) % (uint64_t)np]);
	}
}

/* ---- the match ------------------------------------------------------------------ */

/* What both sides of the match share. */
typedef struct match_ctx {
	const match_player *pl[2];   /* A, B */
	const match_options *o;
	store *db;
	int64_t match_id;
	evaluator *ev[2];            /* models: one evaluator each (the same when one file) */
	nn_backend *be[2];
	nn_net *net[2];
	opening_book book;
	unsigned char *done;         /* [games]: stored already or finished */
	int next;                    /* next game number to consider */
	bool decided;                /* SPRT decided, or a fatal error: start no more games */
	bool failed;                 /* a fatal error; message in err */
	char err[512];
	match_summary sum;
	match_progress_fn fn;
	void *fn_ctx;
	pthread_mutex_t mu;
	double t0;
} match_ctx;

/* One side of a game thread. */
typedef struct side {
	mcts *m;            /* model: its search */
	gtp_client *c;      /* GTP: its engine process, NULL until started */
	int failures;       /* consecutive start/setup failures */
} side;

static void fail(match_ctx *c, const char *fmt, const char *a, const char *b)
{
	pthread_mutex_lock(&c->mu);
	if (!c->failed) {
		snprintf(c->err, sizeof(c->err), fmt, a, b);
		c->failed = true;
		c->decided = true;
	}
	pthread_mutex_unlock(&c->mu);
}

static const char *color_name(int player) { return player == GAME_BLACK ? "b" : "w"; }

/* Starts (or restarts) the engine of a GTP side and sets up a new game up
 * to the opening position g. 0; 1 when the engine failed (the caller
 * forfeits the game for it); -1 fatal (message set in c). */
static int gtp_setup(match_ctx *c, const match_player *p, side *s, const game *g, char *why,
		     size_t whylen)
{
	char ans[1024], cmd[256], err[256];
	const match_options *o = c->o;
	if (s->c && !gtp_client_usable(s->c)) {
		gtp_client_free(s->c);
		s->c = NULL;
		pthread_mutex_lock(&c->mu);
		c->sum.restarts++;
		pthread_mutex_unlock(&c->mu);
	}
	if (!s->c) {
		s->c = gtp_client_start(p->command, NULL, err, sizeof(err));
		if (!s->c) {
			fail(c, "cannot start %.200s: %.200s", p->command, err);
			return -1;
		}
	}
	gtp_client_status st;
	const game_desc *d = game_desc_of(g);
	if (d->has_size) {
		snprintf(cmd, sizeof(cmd), "boardsize %d", g->params.size);
		st = gtp_client_send(s->c, cmd, 60, ans, sizeof(ans));
		if (st == GTP_CLIENT_FAIL) {
			snprintf(cmd, sizeof(cmd), "%.100s refused boardsize %d (%.100s)", p->name,
				 g->params.size, ans);
			fail(c, "%s%s", cmd, "");
			return -1;
		}
		if (st != GTP_CLIENT_OK)
			goto broken;
	}
	if ((st = gtp_client_send(s->c, "clear_board", 60, ans, sizeof(ans))) != GTP_CLIENT_OK)
		goto broken;
	if (d->has_komi) {
		snprintf(cmd, sizeof(cmd), "komi %g", g->params.komi);
		if ((st = gtp_client_send(s->c, cmd, 60, ans, sizeof(ans))) != GTP_CLIENT_OK)
			goto broken;
	}
	if (o->move_seconds > 0) {
		snprintf(cmd, sizeof(cmd), "time_settings 0 %d 1", (int)ceil(o->move_seconds));
		if ((st = gtp_client_send(s->c, cmd, 60, ans, sizeof(ans))) != GTP_CLIENT_OK)
			goto broken;
	}
	for (int i = 0; i < game_move_count(g); i++) {
		static _Thread_local game tmp;
		char mv[16];
		/* The mover of move i: replay to find it (handles passes). */
		if (i == 0)
			game_init(&tmp, &g->params);
		int who = game_to_move(&tmp);
		int m = game_history_move(g, i);
		snprintf(cmd, sizeof(cmd), "play %s %s", color_name(who), game_move_to_text(&tmp, m, mv));
		game_play(&tmp, m);
		if ((st = gtp_client_send(s->c, cmd, 60, ans, sizeof(ans))) != GTP_CLIENT_OK)
			goto broken;
	}
	s->failures = 0;
	return 0;
broken:
	snprintf(why, whylen, "%s during setup: %.60s%s%.100s", gtp_client_status_name(st), cmd,
		 ans[0] ? " -> " : "", ans);
	if (st == GTP_CLIENT_FAIL)
		snprintf(why, whylen, "refused '%s' during setup (%.200s)", cmd, ans);
	/* The process state is unknown after a refusal in setup: restart it. */
	gtp_client_free(s->c);
	s->c = NULL;
	if (++s->failures >= 3) {
		fail(c, "%.150s keeps failing: %.300s", p->command, why);
		return -1;
	}
	return 1;
}

typedef struct game_outcome {
	int result;        /* +1 Black won, -1 White, 0 draw */
	double score;      /* Black's score */
	char reason[256];  /* how it ended */
	char re[32];       /* SGF RE */
	bool fault;        /* an engine fault decided it */
	bool protocol;     /* an engine's answer was not GTP, a move or a score */
} game_outcome;

/* The engine of side `who` (player index) lost by a fault. */
static void forfeit(game_outcome *out, int who, const char *name, const char *what, bool protocol)
{
	out->result = who == GAME_BLACK ? -1 : 1;
	out->score = 0;
	out->fault = true;
	out->protocol = protocol;
	snprintf(out->reason, sizeof(out->reason), "forfeit: %.150s by %.80s", what, name);
	snprintf(out->re, sizeof(out->re), "%s+F", who == GAME_BLACK ? "W" : "B");
}

/* Plays game `no`. 0 with *out filled; -1 on a fatal error (set in c). */
static int play_game(match_ctx *c, side sides[2], int no, game *g, game_outcome *out)
{
	const match_options *o = c->o;
	memset(out, 0, sizeof(*out));
	int a_color = no % 2 == 0 ? GAME_BLACK : GAME_WHITE;
	/* Player index -> match side (0 = A). */
	int side_of[2] = { a_color == GAME_BLACK ? 0 : 1, a_color == GAME_BLACK ? 1 : 0 };
	game_init(g, &o->game);
	play_opening(g, &c->book, o->opening_moves, o->seed, no / 2);
	for (int p = 0; p < 2; p++) {
		int sd = side_of[p];
		const match_player *pl = c->pl[sd];
		if (pl->kind == MATCH_PLAYER_MODEL) {
			mcts_clear(sides[sd].m);
			continue;
		}
		char why[512];
		int r = gtp_setup(c, pl, &sides[sd], g, why, sizeof(why));
		if (r < 0)
			return -1;
		if (r > 0) {
			forfeit(out, p, pl->name, why, false);
			return 0;
		}
	}
	char cmd[64], ans[1024], mvtext[16];
	int resigned = -1;
	while (!game_is_over(g) && game_move_count(g) < o->max_moves) {
		if (o->stop && *o->stop) {
			snprintf(out->reason, sizeof(out->reason), "stopped");
			return 1;
		}
		int who = game_to_move(g), sd = side_of[who];
		const match_player *pl = c->pl[sd];
		int mv = GAME_MOVE_NONE;
		if (pl->kind == MATCH_PLAYER_MODEL) {
			mcts *m = sides[sd].m;
			mcts_set_position(m, g);
			mcts_search(m);
			float v = mcts_root_value(m);
			if (o->resign_pct > 0 && game_move_count(g) >= 10 &&
			    v < 2.0f * o->resign_pct / 100.0f - 1.0f) {
				resigned = who;
				break;
			}
			mv = mcts_choose_move(m, 0, true);
			if (mv == GAME_MOVE_NONE || !game_is_legal(g, mv)) {
				fail(c, "%s: the search chose no legal move%s", pl->name, "");
				return -1;
			}
		} else {
			gtp_client *cl = sides[sd].c;
			snprintf(cmd, sizeof(cmd), "genmove %s", color_name(who));
			gtp_client_status st = gtp_client_send(cl, cmd, o->move_timeout, ans, sizeof(ans));
			if (st != GTP_CLIENT_OK) {
				char what[300];
				if (st == GTP_CLIENT_FAIL)
					snprintf(what, sizeof(what), "genmove refused (%.200s)", ans);
				else if (st == GTP_CLIENT_TIMEOUT)
					snprintf(what, sizeof(what), "no move in %g s (hung)", o->move_timeout);
				else
					snprintf(what, sizeof(what), "%s", gtp_client_status_name(st));
				forfeit(out, who, pl->name, what, st == GTP_CLIENT_PROTOCOL);
				goto finish;
			}
			bool resign;
			if (!gtp_client_parse_move(g, ans, &mv, &resign)) {
				char what[300];
				snprintf(what, sizeof(what), "not a move: '%.200s'", ans);
				forfeit(out, who, pl->name, what, true);
				goto finish;
			}
			if (resign) {
				resigned = who;
				break;
			}
			if (!game_is_legal(g, mv)) {
				char what[300];
				snprintf(what, sizeof(what), "illegal move %.200s", ans);
				forfeit(out, who, pl->name, what, false);
				goto finish;
			}
		}
		game_move_to_text(g, mv, mvtext);
		game_play(g, mv);
		/* The other side hears of it. */
		int od = side_of[1 - who];
		if (c->pl[od]->kind == MATCH_PLAYER_GTP) {
			snprintf(cmd, sizeof(cmd), "play %s %s", color_name(who), mvtext);
			gtp_client_status st = gtp_client_send(sides[od].c, cmd, 60, ans, sizeof(ans));
			if (st != GTP_CLIENT_OK) {
				char what[300];
				if (st == GTP_CLIENT_FAIL)
					snprintf(what, sizeof(what), "legal move refused: %s (%.200s)", cmd, ans);
				else
					snprintf(what, sizeof(what), "%s after %s", gtp_client_status_name(st), cmd);
				forfeit(out, 1 - who, c->pl[od]->name, what, st == GTP_CLIENT_PROTOCOL);
				if (st == GTP_CLIENT_FAIL) {
					/* Its board now differs from ours: restart it. */
					gtp_client_free(sides[od].c);
					sides[od].c = NULL;
				}
				goto finish;
			}
		}
	}
	if (resigned >= 0) {
		game_resign(g, resigned);
		out->result = resigned == GAME_BLACK ? -1 : 1;
		out->score = 0;
		snprintf(out->reason, sizeof(out->reason), "%s resigned", c->pl[side_of[resigned]]->name);
		snprintf(out->re, sizeof(out->re), "%s+R", resigned == GAME_BLACK ? "W" : "B");
		goto finish;
	}
	/* Scored: by an external engine's final_score when there is one (it
	 * removes dead stones, as a referee does), else Tromp-Taylor area. */
	out->result = game_result(g);
	out->score = game_score(g);
	/* Go's end is an area count; another game's end is its own. */
	bool area = game_desc_of(g)->has_komi;
	snprintf(out->reason, sizeof(out->reason), "%s",
		 game_is_over(g) ? (area ? "area score" : "game end")
				 : (area ? "move limit, area score" : "move limit"));
	if (game_desc_from_params(&o->game)->has_komi) {
		for (int sd = 0; sd < 2; sd++) {
			if (c->pl[sd]->kind != MATCH_PLAYER_GTP || !gtp_client_usable(sides[sd].c))
				continue;
			int r;
			double sc;
			if (gtp_client_send(sides[sd].c, "final_score", 60, ans, sizeof(ans)) != GTP_CLIENT_OK)
				break; /* refused or failed: the area score stands */
			if (gtp_client_parse_score(ans, &r, &sc)) {
				out->result = r;
				out->score = sc;
				snprintf(out->reason, sizeof(out->reason), "%sfinal_score of %s",
					 game_is_over(g) ? "" : "move limit, ", c->pl[sd]->name);
			} else {
				/* "B+nan", "W+inf", text: the engine's protocol error,
				 * and the area score stands. */
				out->protocol = true;
				snprintf(out->reason, sizeof(out->reason),
					 "%sarea score (final_score of %.80s was '%.60s', not a score)",
					 game_is_over(g) ? "" : "move limit, ", c->pl[sd]->name, ans);
			}
			break;
		}
		if (out->result == 0)
			snprintf(out->re, sizeof(out->re), "0");
		else
			snprintf(out->re, sizeof(out->re), "%s+%g", out->result > 0 ? "B" : "W", fabs(out->score));
	} else {
		snprintf(out->re, sizeof(out->re), "%s", out->result > 0 ? "B+" : out->result < 0 ? "W+" : "0");
	}
finish:
	return 0;
}

/* The SGF of a finished game on a Go board, malloc'd; else NULL. */
static char *game_sgf(const match_ctx *c, const game *g, int no, const game_outcome *out)
{
	if (!game_desc_of(g)->has_go_board)
		return NULL;
	sgf_record rec;
	if (sgf_record_from_go(&g->u.go, &rec) != 0)
		return NULL;
	int a_black = no % 2 == 0;
	snprintf(rec.pb, sizeof(rec.pb), "%.63s", c->pl[a_black ? 0 : 1]->name);
	snprintf(rec.pw, sizeof(rec.pw), "%.63s", c->pl[a_black ? 1 : 0]->name);
	snprintf(rec.re, sizeof(rec.re), "%s", out->re);
	snprintf(rec.rules, sizeof(rec.rules), "Chinese");
	char note[512];
	snprintf(note, sizeof(note), "sente match %lld, game %d: %s", (long long)c->match_id, no, out->reason);
	rec.comment = strdup(note);
	char *text = sgf_write(&rec);
	sgf_record_free(&rec);
	return text;
}

static void tally(match_summary *s, const store_match_game *g)
{
	int for_a = g->a_black ? g->result : -g->result;
	s->games++;
	s->wins += for_a > 0;
	s->losses += for_a < 0;
	s->draws += for_a == 0;
	s->black_wins += g->result > 0;
	s->a_black_wins += g->a_black && g->result > 0;
	if (!strncmp(g->reason, "forfeit:", 8))
		s->engine_faults++;
}

static void summarise(match_summary *s, const match_options *o)
{
	s->elo = elo_estimate_wld(s->wins, s->losses, s->draws);
	elo_sprt t = o ? o->sprt_params : elo_sprt_default();
	s->sprt = elo_sprt_test(&t, s->wins, s->losses, s->draws);
}

typedef struct load_ctx {
	match_summary *s;
	unsigned char *done;  /* may be NULL */
	int n;                /* entries in done */
} load_ctx;

static int on_stored(void *ctx, const store_match_game *g)
{
	load_ctx *l = ctx;
	tally(l->s, g);
	if (l->done && g->game_no >= 0 && g->game_no < l->n)
		l->done[g->game_no] = 1;
	return 0;
}

int match_load_summary(store *db, int64_t match_id, match_summary *out)
{
	memset(out, 0, sizeof(*out));
	out->match_id = match_id;
	load_ctx l = { .s = out };
	if (store_match_games(db, match_id, on_stored, &l) < 0)
		return -1;
	summarise(out, NULL);
	return 0;
}

/* Takes the next game to play, or -1 when none is left. */
static int next_game(match_ctx *c)
{
	int no = -1;
	pthread_mutex_lock(&c->mu);
	while (!c->decided && !(c->o->stop && *c->o->stop) && c->next < c->o->games) {
		int k = c->next++;
		if (!c->done[k]) {
			c->done[k] = 1;
			no = k;
			break;
		}
	}
	pthread_mutex_unlock(&c->mu);
	return no;
}

static void finish_game(match_ctx *c, const game *g, int no, const game_outcome *out)
{
	char *sgf = game_sgf(c, g, no, out);
	int a_black = no % 2 == 0;
	store_match_game row = {
		.match_id = c->match_id,
		.game_no = no,
		.black = c->pl[a_black ? 0 : 1]->spec,
		.white = c->pl[a_black ? 1 : 0]->spec,
		.a_black = a_black,
		.result = out->result,
		.score = out->score,
		.moves = game_move_count(g),
		.reason = out->reason,
		.sgf = sgf,
	};
	pthread_mutex_lock(&c->mu);
	if (store_add_match_game(c->db, &row) != 0) {
		if (!c->failed)
			snprintf(c->err, sizeof(c->err), "storing game %d: %s", no, store_errmsg(c->db));
		c->failed = c->decided = true;
	} else {
		tally(&c->sum, &row);
		c->sum.protocol_errors += out->protocol;
		summarise(&c->sum, c->o);
		c->sum.seconds = clock_now() - c->t0;
		if (c->o->sprt && c->sum.sprt.state != ELO_SPRT_CONTINUE)
			c->decided = true;
		if (c->o->sgf_dir[0] && sgf) {
			char path[2048];
			snprintf(path, sizeof(path), "%s/match%lld-game%03d.sgf", c->o->sgf_dir,
				 (long long)c->match_id, no);
			FILE *f = fopen(path, "w");
			if (f) {
				fputs(sgf, f);
				fclose(f);
			}
		}
		if (c->fn)
			c->fn(c->fn_ctx, &c->sum, &row);
		const match_summary *s = &c->sum;
		char sprt[96] = "";
		if (c->o->sprt)
			snprintf(sprt, sizeof(sprt), "  LLR %.2f [%.2f, %.2f]", s->sprt.llr,
				 s->sprt.lower, s->sprt.upper);
		progress_update(c->o->progress, s->games - s->resumed, false,
				"%d games  A %d-%d-%d  %.1f%%  Elo %+.0f [%+.0f, %+.0f]%s", s->games,
				s->wins, s->losses, s->draws, 100 * s->elo.score, s->elo.elo,
				s->elo.lo, s->elo.hi, sprt);
	}
	pthread_mutex_unlock(&c->mu);
	free(sgf);
}

static void *worker(void *arg)
{
	match_ctx *c = arg;
	side sides[2] = { { 0 }, { 0 } };
	char err[256];
	game *g = malloc(sizeof(*g));
	if (!g) {
		fail(c, "out of memory%s%s", "", "");
		return NULL;
	}
	for (int sd = 0; sd < 2; sd++) {
		if (c->pl[sd]->kind != MATCH_PLAYER_MODEL)
			continue;
		mcts_options mo = mcts_options_default();
		mo.threads = 1;
		mo.gather = 8;
		mo.max_memory = (size_t)64 << 20;
		int v = c->pl[sd]->visits ? c->pl[sd]->visits : c->o->visits;
		mo.max_visits = c->o->move_seconds > 0 ? 0 : v;
		mo.max_seconds = c->o->move_seconds;
		mo.seed = rng_mix(c->o->seed + (uint64_t)sd * 7919 + (uint64_t)(uintptr_t)&sides[sd]);
		sides[sd].m = mcts_new(c->ev[sd], &mo, err, sizeof(err));
		if (!sides[sd].m) {
			fail(c, "search: %s%s", err, "");
			goto out;
		}
	}
	for (int no; (no = next_game(c)) >= 0;) {
		game_outcome res;
		int r = play_game(c, sides, no, g, &res);
		if (r < 0)
			break;
		if (r > 0) {
			/* Stopped mid-game: it will be played again on resume. */
			pthread_mutex_lock(&c->mu);
			c->done[no] = 0;
			pthread_mutex_unlock(&c->mu);
			break;
		}
		finish_game(c, g, no, &res);
		/* An engine whose fault ended the game is restarted next game. */
		for (int sd = 0; sd < 2; sd++)
			if (res.fault && sides[sd].c && !gtp_client_usable(sides[sd].c)) {
				gtp_client_free(sides[sd].c);
				sides[sd].c = NULL;
				pthread_mutex_lock(&c->mu);
				c->sum.restarts++;
				pthread_mutex_unlock(&c->mu);
			}
	}
out:
	for (int sd = 0; sd < 2; sd++) {
		mcts_free(sides[sd].m);
		gtp_client_free(sides[sd].c);
	}
	free(g);
	return NULL;
}

/* Loads a model player's network and makes its evaluator. */
static int load_model(match_ctx *c, int sd, char *err, size_t errlen)
{
	const match_player *p = c->pl[sd];
	const match_options *o = c->o;
	nn_expect want = { .game = (int)o->game.kind };
	if (game_desc_from_params(&o->game)->has_size) {
		game_numbers n = game_numbers_of(&o->game);
		want.board_w = n.width;
		want.board_h = n.height;
	}
	char e[512];
	c->net[sd] = nn_net_load_any(p->file, &want, e, sizeof(e));
	if (!c->net[sd]) {
		snprintf(err, errlen, "%s: %s", p->file, e);
		return -1;
	}
	nn_net_fold_bn(c->net[sd]);
	nn_backend_options bo = nn_backend_options_default();
	bo.threads = o->nn_threads;
	c->be[sd] = nn_backend_new(&nn_backend_cpu, c->net[sd], o->batch, &bo, e, sizeof(e));
	if (!c->be[sd]) {
		snprintf(err, errlen, "%s: %s", p->file, e);
		return -1;
	}
	eval_options eo = eval_options_default();
	eo.max_batch = o->batch;
	eo.seed = o->seed + (uint64_t)sd;
	c->ev[sd] = eval_new(&c->be[sd], 1, c->net[sd]->arch.encoding, &eo, e, sizeof(e));
	if (!c->ev[sd]) {
		snprintf(err, errlen, "%s", e);
		return -1;
	}
	return 0;
}

/* Starts an engine once before the match: checks that it speaks GTP and
 * takes the board size, and learns its name. */
static int probe_engine(match_player *p, const game_params *gp, char *err, size_t errlen)
{
	char e[256], ans[1024], name[128] = "", ver[64] = "";
	gtp_client *cl = gtp_client_start(p->command, NULL, e, sizeof(e));
	if (!cl) {
		snprintf(err, errlen, "cannot start %s: %s", p->command, e);
		return -1;
	}
	int rc = -1;
	gtp_client_status st = gtp_client_send(cl, "name", 60, ans, sizeof(ans));
	if (st != GTP_CLIENT_OK) {
		snprintf(err, errlen, "%s does not answer GTP 'name' (%s): is it started in GTP mode?",
			 p->command, gtp_client_status_name(st));
		goto out;
	}
	snprintf(name, sizeof(name), "%.127s", ans);
	if (gtp_client_send(cl, "version", 60, ans, sizeof(ans)) == GTP_CLIENT_OK)
		snprintf(ver, sizeof(ver), "%.63s", ans);
	if (game_desc_from_params(gp)->has_size) {
		char cmd[64];
		snprintf(cmd, sizeof(cmd), "boardsize %d", gp->size);
		st = gtp_client_send(cl, cmd, 60, ans, sizeof(ans));
		if (st != GTP_CLIENT_OK) {
			snprintf(err, errlen, "%s does not play %dx%d (boardsize: %s%s%s)", p->command, gp->size,
				 gp->size, gtp_client_status_name(st), ans[0] ? ", " : "", ans);
			goto out;
		}
	}
	if (name[0])
		snprintf(p->name, sizeof(p->name), "%.90s%s%.30s", name, ver[0] ? " " : "", ver);
	rc = 0;
out:
	gtp_client_free(cl);
	return rc;
}

int match_run(store *db, const match_player *a_in, const match_player *b_in, const match_options *o,
	      match_progress_fn fn, void *ctx, match_summary *out, char *err, size_t errlen)
{
	match_player pl[2] = { *a_in, *b_in };
	match_ctx c;
	memset(&c, 0, sizeof(c));
	memset(out, 0, sizeof(*out));
	c.pl[0] = &pl[0];
	c.pl[1] = &pl[1];
	c.o = o;
	c.db = db;
	c.fn = fn;
	c.fn_ctx = ctx;
	c.t0 = clock_now();
	pthread_mutex_init(&c.mu, NULL);
	int rc = -1, n_threads = 0;
	pthread_t th[256];
	if (o->games < 1 || o->parallel < 1 || o->parallel > 256) {
		snprintf(err, errlen, "games must be >= 1 and parallel 1..256");
		goto out;
	}
	if (o->book[0] && book_load(o->book, &o->game, &c.book, err, errlen) != 0)
		goto out;
	for (int sd = 0; sd < 2; sd++) {
		if (pl[sd].kind == MATCH_PLAYER_GTP) {
			if (probe_engine(&pl[sd], &o->game, err, errlen) != 0)
				goto out;
		} else if (sd == 1 && pl[0].kind == MATCH_PLAYER_MODEL && !strcmp(pl[0].file, pl[1].file)) {
			c.ev[1] = c.ev[0]; /* one network: one evaluator */
		} else if (load_model(&c, sd, err, errlen) != 0) {
			goto out;
		}
	}
	if (!strcmp(pl[0].name, pl[1].name)) {
		snprintf(pl[0].name + strlen(pl[0].name), sizeof(pl[0].name) - strlen(pl[0].name), " (A)");
		snprintf(pl[1].name + strlen(pl[1].name), sizeof(pl[1].name) - strlen(pl[1].name), " (B)");
	}
	char settings[2048];
	match_settings_text(&pl[0], &pl[1], o, settings, sizeof(settings));
	int found = o->fresh ? 0 : store_find_match(db, pl[0].spec, pl[1].spec, settings, &c.match_id);
	if (found < 0 || (found == 0 && store_add_match(db, pl[0].spec, pl[1].spec, settings, &c.match_id))) {
		snprintf(err, errlen, "%s", store_errmsg(db));
		goto out;
	}
	c.done = calloc((size_t)o->games, 1);
	if (!c.done) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	c.sum.match_id = c.match_id;
	load_ctx l = { .s = &c.sum, .done = c.done, .n = o->games };
	if (found && store_match_games(db, c.match_id, on_stored, &l) < 0) {
		snprintf(err, errlen, "%s", store_errmsg(db));
		goto out;
	}
	c.sum.resumed = c.sum.games;
	summarise(&c.sum, o);
	if (o->progress)
		o->progress->count = o->games - c.sum.resumed;
	if (o->sprt && c.sum.sprt.state != ELO_SPRT_CONTINUE)
		c.decided = true;
	snprintf(c.sum.status, sizeof(c.sum.status), "running");
	store_set_match_status(db, c.match_id, "running");
	int want = o->parallel < o->games ? o->parallel : o->games;
	for (int i = 0; i < want; i++) {
		if (pthread_create(&th[i], NULL, worker, &c) != 0)
			break;
		n_threads++;
	}
	if (n_threads == 0) {
		snprintf(err, errlen, "cannot start game threads");
		goto out;
	}
	for (int i = 0; i < n_threads; i++)
		pthread_join(th[i], NULL);
	if (c.failed) {
		snprintf(err, errlen, "%s", c.err);
		goto out;
	}
	bool all = true;
	for (int i = 0; i < o->games; i++)
		all = all && c.done[i];
	const char *status = o->sprt && c.sum.sprt.state == ELO_SPRT_H1   ? "sprt-h1"
			     : o->sprt && c.sum.sprt.state == ELO_SPRT_H0 ? "sprt-h0"
			     : all ? "done" : "stopped";
	snprintf(c.sum.status, sizeof(c.sum.status), "%s", status);
	store_set_match_status(db, c.match_id, strcmp(status, "stopped") ? status : "running");
	rc = 0;
out:
	c.sum.seconds = clock_now() - c.t0;
	*out = c.sum;
	out->match_id = c.match_id;
	if (c.ev[1] == c.ev[0])
		c.ev[1] = NULL;
	for (int sd = 0; sd < 2; sd++) {
		eval_free(c.ev[sd]);
		nn_backend_free(c.be[sd]);
		nn_net_free(c.net[sd]);
	}
	book_free(&c.book);
	free(c.done);
	pthread_mutex_destroy(&c.mu);
	return rc;
}
